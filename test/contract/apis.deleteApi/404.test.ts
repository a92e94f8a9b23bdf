import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

describe("apis.deleteApi 404", () => {
  const h = useHarness();

  it("an unknown apiId -> 404 api_not_found", async () => {
    expectError(h, await h.post("/v2/apis.deleteApi", { apiId: "api_doesnotexist0000" }, await admin(h)), 404, "err:svc:data:api_not_found");
  });

  it("a second delete -> 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expectError(h, await h.post("/v2/apis.deleteApi", { apiId }, rk), 404, "err:svc:data:api_not_found");
  });

  // Another workspace's API reads as missing, so its id cannot be confirmed (nor deleted).
  it("another workspace's API -> 404, and it survives", async () => {
    const apiId = await createApi(h);
    expectError(h, await h.post("/v2/apis.deleteApi", { apiId }, await foreignAdmin(h)), 404, "err:svc:data:api_not_found");
    expectOk(await h.post("/v2/apis.getApi", { apiId }, await admin(h)));
  });
});
