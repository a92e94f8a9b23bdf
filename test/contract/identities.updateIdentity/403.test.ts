import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

describe("identities.updateIdentity 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  it("a root key with every identity grant but update_identity -> 403", async () => {
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "acct" }, await admin(h)));
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.read_identity", "identity.*.delete_identity"]);
    expectError(h, await h.post("/v2/identities.updateIdentity", { identity: "acct", meta: { x: 1 } }, rk), 403, FORBIDDEN);
  });

  it("an update grant for another identity -> 403, and nothing changes", async () => {
    const a = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "a_acct" }, await admin(h))).identityId;
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "b_acct", meta: { v: 1 } }, await admin(h)));
    const rk = await h.rootKey([`identity.${a}.update_identity`]);
    expectError(h, await h.post("/v2/identities.updateIdentity", { identity: "b_acct", meta: { v: 2 } }, rk), 403, FORBIDDEN);
    const got = expectOk(await h.post("/v2/identities.getIdentity", { identity: "b_acct" }, await admin(h)));
    if (got.meta.v !== 1) throw new Error(`meta changed: ${JSON.stringify(got.meta)}`);
  });

  it("a root key without any update grant asking for an unknown identity -> 403, not 404", async () => {
    const rk = await h.rootKey(["identity.*.read_identity"]);
    expectError(h, await h.post("/v2/identities.updateIdentity", { identity: "nobody", meta: {} }, rk), 403, FORBIDDEN);
  });
});
