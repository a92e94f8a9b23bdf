import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectInvalid, expectOk, getKey, many } from "../shared/helpers.js";

const SYNTAX = "err:user:bad_request:permissions_query_syntax_error";

describe("keys.verifyKey 400", () => {
  const h = useHarness();

  it.each<[string, Record<string, unknown>, string]>([
    ["key missing", { key: undefined }, "key"],
    ["key empty", { key: "" }, "key"],
    ["key of 513 characters", { key: "k".repeat(513) }, "key"],
    ["key not a string", { key: 123 }, "key"],
    ["permissions empty", { permissions: "" }, "permissions"],
    ["permissions of 1001 characters", { permissions: "p".repeat(1001) }, "permissions"],
    ["permissions not a string", { permissions: ["documents.read"] }, "permissions"],
    ["credits.cost negative", { credits: { cost: -1 } }, "cost"],
    ["credits.cost above 10^12", { credits: { cost: 1_000_000_000_001 } }, "cost"],
    ["credits.cost as a string", { credits: { cost: "1" } }, "cost"],
    ["credits null", { credits: null }, "credits"],
    ["ratelimits not an array", { ratelimits: { name: "requests" } }, "ratelimits"],
    ["a rate limit name of 2 characters", { ratelimits: [{ name: "ab" }] }, "name"],
    ["a rate limit without a name", { ratelimits: [{ cost: 1 }] }, "name"],
    ["a negative rate limit cost", { ratelimits: [{ name: "requests", cost: -1 }] }, "cost"],
    ["an inline limit of 0", { ratelimits: [{ name: "inline", limit: 0, duration: 60_000 }] }, "limit"],
    ["an inline duration under 1000 ms", { ratelimits: [{ name: "inline", limit: 5, duration: 999 }] }, "duration"],
    ["21 tags", { tags: many(21, (i) => `t${i}`) }, "tags"],
    ["an empty tag", { tags: [""] }, "tags"],
    ["apiId (removed from verifyKey)", { apiId: "api_123" }, "apiId"],
    ["an unknown field", { color: "blue" }, "color"],
  ])("%s -> 400 invalid_input naming the field", async (_label, fields, field) => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const body = JSON.parse(JSON.stringify({ key, ...fields }));
    expectInvalid(h, await h.post("/v2/keys.verifyKey", body, await admin(h)), field);
  });

  // Tags are stored for analytics and read back by anyone with read_analytics: never the key.
  it.each([
    ["the key itself", (key: string) => [key]],
    ["the key inside a longer tag, after a valid one", (key: string) => ["path=/v1", `auth=${key}`]],
  ])("a tag holding %s -> 400 naming the tag", async (_label, tags) => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const t = tags(key);
    const res = await h.post("/v2/keys.verifyKey", { key, tags: t }, await admin(h));
    expectInvalid(h, res, `tags[${t.length - 1}]`);
    expect(JSON.stringify(res.body)).not.toContain(key);
  });

  it.each([
    ["an operator at the end", "documents.read AND"],
    ["an operator at the start", "OR documents.read"],
    ["two operators in a row", "documents.read AND AND billing.read"],
    ["a missing closing parenthesis", "(documents.read OR billing.read"],
    ["a stray closing parenthesis", "documents.read)"],
    ["empty parentheses", "()"],
    ["two permissions without an operator", "documents.read billing.read"],
    ["a character outside the set", "documents.read & billing.read"],
    ["whitespace only", "   "],
  ])("a permissions query with %s -> 400 %s", async (_label, permissions) => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, { permissions: ["documents.read"] });
    const res = await h.post("/v2/keys.verifyKey", { key, permissions }, await admin(h));
    expectError(h, res, 400, SYNTAX);
    expect(res.body.error.title).toBe("Bad Request");
  });

  // The query is the caller's mistake whatever state the key is in (docs/permissions.md, "The permission query of `keys.verifyKey`").
  it.each([
    ["disabled", { enabled: false }],
    ["expired", { expires: 0 }],
  ])("a malformed query is a 400 even for a %s key", async (_label, fields) => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, fields);
    expectError(h, await h.post("/v2/keys.verifyKey", { key, permissions: "a AND" }, await admin(h)), 400, SYNTAX);
  });

  it("a rejected verification spends no credits", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 3 } });
    expectError(h, await h.post("/v2/keys.verifyKey", { key, permissions: "(a" }, await admin(h)), 400, SYNTAX);
    expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(3);
  });
});
