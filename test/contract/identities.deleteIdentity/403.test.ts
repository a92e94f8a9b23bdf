import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

describe("identities.deleteIdentity 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  it("a root key with every identity grant but delete_identity -> 403, and the identity stays", async () => {
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "acct" }, await admin(h)));
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.read_identity", "identity.*.update_identity"]);
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: "acct" }, rk), 403, FORBIDDEN);
    expect((await h.post("/v2/identities.getIdentity", { identity: "acct" }, await admin(h))).status).toBe(200);
  });

  it("a delete grant for another identity -> 403", async () => {
    const a = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "a_acct" }, await admin(h))).identityId;
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "b_acct" }, await admin(h)));
    const rk = await h.rootKey([`identity.${a}.delete_identity`]);
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: "b_acct" }, rk), 403, FORBIDDEN);
  });

  it("a root key without any delete grant asking for an unknown identity -> 403, not 404", async () => {
    const rk = await h.rootKey(["identity.*.read_identity"]);
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: "nobody" }, rk), 403, FORBIDDEN);
  });
});
