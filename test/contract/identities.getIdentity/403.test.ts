import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

describe("identities.getIdentity 403", () => {
  const h = useHarness();
  const FORBIDDEN = "err:svc:authorization:insufficient_permissions";

  it("a root key without read_identity -> 403", async () => {
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "acct" }, await admin(h)));
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.update_identity", "identity.*.delete_identity"]);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "acct" }, rk), 403, FORBIDDEN);
  });

  it("a read grant for another identity -> 403", async () => {
    const a = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "a_acct" }, await admin(h))).identityId;
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "b_acct" }, await admin(h)));
    const rk = await h.rootKey([`identity.${a}.read_identity`]);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "b_acct" }, rk), 403, FORBIDDEN);
  });

  // A key that may read no identity at all is refused before the lookup, so it
  // cannot tell which identities exist.
  it("a root key without any read grant asking for an unknown identity -> 403, not 404", async () => {
    const rk = await h.rootKey(["identity.*.create_identity"]);
    expectError(h, await h.post("/v2/identities.getIdentity", { identity: "nobody" }, rk), 403, FORBIDDEN);
  });
});
