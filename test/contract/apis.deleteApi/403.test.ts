import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk } from "../shared/helpers.js";

describe("apis.deleteApi 403", () => {
  const h = useHarness();

  it("a root key without delete_api -> 403, and the API is still there", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey(["apis.*.read_api", "apis.*.create_api", "apis.*.delete_key"]);
    expectError(h, await h.post("/v2/apis.deleteApi", { apiId }, rk), 403, "err:svc:authorization:insufficient_permissions");
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, await admin(h))).id).toBe(apiId);
  });

  it("a delete_api grant for another API -> 403", async () => {
    const apiA = await createApi(h);
    const apiB = await createApi(h);
    const rk = await h.rootKey([`apis.${apiA}.delete_api`]);
    expectError(h, await h.post("/v2/apis.deleteApi", { apiId: apiB }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });
});
