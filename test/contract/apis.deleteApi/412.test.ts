import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk } from "../shared/helpers.js";

describe("apis.deleteApi 412", () => {
  const h = useHarness();

  // Delete protection is a dashboard setting, not settable through this API subset,
  // so the test switches it on in the database.
  it("an API with delete protection -> 412 err:svc:application:protected_resource, and it survives", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    await h.db.pool.execute("UPDATE apis SET delete_protection = TRUE WHERE id = ?", [apiId]);
    const res = await h.post("/v2/apis.deleteApi", { apiId }, rk);
    expectError(h, res, 412, "err:svc:application:protected_resource");
    expect(res.body.error.title).toBe("Precondition Failed");
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, rk)).id).toBe(apiId);
  });
});
