import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

describe("identities.updateIdentity 404", () => {
  const h = useHarness();
  const NOT_FOUND = "err:svc:data:identity_not_found";

  it("an unknown identity -> 404 identity_not_found", async () => {
    expectError(h, await h.post("/v2/identities.updateIdentity", { identity: "nobody", meta: {} }, await admin(h)), 404, NOT_FOUND);
  });

  it("a deleted identity -> 404", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "gone" }, rk));
    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: "gone" }, rk));
    expectError(h, await h.post("/v2/identities.updateIdentity", { identity: "gone", meta: { x: 1 } }, rk), 404, NOT_FOUND);
  });

  it("another workspace's identity -> 404", async () => {
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "mine" }, await admin(h)));
    expectError(h, await h.post("/v2/identities.updateIdentity", { identity: identityId, meta: {} }, await foreignAdmin(h)), 404, NOT_FOUND);
  });
});
