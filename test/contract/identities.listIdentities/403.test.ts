import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk } from "../shared/helpers.js";

describe("identities.listIdentities 403", () => {
  const h = useHarness();

  it("a root key without identity.*.read_identity -> 403", async () => {
    const rk = await h.rootKey(["identity.*.create_identity", "identity.*.update_identity"]);
    expectError(h, await h.post("/v2/identities.listIdentities", {}, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  // Listing shows the whole workspace, so a grant for one identity does not allow it.
  it("a read grant for one identity only -> 403", async () => {
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "one" }, await admin(h)));
    const rk = await h.rootKey([`identity.${identityId}.read_identity`]);
    expectError(h, await h.post("/v2/identities.listIdentities", {}, rk), 403, "err:svc:authorization:insufficient_permissions");
  });
});
