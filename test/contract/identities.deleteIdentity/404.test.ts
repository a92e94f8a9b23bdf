import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, foreignAdmin } from "../shared/helpers.js";

describe("identities.deleteIdentity 404", () => {
  const h = useHarness();
  const NOT_FOUND = "err:svc:data:identity_not_found";

  it("an unknown identity -> 404 identity_not_found", async () => {
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: "nobody" }, await admin(h)), 404, NOT_FOUND);
  });

  it("a second delete -> 404", async () => {
    const rk = await admin(h);
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "twice" }, rk));
    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: identityId }, rk));
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: identityId }, rk), 404, NOT_FOUND);
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: "twice" }, rk), 404, NOT_FOUND);
  });

  it("another workspace's identity -> 404", async () => {
    const { identityId } = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "mine" }, await admin(h)));
    expectError(h, await h.post("/v2/identities.deleteIdentity", { identity: identityId }, await foreignAdmin(h)), 404, NOT_FOUND);
  });
});
