import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { expectOk, send } from "../shared/helpers.js";

describe("liveness 200", () => {
  const h = useHarness();

  it.each(["GET", "POST"] as const)("%s /v2/liveness needs no root key and answers {meta:{requestId}, data:{message}}", async (method) => {
    const res = await send(h, {
      method,
      url: "/v2/liveness",
      ...(method === "POST" ? { headers: { "content-type": "application/json" }, payload: "{}" } : {}),
    });
    const data = expectOk(res);
    expect(Object.keys(data)).toEqual(["message"]);
    expect(data.message).toBeTypeOf("string");
  });
});

describe("liveness with odd bodies", () => {
  const h = useHarness();

  it("POST with an empty JSON body, or any body, still answers 200", async () => {
    const cases: Array<[string, string]> = [
      ["", "application/json"],
      ["not json", "text/plain"],
      ["{}", "application/json"],
    ];
    for (const [payload, type] of cases) {
      const res = await h.app.inject({ method: "POST", url: "/v2/liveness", headers: { "content-type": type }, payload });
      expect(res.statusCode, res.body).toBe(200);
      expect(JSON.parse(res.body).data.message).toBeTypeOf("string");
    }
  });
});
