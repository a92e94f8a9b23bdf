import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

describe("identities.getIdentity 404", () => {
  const h = useHarness();
  const NOT_FOUND = "err:svc:data:identity_not_found";

  it("an unknown id or externalId -> 404 identity_not_found", async () => {
    const rk = await admin(h);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "id_doesnotexist" }, rk), 404, NOT_FOUND, "This identity does not exist.");
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "no_such_user" }, rk), 404, NOT_FOUND);
  });

  it("a deleted identity -> 404, by id and by externalId", async () => {
    const rk = await admin(h);
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "gone" }, rk));
    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: identityId }, rk));
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: identityId }, rk), 404, NOT_FOUND);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "gone" }, rk), 404, NOT_FOUND);
  });

  // Another workspace's identity is reported exactly like a missing one.
  it("another workspace's identity -> 404", async () => {
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "mine" }, await admin(h)));
    const other = await foreignAdmin(h);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: identityId }, other), 404, NOT_FOUND);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "mine" }, other), 404, NOT_FOUND);
  });

  it("a per-identity read grant asking for an unknown identity -> 404", async () => {
    const rk = await h.rootKey(["identity.id_someoneelse.read_identity"]);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "nobody" }, rk), 404, NOT_FOUND);
  });
});
