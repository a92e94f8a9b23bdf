// Every response names its request: the x-request-id header equals meta.requestId,
// on successes and on every kind of failure, and no two responses share one.
import { describe, expect, it } from "vitest";
import type { Res } from "../../harness.js";
import { useHarness } from "../../harness.js";
import { admin, createApi, send, show } from "../shared/helpers.js";

describe("x-request-id equals meta.requestId", () => {
  const h = useHarness();

  it("on 200, 400, 401, 403, 404, 405, 413 and 415 responses, liveness and unknown paths included", async () => {
    const rk = await admin(h);
    const readOnly = await h.rootKey(["apis.*.read_api"]);
    const apiId = await createApi(h);
    const responses: Res[] = [
      await h.post("/v2/apis.getApi", { apiId }, rk),
      await h.post("/v2/apis.createApi", { name: "ab" }, rk),
      await h.post("/v2/apis.createApi", { name: "abc" }),
      await h.post("/v2/apis.createApi", { name: "abc" }, readOnly),
      await h.post("/v2/apis.getApi", { apiId: "api_doesnotexist0000" }, rk),
      await send(h, { method: "GET", url: "/v2/apis.getApi" }),
      await h.post("/v2/apis.createApi", "x".repeat(h.config.bodyLimitBytes + 1), rk),
      await h.post("/v2/apis.createApi", "name=abc", rk, { "content-type": "text/plain" }),
      await send(h, { method: "GET", url: "/v2/liveness" }),
      await h.post("/v2/liveness", {}),
      await h.post("/v2/apis.noSuchOperation", {}, rk),
      await send(h, { method: "GET", url: "/no/such/path" }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 400, 401, 403, 404, 405, 413, 415, 200, 200, 404, 404]);
    for (const res of responses) {
      expect(res.body?.meta?.requestId, show(res)).toBeTypeOf("string");
      expect(res.headers["x-request-id"], show(res)).toBe(res.body.meta.requestId);
    }
    expect(new Set(responses.map((r) => r.body.meta.requestId)).size).toBe(responses.length);
  });

  // Answers without an envelope name their request too (the /v2 routes set the
  // header in their handlers; these get it from a hook of their own scope).
  it("on the operations endpoints, the API description and the Connect door", async () => {
    const rk = await admin(h);
    const responses: Res[] = [
      await send(h, { method: "GET", url: "/metrics" }),
      await send(h, { method: "GET", url: "/readyz" }),
      await send(h, { method: "GET", url: "/openapi.json" }),
      await send(h, {
        method: "POST",
        url: "/keyhold.v2.ApisService/CreateApi",
        headers: { "content-type": "application/json", authorization: `Bearer ${rk}` },
        payload: JSON.stringify({ name: "connect-door" }),
      }),
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const ids = responses.map((r) => r.headers["x-request-id"]);
    for (const [i, id] of ids.entries()) expect(id, show(responses[i] as Res)).toMatch(/^req_\w+$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
