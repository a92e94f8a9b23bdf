// keys.verifyKey: every verification outcome is HTTP 200 with data.valid and
// data.code: a key that fails verification is a result, not an error (docs/errors.md). NOT_FOUND
// carries nothing else, so a caller learns nothing about keys it may not see.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, awayFromWindowEdge, createApi, createKey, expectOk, foreignAdmin, getKey, seedRole, sleep, uid, verifyKey } from "../shared/helpers.js";

const NOT_FOUND = { valid: false, code: "NOT_FOUND" };

describe("keys.verifyKey 200", () => {
  const h = useHarness();

  describe("VALID", () => {
    it("carries the key's id, name, meta, expiry, remaining credits, permissions, roles, identity and checked limits", async () => {
      const apiId = await createApi(h);
      const role = uid("viewer");
      await seedRole(h, role, ["reports.view"]);
      const externalId = uid("acme");
      const meta = { plan: "pro", seats: 3, nested: { tags: ["a", "b"], on: true } };
      const expires = Date.now() + 3_600_000;
      await awayFromWindowEdge(60_000);
      const { keyId, key } = await createKey(h, apiId, {
        name: "alice",
        meta,
        expires,
        externalId,
        roles: [role],
        permissions: ["documents.read"],
        credits: { remaining: 10 },
        ratelimits: [{ name: "requests", limit: 10, duration: 60_000 }],
      });
      const before = Date.now();
      const data = await verifyKey(h, key);
      expect(data).toEqual({
        valid: true,
        code: "VALID",
        keyId,
        name: "alice",
        meta,
        expires,
        credits: 9,
        enabled: true,
        permissions: expect.arrayContaining(["documents.read", "reports.view"]),
        roles: [role],
        identity: { id: expect.stringMatching(/^id_/), externalId },
        ratelimits: [
          {
            id: expect.stringMatching(/^rl_/),
            name: "requests",
            limit: 10,
            duration: 60_000,
            reset: expect.any(Number),
            remaining: 9,
            exceeded: false,
            autoApply: true,
          },
        ],
      });
      expect(data.permissions).toHaveLength(2);
      // reset is the Unix ms at which the current (epoch-aligned) window ends.
      expect(data.ratelimits[0].reset % 60_000).toBe(0);
      expect(data.ratelimits[0].reset).toBeGreaterThan(before);
      expect(data.ratelimits[0].reset).toBeLessThanOrEqual(before + 60_000);
    });

    it("a plain key answers only what it has: no credits (unlimited), no name, no meta", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId);
      expect(await verifyKey(h, key)).toEqual({ valid: true, code: "VALID", keyId, enabled: true });
    });

    it("a per-API verify grant (apis.<apiId>.verify_key) is enough", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId);
      const rk = await h.rootKey([`apis.${apiId}.verify_key`]);
      expect(await verifyKey(h, key, {}, rk)).toMatchObject({ valid: true, code: "VALID" });
    });

    it("accepts tags (analytics only) without changing the result", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId);
      const tags = Array.from({ length: 20 }, (_, i) => `path=/v1/${i}`);
      expect(await verifyKey(h, key, { tags })).toEqual({ valid: true, code: "VALID", keyId, enabled: true });
    });

    it("never shows the key string", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId, { prefix: "sec" });
      const res = await h.post("/v2/keys.verifyKey", { key }, await admin(h));
      expect(res.text.includes(key)).toBe(false);
    });
  });

  describe("NOT_FOUND: only {valid:false, code:NOT_FOUND}", () => {
    it.each([
      ["a key that never existed", "nope_3xYzAbCdEfGhJkLmNpQrSt"],
      ["a key without a prefix that never existed", "3xYzAbCdEfGhJkLmNpQrSt"],
      ["a one-character key", "x"],
    ])("%s", async (_label, key) => {
      expect(await verifyKey(h, key)).toEqual(NOT_FOUND);
    });

    it("a key with one character changed", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId, { prefix: "chg" });
      const changed = `${key.slice(0, -1)}${key.endsWith("2") ? "3" : "2"}`;
      expect(await verifyKey(h, changed)).toEqual(NOT_FOUND);
    });

    it("a key of another workspace (and it still verifies in its own)", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId);
      expect(await verifyKey(h, key, {}, await foreignAdmin(h))).toEqual(NOT_FOUND);
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID" });
    });

    // A root key that may verify some API but not this key's one cannot tell the key exists (docs/auth.md, "401 or 403").
    it("a key of an API the root key may not verify, when it may verify another API", async () => {
      const apiA = await createApi(h);
      const apiB = await createApi(h);
      const a = await createKey(h, apiA);
      const b = await createKey(h, apiB);
      const rk = await h.rootKey([`apis.${apiA}.verify_key`]);
      expect(await verifyKey(h, a.key, {}, rk)).toMatchObject({ valid: true, code: "VALID", keyId: a.keyId });
      expect(await verifyKey(h, b.key, {}, rk)).toEqual(NOT_FOUND);
    });

    it("a soft-deleted key", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId);
      expect(await verifyKey(h, key)).toMatchObject({ valid: true });
      expectOk(await h.post("/v2/keys.deleteKey", { keyId }, await admin(h)));
      expect(await verifyKey(h, key)).toEqual(NOT_FOUND);
    });

    it("a permanently deleted key", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId);
      expect(await verifyKey(h, key)).toMatchObject({ valid: true });
      expectOk(await h.post("/v2/keys.deleteKey", { keyId, permanent: true }, await admin(h)));
      expect(await verifyKey(h, key)).toEqual(NOT_FOUND);
    });

    it("a key of a deleted API", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId);
      expect(await verifyKey(h, key)).toMatchObject({ valid: true });
      expectOk(await h.post("/v2/apis.deleteApi", { apiId }, await admin(h)));
      expect(await verifyKey(h, key)).toEqual(NOT_FOUND);
    });
  });

  describe("DISABLED and EXPIRED", () => {
    it("DISABLED for a key created with enabled:false; it carries the key's id and consumes nothing", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { enabled: false, name: "off", credits: { remaining: 5 } });
      const data = await verifyKey(h, key);
      expect(data).toMatchObject({ valid: false, code: "DISABLED", keyId, name: "off", enabled: false });
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(5);
    });

    it("EXPIRED for a key whose expiry is in the past; it carries the key's id and consumes nothing", async () => {
      const apiId = await createApi(h);
      const expires = Date.now() - 60_000;
      const { keyId, key } = await createKey(h, apiId, { expires, credits: { remaining: 5 } });
      expect(await verifyKey(h, key)).toMatchObject({ valid: false, code: "EXPIRED", keyId, expires });
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(5);
    });

    it("a key that expires 1.5 s after creation is VALID before and EXPIRED after (server time)", async () => {
      const apiId = await createApi(h);
      const expires = Date.now() + 1_500;
      const { key } = await createKey(h, apiId, { expires });
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", expires });
      await sleep(Math.max(0, expires - Date.now()) + 200);
      expect(await verifyKey(h, key)).toMatchObject({ valid: false, code: "EXPIRED", expires });
    });

    it("a disabled key that is also expired is DISABLED (the earlier check wins)", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId, { enabled: false, expires: 0 });
      expect(await verifyKey(h, key)).toMatchObject({ valid: false, code: "DISABLED" });
    });
  });

  describe("credits", () => {
    it("go down by one per verification, then USAGE_EXCEEDED, never negative", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 2 } });
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 1 });
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 0 });
      expect(await verifyKey(h, key)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", keyId, credits: 0 });
      expect(await verifyKey(h, key)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 });
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(0);
    });

    it("credits.cost spends several at once; a cost above the balance spends nothing", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 5 } });
      expect(await verifyKey(h, key, { credits: { cost: 3 } })).toMatchObject({ valid: true, code: "VALID", credits: 2 });
      expect(await verifyKey(h, key, { credits: { cost: 3 } })).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 2 });
      expect(await verifyKey(h, key, { credits: { cost: 2 } })).toMatchObject({ valid: true, code: "VALID", credits: 0 });
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(0);
    });

    it("cost 0 is VALID and spends nothing, even with 0 credits left", async () => {
      const apiId = await createApi(h);
      const some = await createKey(h, apiId, { credits: { remaining: 3 } });
      expect(await verifyKey(h, some.key, { credits: { cost: 0 } })).toMatchObject({ valid: true, code: "VALID", credits: 3 });
      expect(expectOk(await getKey(h, some.keyId)).credits.remaining).toBe(3);
      const none = await createKey(h, apiId, { credits: { remaining: 0 } });
      expect(await verifyKey(h, none.key)).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 0 });
      expect(await verifyKey(h, none.key, { credits: { cost: 0 } })).toMatchObject({ valid: true, code: "VALID", credits: 0 });
    });

    it("an unlimited key ignores the cost and reports no credits", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId);
      const data = await verifyKey(h, key, { credits: { cost: 1_000_000 } });
      expect(data).toMatchObject({ valid: true, code: "VALID" });
      expect(data.credits).toBeUndefined();
    });

    it("a cost of 10^12 (the upper bound) is accepted and refused for lack of credits", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId, { credits: { remaining: 5 } });
      expect(await verifyKey(h, key, { credits: { cost: 1_000_000_000_000 } })).toMatchObject({ valid: false, code: "USAGE_EXCEEDED", credits: 5 });
    });

    // The refill time is moved back in the database: there is no other way to let a UTC day pass.
    it("a due daily refill sets the balance to the refill amount before spending", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 0, refill: { interval: "daily", amount: 5 } } });
      await h.db.pool.execute("UPDATE `keys` SET last_refill_at_m = ? WHERE id = ?", [Date.now() - 2 * 86_400_000, keyId]);
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 4 });
      // Once per day: the next verification spends from the refilled balance.
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 3 });
    });

    it("a refill replaces a lower balance but leaves a higher one alone", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 10, refill: { interval: "daily", amount: 5 } } });
      await h.db.pool.execute("UPDATE `keys` SET last_refill_at_m = ? WHERE id = ?", [Date.now() - 2 * 86_400_000, keyId]);
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 9 });
    });

    it("concurrent verifications never overspend", async () => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 5 } });
      const results = await Promise.all(Array.from({ length: 12 }, () => verifyKey(h, key)));
      expect(results.filter((r) => r.code === "VALID")).toHaveLength(5);
      expect(results.filter((r) => r.code === "USAGE_EXCEEDED")).toHaveLength(7);
      expect(results.every((r) => r.credits >= 0)).toBe(true);
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(0);
    });
  });

  // `credits` is present whenever the key was found and has limited credits: the
  // balance after this verification's deduction, unchanged when nothing was
  // deducted (docs/ratelimits.md, "Credits").
  describe("a refused verification still reports the remaining credits", () => {
    it.each<[string, Record<string, unknown>, Record<string, unknown>, string]>([
      ["DISABLED", { enabled: false }, {}, "DISABLED"],
      ["EXPIRED", { expires: 0 }, {}, "EXPIRED"],
      ["INSUFFICIENT_PERMISSIONS", { permissions: ["a.b"] }, { permissions: "c.d" }, "INSUFFICIENT_PERMISSIONS"],
    ])("%s carries credits: 5", async (_label, fields, extra, code) => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 5 }, ...fields });
      expect(await verifyKey(h, key, extra)).toMatchObject({ valid: false, code, keyId, credits: 5 });
    });

    it("RATE_LIMITED carries the unchanged balance", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { key } = await createKey(h, apiId, { credits: { remaining: 5 }, ratelimits: [{ name: "requests", limit: 1, duration: 60_000 }] });
      expect(await verifyKey(h, key)).toMatchObject({ code: "VALID", credits: 4 });
      expect(await verifyKey(h, key)).toMatchObject({ valid: false, code: "RATE_LIMITED", credits: 4 });
    });
  });

  describe("rate limits", () => {
    it("RATE_LIMITED once the key's own limit is used up; the refused request spends no credits", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 10 }, ratelimits: [{ name: "requests", limit: 2, duration: 60_000 }] });
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 9 });
      expect(await verifyKey(h, key)).toMatchObject({ valid: true, code: "VALID", credits: 8 });
      const limited = await verifyKey(h, key);
      expect(limited).toMatchObject({ valid: false, code: "RATE_LIMITED", keyId });
      expect(limited.ratelimits).toEqual([expect.objectContaining({ name: "requests", limit: 2, remaining: 0, exceeded: true })]);
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(8);
    });

    it("a limit named in the request is checked at the request's cost", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { key } = await createKey(h, apiId, { ratelimits: [{ name: "tokens", limit: 3, duration: 60_000 }] });
      const first = await verifyKey(h, key, { ratelimits: [{ name: "tokens", cost: 2 }] });
      expect(first).toMatchObject({ valid: true, code: "VALID" });
      expect(first.ratelimits).toEqual([expect.objectContaining({ name: "tokens", remaining: 1, exceeded: false })]);
      expect(await verifyKey(h, key, { ratelimits: [{ name: "tokens", cost: 2 }] })).toMatchObject({ valid: false, code: "RATE_LIMITED" });
      // cost 0 checks without consuming, and passes at exactly the limit.
      expect(await verifyKey(h, key, { ratelimits: [{ name: "tokens", cost: 0 }] })).toMatchObject({ valid: true, code: "VALID" });
      expect(await verifyKey(h, key, { ratelimits: [{ name: "tokens", cost: 1 }] })).toMatchObject({ valid: true, code: "VALID" });
      expect(await verifyKey(h, key, { ratelimits: [{ name: "tokens", cost: 1 }] })).toMatchObject({ valid: false, code: "RATE_LIMITED" });
    });

    it("a limit created with autoApply:false is checked only when the request names it", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { key } = await createKey(h, apiId, { ratelimits: [{ name: "manual", limit: 1, duration: 60_000, autoApply: false }] });
      for (let i = 0; i < 3; i++) {
        const data = await verifyKey(h, key);
        expect(data).toMatchObject({ valid: true, code: "VALID" });
        expect(data.ratelimits).toBeUndefined();
      }
      expect(await verifyKey(h, key, { ratelimits: [{ name: "manual" }] })).toMatchObject({ valid: true, code: "VALID" });
      expect(await verifyKey(h, key, { ratelimits: [{ name: "manual" }] })).toMatchObject({ valid: false, code: "RATE_LIMITED" });
    });

    it("several limits are all or nothing: a request refused by one consumes none of the others", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { key } = await createKey(h, apiId, {
        ratelimits: [
          { name: "wide", limit: 5, duration: 60_000 },
          { name: "narrow", limit: 1, duration: 60_000, autoApply: false },
        ],
      });
      expect(await verifyKey(h, key, { ratelimits: [{ name: "narrow" }] })).toMatchObject({ code: "VALID" }); // wide 1, narrow 1
      const refused = await verifyKey(h, key, { ratelimits: [{ name: "narrow" }] });
      expect(refused).toMatchObject({ code: "RATE_LIMITED" });
      const byName = Object.fromEntries((refused.ratelimits as Array<{ name: string }>).map((r) => [r.name, r]));
      expect(byName.narrow).toMatchObject({ exceeded: true, remaining: 0 });
      expect(byName.wide).toMatchObject({ exceeded: false });
      // "wide" was not consumed by the refused request: 1 used, so this one leaves 3.
      const next = await verifyKey(h, key);
      expect(next).toMatchObject({ code: "VALID" });
      expect(next.ratelimits).toEqual([expect.objectContaining({ name: "wide", remaining: 3 })]);
    });

    it("an inline limit (limit and duration in the request) applies per key, with id '' and autoApply false", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { key } = await createKey(h, apiId);
      const inline = [{ name: "inline", limit: 1, duration: 60_000 }];
      const first = await verifyKey(h, key, { ratelimits: inline });
      expect(first).toMatchObject({ valid: true, code: "VALID" });
      expect(first.ratelimits).toEqual([
        { id: "", name: "inline", limit: 1, duration: 60_000, reset: expect.any(Number), remaining: 0, exceeded: false, autoApply: false },
      ]);
      expect(await verifyKey(h, key, { ratelimits: inline })).toMatchObject({ valid: false, code: "RATE_LIMITED" });
    });

    it("each key has its own counter (without an identity, limits apply per key)", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const limit = [{ name: "requests", limit: 1, duration: 60_000 }];
      const a = await createKey(h, apiId, { ratelimits: limit });
      const b = await createKey(h, apiId, { ratelimits: limit });
      expect(await verifyKey(h, a.key)).toMatchObject({ code: "VALID" });
      expect(await verifyKey(h, a.key)).toMatchObject({ code: "RATE_LIMITED" });
      expect(await verifyKey(h, b.key)).toMatchObject({ code: "VALID" });
    });

    it("a linked identity comes with its meta and its own limits ({id, externalId, meta?, ratelimits?}); without meta or limits, with neither", async () => {
      const apiId = await createApi(h);
      const externalId = uid("ident");
      const meta = { plan: "team", seats: 4 };
      const created = expectOk(
        await h.post("/v2/identities.createIdentity", { externalId, meta, ratelimits: [{ name: "shared", limit: 50, duration: 60_000 }] }, await admin(h)),
      );
      const { key } = await createKey(h, apiId, { externalId });
      const data = await verifyKey(h, key);
      expect(data.identity).toEqual({
        id: created.identityId,
        externalId,
        meta,
        ratelimits: [{ id: expect.stringMatching(/^rl_/), name: "shared", limit: 50, duration: 60_000, autoApply: true }],
      });
      const bare = uid("bare");
      const other = await createKey(h, apiId, { externalId: bare });
      expect((await verifyKey(h, other.key)).identity).toEqual({ id: expect.stringMatching(/^id_/), externalId: bare });
    });

    it("a key's auto-applied limits and its identity's merge by name, the key's own winning, the identity's names first; the identity's counters are shared by its keys", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const externalId = uid("merge");
      const identity = {
        externalId,
        ratelimits: [
          { name: "shared", limit: 2, duration: 60_000 },
          { name: "both", limit: 100, duration: 60_000 },
          { name: "manual", limit: 1, duration: 60_000, autoApply: false },
          { name: "off", limit: 1, duration: 60_000 },
        ],
      };
      expectOk(await h.post("/v2/identities.createIdentity", identity, await admin(h)));
      const a = await createKey(h, apiId, {
        externalId,
        ratelimits: [
          { name: "own", limit: 5, duration: 60_000 },
          { name: "both", limit: 3, duration: 60_000 },
          { name: "off", limit: 1, duration: 60_000, autoApply: false },
          { name: "manual", limit: 7, duration: 60_000 },
        ],
      });
      const b = await createKey(h, apiId, { externalId });
      const limits = (data: Record<string, unknown>) =>
        (data.ratelimits as Array<{ name: string; limit: number; remaining: number; exceeded: boolean }>).map((r) => [
          r.name,
          r.limit,
          r.remaining,
          r.exceeded,
        ]);
      // The identity's names first, in its order (read by name), each with the key's own
      // config where the key has the name ("both" at 3, "manual" applied, "off" not),
      // then the key's other names.
      expect(limits(await verifyKey(h, a.key))).toEqual([
        ["both", 3, 2, false],
        ["manual", 7, 6, false],
        ["shared", 2, 1, false],
        ["own", 5, 4, false],
      ]);
      // The other key: the identity's own limits, "shared" counted with the first key's.
      expect(limits(await verifyKey(h, b.key))).toEqual([
        ["both", 100, 99, false],
        ["off", 1, 0, false],
        ["shared", 2, 0, false],
      ]);
      const refused = await verifyKey(h, a.key);
      expect(refused).toMatchObject({ valid: false, code: "RATE_LIMITED" });
      expect(limits(refused)[2]).toEqual(["shared", 2, 0, true]);
    });
  });

  describe("permissions query", () => {
    it.each<[string, string, string]>([
      ["a granted wildcard covers a sub-permission", "documents.read", "VALID"],
      ["a granted wildcard covers a deeper sub-permission", "documents.folder.read", "VALID"],
      ["AND of covered permissions", "documents.read AND billing.read", "VALID"],
      ["OR with one side covered", "billing.write OR documents.delete", "VALID"],
      ["parentheses", "(billing.write OR billing.read) AND documents.share", "VALID"],
      ["AND binds tighter than OR", "billing.write AND admin OR billing.read", "VALID"],
      ["lower-case operators", "documents.read and billing.read", "VALID"],
      ["a permission the key lacks", "billing.write", "INSUFFICIENT_PERMISSIONS"],
      ["AND with one side missing", "documents.read AND billing.write", "INSUFFICIENT_PERMISSIONS"],
      ["OR with both sides missing", "billing.write OR admin", "INSUFFICIENT_PERMISSIONS"],
      ["a sibling of the wildcard's resource", "documentsX.read", "INSUFFICIENT_PERMISSIONS"],
      ["the literal wildcard string, which the key holds", "documents.*", "VALID"],
      ["a wildcard in the query is literal, not a grant", "billing.*", "INSUFFICIENT_PERMISSIONS"],
    ])("%s: %s -> %s", async (_label, query, code) => {
      const apiId = await createApi(h);
      const { keyId, key } = await createKey(h, apiId, { permissions: ["documents.*", "billing.read"] });
      const data = await verifyKey(h, key, { permissions: query });
      expect(data).toMatchObject({ valid: code === "VALID", code, keyId });
    });

    it("a wildcard granted through a role counts too", async () => {
      const apiId = await createApi(h);
      const role = uid("docs_admin");
      await seedRole(h, role, ["documents.*"]);
      const { key } = await createKey(h, apiId, { roles: [role] });
      expect(await verifyKey(h, key, { permissions: "documents.delete" })).toMatchObject({ valid: true, code: "VALID" });
      expect(await verifyKey(h, key, { permissions: "billing.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    });

    it("the grant * covers every permission", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId, { permissions: ["*"] });
      expect(await verifyKey(h, key, { permissions: "anything.at.all AND more" })).toMatchObject({ valid: true, code: "VALID" });
    });

    it("a key without permissions fails any query", async () => {
      const apiId = await createApi(h);
      const { key } = await createKey(h, apiId);
      expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    });

    it("a denied permission spends neither credits nor rate limit", async () => {
      const apiId = await createApi(h);
      await awayFromWindowEdge(60_000);
      const { keyId, key } = await createKey(h, apiId, {
        permissions: ["documents.read"],
        credits: { remaining: 5 },
        ratelimits: [{ name: "requests", limit: 1, duration: 60_000 }],
      });
      for (let i = 0; i < 3; i++) {
        expect(await verifyKey(h, key, { permissions: "documents.write" })).toMatchObject({ code: "INSUFFICIENT_PERMISSIONS" });
      }
      expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(5);
      expect(await verifyKey(h, key, { permissions: "documents.read" })).toMatchObject({ code: "VALID", credits: 4 });
    });
  });
});
