import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

const DETAIL = "The requested API does not exist or has been deleted.";

describe("apis.getApi 404", () => {
  const h = useHarness();

  it("an unknown apiId -> 404 err:svc:data:api_not_found", async () => {
    const res = await h.post("/v2/apis.getApi", { apiId: "api_doesnotexist0000" }, await admin(h));
    expectError(h, res, 404, "err:svc:data:api_not_found", DETAIL);
  });

  it("a deleted API -> 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, rk), 404, "err:svc:data:api_not_found");
  });

  // Another workspace's API is reported exactly like a missing one: ids of other
  // workspaces must not be confirmable.
  it("another workspace's API -> 404, even for a root key with *", async () => {
    const apiId = await createApi(h);
    const stranger = await foreignAdmin(h);
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, stranger), 404, "err:svc:data:api_not_found", DETAIL);
  });
});
