// No response body ever carries a stack trace, a source path or an internal
// error message, whatever went wrong.
import { describe, expect, it } from "vitest";
import type { Res } from "../../harness.js";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectNoInternals, send, show } from "../shared/helpers.js";

describe("never a stack trace in any body", () => {
  const h = useHarness();

  it("across every kind of failure", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    const deep = `{"apiId":"${apiId}","meta":${'{"a":'.repeat(2000)}1${"}".repeat(2000)}}`;
    const responses: Res[] = [
      await h.post("/v2/keys.createKey", '{"apiId":', rk),
      await h.post("/v2/keys.createKey", { apiId, byteLength: "x" }, rk),
      await h.post("/v2/keys.createKey", `{"apiId":"${apiId}","name":"\\udfff"}`, rk),
      await h.post("/v2/keys.createKey", deep, rk),
      await h.post("/v2/keys.createKey", '{"apiId":"abc","constructor":{"prototype":{}}}', rk),
      await h.post("/v2/keys.verifyKey", { key, permissions: "((a" }, rk),
      await h.post("/v2/keys.verifyKey", { key, ratelimits: [{ name: "nope" }] }, rk),
      await h.post("/v2/keys.verifyKey", { key: "k".repeat(600) }, rk),
      await h.post("/v2/keys.getKey", { keyId: "key_doesnotexist0000" }, rk),
      await h.post("/v2/apis.createApi", { name: "abc" }, "svc_notarootkey"),
      await h.post("/v2/apis.createApi", { name: "abc" }, undefined, { authorization: "Bearer \u0085" }),
      await send(h, { method: "DELETE", url: "/v2/keys.createKey" }),
      await send(h, { method: "POST", url: "/v2/../../etc/passwd" }),
      await h.post("/v2/apis.createApi", "x", rk, { "content-type": "application/octet-stream" }),
    ];
    for (const res of responses) {
      expect(res.body?.error, `expected an error envelope: ${show(res)}`).toBeTypeOf("object");
      expectNoInternals(res);
      expect(res.text, show(res)).not.toMatch(/Error:|TypeError|RangeError|SyntaxError|ER_[A-Z_]+|mysql|protobuf/i);
    }
  });
});
