// Every response names its request: the x-request-id header equals meta.requestId,
// on successes and on every kind of failure, and no two responses share one.
import { describe, expect, it } from "vitest";
import type { Res } from "../../harness.js";
import { useHarness } from "../../harness.js";
import { admin, createApi, send, show } from "../shared/helpers.js";

describe("x-request-id equals meta.requestId", () => {
  const h = useHarness();

  it("on 200, 400, 401, 403, 404, 405, 413 and 415 responses", async () => {
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
    ];
    expect(responses.map((r) => r.status)).toEqual([200, 400, 401, 403, 404, 405, 413, 415, 200]);
    for (const res of responses) {
      expect(res.body?.meta?.requestId, show(res)).toBeTypeOf("string");
      expect(res.headers["x-request-id"], show(res)).toBe(res.body.meta.requestId);
    }
    expect(new Set(responses.map((r) => r.body.meta.requestId)).size).toBe(responses.length);
  });
});
