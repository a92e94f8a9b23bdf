import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, send } from "../shared/helpers.js";

describe("a known operation with the wrong method -> 405 envelope", () => {
  const h = useHarness();

  it.each(["GET", "PUT", "PATCH", "DELETE"] as const)("%s /v2/keys.createKey -> 405 method_not_allowed with Allow: POST", async (method) => {
    const res = await send(h, { method, url: "/v2/keys.createKey", headers: { authorization: `Bearer ${await admin(h)}` } });
    expectError(h, res, 405, "err:svc:application:method_not_allowed");
    expect(res.body.error.title).toBe("Method Not Allowed");
    expect(String(res.headers.allow)).toContain("POST");
  });

  it.each(["/v2/apis.getApi", "/v2/keys.verifyKey", "/v2/keys.listKeys"])("GET %s -> 405", async (url) => {
    expectError(h, await send(h, { method: "GET", url }), 405, "err:svc:application:method_not_allowed");
  });
});
