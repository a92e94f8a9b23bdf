// Bodies that are not a JSON object -> 400 invalid_input with errors[] (after
// authentication), and input that is valid JSON but odd is a 4xx, never a 500.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectInvalid, show } from "../shared/helpers.js";

describe("invalid JSON -> 400 envelope with errors[]", () => {
  const h = useHarness();

  it.each([
    ["truncated JSON", '{"name": '],
    ["a trailing comma", '{"name": "abc",}'],
    ["single quotes", "{'name': 'abc'}"],
    ["plain text", "name=abc"],
    ["an empty body", ""],
    ["only whitespace", "  \n "],
    ["a JSON string", '"abc"'],
    ["a JSON number", "42"],
    ["JSON null", "null"],
    ["a JSON array", '[{"name":"abc"}]'],
    ["a __proto__ key", '{"name":"abc","__proto__":{"admin":true}}'],
  ])("%s -> 400 err:svc:application:invalid_input naming the body", async (_label, payload) => {
    const res = await h.post("/v2/apis.createApi", payload, await admin(h));
    expectInvalid(h, res, "body");
    expect(res.body.error.errors.length).toBeGreaterThan(0);
  });

  it("the first problem is summarised in detail", async () => {
    const res = await h.post("/v2/apis.createApi", { name: "ab" }, await admin(h));
    expectInvalid(h, res, "name");
    expect(res.body.error.detail).toContain("name");
  });

  // Valid JSON a client might send by mistake is the client's error (400), not the server's (500).
  it("a string with an unpaired UTF-16 surrogate -> 400 naming the field, not 500", async () => {
    const apiId = await createApi(h);
    const res = await h.post("/v2/keys.createKey", `{"apiId":"${apiId}","name":"a\\ud800b"}`, await admin(h));
    expectInvalid(h, res, "name");
  });

  it.each([
    ["a lone low surrogate in a string field", '"name":"a\\udc00b"', "name"],
    ["a pair in the wrong order", '"name":"\\udc00\\ud800"', "name"],
    ["a high surrogate at the end", '"name":"ab\\ud83d"', "name"],
    ["a lone surrogate in a meta value", '"meta":{"a":["x","\\ud800"]}', "meta"],
    ["a lone surrogate in a meta key", '"meta":{"\\udfff":1}', "meta"],
  ])("%s -> 400 naming the field", async (_, field, named) => {
    const apiId = await createApi(h);
    const res = await h.post("/v2/keys.createKey", `{"apiId":"${apiId}",${field}}`, await admin(h));
    expectInvalid(h, res, named);
  });

  // In meta, where any key is allowed: only the body's parser can refuse these
  // (decode.ts parses a text without a backslash or either name with JSON.parse alone).
  it.each([
    ["a __proto__ key in meta", '"meta":{"__proto__":{"admin":true}}'],
    ["a __proto__ key in meta written with escapes", '"meta":{"\\u005f\\u005Fproto__":{"admin":true}}'],
    ["a constructor.prototype in meta", '"meta":{"constructor":{"prototype":{"admin":true}}}'],
    ["a constructor.prototype in meta written with escapes", '"meta":{"\\u0063onstructor":{"prototype":{"admin":true}}}'],
  ])("%s -> 400 naming the body", async (_, field) => {
    const apiId = await createApi(h);
    const res = await h.post("/v2/keys.createKey", `{"apiId":"${apiId}",${field}}`, await admin(h));
    expectInvalid(h, res, "body");
  });

  it("a meta key `constructor` without a prototype, and a body after a byte order mark, are read", async () => {
    const apiId = await createApi(h);
    const res = await h.post("/v2/keys.createKey", `\ufeff{"apiId":"${apiId}","meta":{"constructor":"x"}}`, await admin(h));
    expect(res.status, show(res)).toBe(200);
    const got = await h.post("/v2/keys.getKey", { keyId: res.body.data.keyId }, await admin(h));
    expect(got.body.data.meta).toEqual({ constructor: "x" });
  });

  it("a well-formed pair (an emoji) and non-ASCII text are kept as sent", async () => {
    const apiId = await createApi(h);
    const name = "k\u{1F511} é ü 鍵";
    const res = await h.post("/v2/keys.createKey", { apiId, name, meta: { "\u{1F511}": "\u{1F511}" } }, await admin(h));
    expect(res.status, show(res)).toBe(200);
    const got = await h.post("/v2/keys.getKey", { keyId: res.body.data.keyId }, await admin(h));
    expect(got.body.data).toMatchObject({ name, meta: { "\u{1F511}": "\u{1F511}" } });
  });

  it("a deeply nested meta (150 levels, well under 10 KB) is accepted or refused with 400 naming meta, never 500", async () => {
    const apiId = await createApi(h);
    let meta: unknown = "leaf";
    for (let i = 0; i < 150; i++) meta = { l: meta };
    expect(JSON.stringify(meta).length).toBeLessThan(10_000);
    const res = await h.post("/v2/keys.createKey", { apiId, meta }, await admin(h));
    expect([200, 400], show(res)).toContain(res.status);
    if (res.status === 400) expectInvalid(h, res, "meta");
  });
});
