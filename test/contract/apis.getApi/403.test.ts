import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, expectError } from "../shared/helpers.js";

describe("apis.getApi 403", () => {
  const h = useHarness();

  it("a root key without read_api -> 403 insufficient_permissions", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey(["apis.*.create_api", "apis.*.read_key", "apis.*.delete_api"]);
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  it("a read_api grant for another API -> 403", async () => {
    const apiA = await createApi(h);
    const apiB = await createApi(h);
    const rk = await h.rootKey([`apis.${apiA}.read_api`]);
    expectError(h, await h.post("/v2/apis.getApi", { apiId: apiB }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  // The permission is decided from the request alone, before the lookup (docs/auth.md, "401 or 403"),
  // so a caller without the grant cannot probe which API ids exist.
  it("a root key without read_api asking for an unknown API -> 403, not 404", async () => {
    const rk = await h.rootKey(["apis.*.create_api"]);
    expectError(h, await h.post("/v2/apis.getApi", { apiId: "api_doesnotexist0000" }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });
});
