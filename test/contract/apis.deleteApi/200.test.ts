import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, verifyKey } from "../shared/helpers.js";

describe("apis.deleteApi 200", () => {
  const h = useHarness();

  it("deletes an API: data is {}, and getApi then answers 404", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    expect(expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk))).toEqual({});
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, rk), 404, "err:svc:data:api_not_found");
  });

  it("a grant for this one API (apis.<apiId>.delete_api) is enough", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey([`apis.${apiId}.delete_api`]);
    expect(expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk))).toEqual({});
  });

  it("the API's keys stop verifying at once (NOT_FOUND), and its keys are no longer readable", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" });
    expectOk(await h.post("/v2/apis.deleteApi", { apiId }, rk));
    expect(await verifyKey(h, key)).toEqual({ valid: false, code: "NOT_FOUND" });
    expectError(h, await h.post("/v2/keys.getKey", { keyId }, rk), 404, "err:svc:data:key_not_found");
    expectError(h, await h.post("/v2/keys.listKeys", { apiId }, rk), 404, "err:svc:data:api_not_found");
    // No new key can be created in a deleted API.
    expectError(h, await h.post("/v2/keys.createKey", { apiId }, rk), 404, "err:svc:data:api_not_found");
  });

  it("deleting one API leaves the others alone", async () => {
    const rk = await admin(h);
    const gone = await createApi(h);
    const kept = await createApi(h);
    const { key } = await createKey(h, kept);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: gone }, rk));
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId: kept }, rk)).id).toBe(kept);
    expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" });
  });
});
