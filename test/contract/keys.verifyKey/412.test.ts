import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk, getKey, uid, verifyKey } from "../shared/helpers.js";

const PRECONDITION = "err:svc:application:precondition_failed";

describe("keys.verifyKey 412", () => {
  const h = useHarness();

  it("a named rate limit the key does not have -> 412 precondition_failed naming it; nothing is spent", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 3 }, ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }] });
    const res = await h.post("/v2/keys.verifyKey", { key, ratelimits: [{ name: "no_such_limit" }] }, await admin(h));
    expectError(h, res, 412, PRECONDITION);
    expect(res.body.error.title).toBe("Precondition Failed");
    expect(res.body.error.detail).toContain("no_such_limit");
    expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(3);
  });

  it("a key linked to an identity without that limit -> 412 as well", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, { externalId: uid("owner") });
    const res = await h.post("/v2/keys.verifyKey", { key, ratelimits: [{ name: "missing" }] }, await admin(h));
    expectError(h, res, 412, PRECONDITION);
  });

  it("only half of an inline limit (limit without duration) must name an existing limit -> 412", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    expectError(h, await h.post("/v2/keys.verifyKey", { key, ratelimits: [{ name: "half", limit: 5 }] }, await admin(h)), 412, PRECONDITION);
  });

  it("limit and duration together define an inline limit: no 412", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId);
    expect(await verifyKey(h, key, { ratelimits: [{ name: "inline", limit: 5, duration: 60_000 }] })).toMatchObject({ valid: true, code: "VALID" });
  });

  // The limit check runs only for a key that is still valid (docs/ratelimits.md, "Limits on keys and identities (verifyKey)").
  it("a disabled key naming an unknown limit is DISABLED, not 412", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, { enabled: false });
    expect(await verifyKey(h, key, { ratelimits: [{ name: "missing" }] })).toMatchObject({ valid: false, code: "DISABLED" });
  });

  it("an unknown key naming an unknown limit is NOT_FOUND, not 412", async () => {
    expect(await verifyKey(h, "nope_3xYzAbCdEfGhJkLmNpQrSt", { ratelimits: [{ name: "missing" }] })).toEqual({ valid: false, code: "NOT_FOUND" });
  });
});
