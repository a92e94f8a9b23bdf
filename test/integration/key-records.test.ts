// A key's record as the verification miss path reads it (a batch of hashes) is
// the record getKey's path reads (one id), relation for relation: roles and
// limits in name order, permissions direct and through roles, the live identity
// with its meta and limits; keys of deleted APIs and deleted keys are not found.
// The key row says which relations a key has: a batch of keys with none reads
// in one statement, and a key with one kind reads that kind, nothing lost. A
// batch is one statement prepared at one of a few IN-list lengths. The last use
// is read from keys_last_used and the key row (migrations/0014), except by the
// verification's own lookup (findKeysForVerification), which leaves it out.
import type { RowDataPacket } from "mysql2";
import { describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { findKeysForVerification, findLiveKeyById, findLiveKeysByHashes, touchKeys } from "../../src/storage/keys.js";
import type { Queryable } from "../../src/storage/sql.js";
import { admin, createApi, createKey, expectOk, seedRole } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";

describe("key records by hash and by id", () => {
  const h = useHarness();

  it("a batch of keys with every kind of relation reads the same both ways", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    await seedRole(h, "zeta-role", ["docs.write", "shared.read"]);
    await seedRole(h, "alpha-role", ["billing.read"]);
    expectOk(
      await h.post(
        "/v2/identities.createIdentity",
        {
          externalId: "user-rel-1",
          meta: { plan: "pro", ünïcode: "✓" },
          ratelimits: [
            { name: "z-shared", limit: 50, duration: 60_000 },
            { name: "a-shared", limit: 5, duration: 1_000, autoApply: false },
          ],
        },
        rk,
      ),
    );
    const full = await createKey(h, apiId, {
      name: "full",
      meta: { n: 1 },
      externalId: "user-rel-1",
      roles: ["zeta-role", "alpha-role"],
      permissions: ["shared.read", "direct.only"],
      ratelimits: [
        { name: "zzz", limit: 10, duration: 60_000 },
        { name: "aaa", limit: 3, duration: 1_000, autoApply: false },
      ],
    });
    const plain = await createKey(h, apiId, { name: "plain" });
    const sameIdentity = await createKey(h, apiId, { externalId: "user-rel-1", permissions: ["direct.only"] });
    const gone = await createKey(h, apiId, { roles: ["alpha-role"] });
    expectOk(await h.post("/v2/keys.deleteKey", { keyId: gone.keyId }, rk));
    const otherApi = await createApi(h);
    const ofDeletedApi = await createKey(h, otherApi, { permissions: ["direct.only"] });
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: otherApi }, rk));

    const live = [full, plain, sameIdentity];
    const byHash = await findLiveKeysByHashes(h.db.pool, [...live, gone, ofDeletedApi].map((k) => hashKey(k.key)).concat(hashKey("unknown_key_abc")));
    expect([...byHash.values()].map((d) => d.id).sort()).toEqual(live.map((k) => k.keyId).sort());
    for (const k of live) {
      const byId = await findLiveKeyById(h.db.pool, h.workspaceId, k.keyId);
      expect(byHash.get(hashKey(k.key)), k.keyId).toEqual(byId);
    }
    const record = byHash.get(hashKey(full.key));
    expect(record?.roles).toEqual(["alpha-role", "zeta-role"]);
    expect(record?.permissions).toEqual(["billing.read", "direct.only", "docs.write", "shared.read"]);
    expect(record?.ratelimits.map((l) => [l.name, l.limit, l.duration, l.autoApply])).toEqual([
      ["aaa", 3, 1_000, false],
      ["zzz", 10, 60_000, true],
    ]);
    expect(record?.identity?.externalId).toBe("user-rel-1");
    expect(record?.identity?.meta).toEqual({ plan: "pro", ünïcode: "✓" });
    expect(record?.identity?.ratelimits.map((l) => [l.name, l.limit, l.autoApply])).toEqual([
      ["a-shared", 5, false],
      ["z-shared", 50, true],
    ]);
    expect(byHash.get(hashKey(plain.key))).toMatchObject({ roles: [], permissions: [], ratelimits: [], identity: undefined, meta: undefined });
    expect(byHash.get(hashKey(sameIdentity.key))?.identity?.id).toBe(record?.identity?.id);
  });

  it("a key's last use: kept in keys_last_used, a later time never replaced by an earlier one, the key row's own still read, gone with the key", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    const [a, b] = await Promise.all([createKey(h, apiId), createKey(h, apiId)]);
    const lastUsed = async (k: { keyId: string; key: string }) => {
      const byId = await findLiveKeyById(h.db.pool, h.workspaceId, k.keyId);
      const byHash = (await findLiveKeysByHashes(h.db.pool, [hashKey(k.key)])).get(hashKey(k.key));
      expect(byHash?.lastUsedAt).toBe(byId?.lastUsedAt);
      return byId?.lastUsedAt;
    };
    const stored = async (keyId: string) => {
      const [r] = await h.db.pool.query<RowDataPacket[]>("SELECT last_used_at_m AS t FROM keys_last_used WHERE key_id = ?", [keyId]);
      return r.map((x) => Number(x.t));
    };
    expect(await lastUsed(a)).toBe(0);
    await touchKeys(h.db.pool, new Map([[a.keyId, 2_000_000]]));
    await touchKeys(
      h.db.pool,
      new Map([
        [a.keyId, 1_000_000],
        [b.keyId, 3_000_000],
      ]),
    );
    expect(await stored(a.keyId)).toEqual([2_000_000]);
    expect(await lastUsed(a)).toBe(2_000_000);
    expect(await lastUsed(b)).toBe(3_000_000);
    // Written to the key row by an instance of an earlier version during a rolling upgrade: the later of the two is the key's.
    await h.db.pool.query("UPDATE `keys` SET last_used_at_m = ? WHERE id = ?", [5_000_000, b.keyId]);
    expect(await lastUsed(b)).toBe(5_000_000);
    // The verification's lookup leaves it out, and only it.
    const forVerification = (await findKeysForVerification(h.db.pool, [hashKey(b.key)])).get(hashKey(b.key));
    expect(forVerification).toEqual({ ...(await findLiveKeyById(h.db.pool, h.workspaceId, b.keyId)), lastUsedAt: 0 });
    expectOk(await h.post("/v2/keys.deleteKey", { keyId: a.keyId, permanent: true }, rk));
    expect(await stored(a.keyId)).toEqual([]);
    expect(await stored(b.keyId)).toEqual([3_000_000]);
  });

  it("one hash reads alone (the prepared statement of a single miss)", async () => {
    const apiId = await createApi(h);
    const k = await createKey(h, apiId, { permissions: ["one.perm"], ratelimits: [{ name: "only", limit: 1, duration: 1_000 }] });
    const found = await findLiveKeysByHashes(h.db.pool, [hashKey(k.key)]);
    expect(found.get(hashKey(k.key))).toEqual(await findLiveKeyById(h.db.pool, h.workspaceId, k.keyId));
    expect(found.get(hashKey(k.key))?.permissions).toEqual(["one.perm"]);
  });

  /** The pool, counting the statements sent through it (and of them, the prepared ones). */
  const counting = (): { db: Queryable; statements: () => number; prepared: () => number } => {
    let n = 0;
    let prepared = 0;
    const pool = h.db.pool;
    const db = new Proxy(pool, {
      get(target, prop) {
        const v = Reflect.get(target, prop) as unknown;
        if (typeof v !== "function") return v;
        if (prop === "query" || prop === "execute") {
          return (...args: unknown[]) => {
            n++;
            if (prop === "execute") prepared++;
            return (v as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return (v as (...a: unknown[]) => unknown).bind(target);
      },
    });
    return { db, statements: () => n, prepared: () => prepared };
  };

  it("a batch is read by a statement prepared at one of a few lengths, padded with its first hash", async () => {
    const apiId = await createApi(h);
    const keys = await Promise.all(Array.from({ length: 3 }, (_, i) => createKey(h, apiId, { name: `padded-${i}` })));
    const alone = new Map<string, unknown>();
    for (const k of keys) alone.set(hashKey(k.key), (await findLiveKeysByHashes(h.db.pool, [hashKey(k.key)])).get(hashKey(k.key)));
    // Up to 256 hashes prepared (3 padded to 4, 5 to 8, 17 to 32); 257 and more a plain query, as before.
    for (const [n, prepared] of [
      [3, true],
      [5, true],
      [17, true],
      [256, true],
      [257, false],
      [300, false],
    ] as const) {
      const unknown = Array.from({ length: n - keys.length }, (_, i) => hashKey(`unknown-${n}-${i}`));
      const c = counting();
      const found = await findLiveKeysByHashes(c.db, [...keys.map((k) => hashKey(k.key)), ...unknown]);
      expect([c.statements(), c.prepared()], `${n} hashes`).toEqual([1, prepared ? 1 : 0]);
      expect(found.size, `${n} hashes`).toBe(3);
      for (const [hash, record] of alone) expect(found.get(hash), `${n} hashes`).toEqual(record);
    }
    // On one connection, 40 lengths read twice over prepare at most the 7 lengths up to 64.
    const conn = await h.db.pool.getConnection();
    try {
      const count = async (name: string) => {
        const [r] = await conn.query<RowDataPacket[]>(`SHOW SESSION STATUS LIKE '${name}'`);
        return Number(r[0]?.Value);
      };
      const [prepares, executes] = [await count("Com_stmt_prepare"), await count("Com_stmt_execute")];
      for (let round = 0; round < 2; round++) {
        for (let n = 1; n <= 40; n++) {
          const found = await findLiveKeysByHashes(conn, [hashKey(keys[0]?.key as string), ...Array.from({ length: n - 1 }, (_, i) => hashKey(`none-${i}`))]);
          expect(found.size).toBe(1);
        }
      }
      expect(await count("Com_stmt_execute")).toBe(executes + 80);
      expect(await count("Com_stmt_prepare")).toBeLessThanOrEqual(prepares + 7);
    } finally {
      conn.release();
    }
  });

  it("keys without roles, permissions or limits read in one statement, their identity with them", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "user-no-limits", meta: { tier: 2 } }, rk));
    const plain = await createKey(h, apiId, { name: "plain" });
    const linked = await createKey(h, apiId, { externalId: "user-no-limits" });
    const alsoLinked = await createKey(h, apiId, { externalId: "user-no-limits", meta: { own: true } });
    // Eleven hashes (prepared at 16) and one alone: one statement each.
    const more = await Promise.all(Array.from({ length: 8 }, () => createKey(h, apiId)));
    const c = counting();
    const found = await findLiveKeysByHashes(
      c.db,
      [plain, linked, alsoLinked, ...more].map((k) => hashKey(k.key)),
    );
    expect(c.statements()).toBe(1);
    expect(found.size).toBe(11);
    const alone = await findLiveKeysByHashes(c.db, [hashKey(linked.key)]);
    expect(c.statements()).toBe(2);
    expect(alone.get(hashKey(linked.key))).toEqual(found.get(hashKey(linked.key)));
    for (const k of [plain, linked, alsoLinked]) {
      expect(found.get(hashKey(k.key))).toMatchObject({ id: k.keyId, roles: [], permissions: [], ratelimits: [] });
    }
    expect(found.get(hashKey(plain.key))?.identity).toBeUndefined();
    const identity = found.get(hashKey(linked.key))?.identity;
    expect(identity).toMatchObject({ externalId: "user-no-limits", meta: { tier: 2 }, ratelimits: [] });
    expect(found.get(hashKey(alsoLinked.key))?.identity).toEqual(identity);
    expect(found.get(hashKey(alsoLinked.key))?.meta).toEqual({ own: true });
  });

  it("a key with one kind of relation reads exactly that kind, the others empty", async () => {
    const rk = await admin(h);
    const apiId = await createApi(h);
    await seedRole(h, "only-role", ["via.role"]);
    expectOk(
      await h.post("/v2/identities.createIdentity", { externalId: "user-only-limits", ratelimits: [{ name: "shared", limit: 7, duration: 2_000 }] }, rk),
    );
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "user-deleted" }, rk));
    const roles = await createKey(h, apiId, { roles: ["only-role"] });
    const perms = await createKey(h, apiId, { permissions: ["direct.b", "direct.a"] });
    const limits = await createKey(h, apiId, { ratelimits: [{ name: "own", limit: 3, duration: 1_000 }] });
    const identityLimits = await createKey(h, apiId, { externalId: "user-only-limits" });
    const ofDeletedIdentity = await createKey(h, apiId, { externalId: "user-deleted" });
    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: "user-deleted" }, rk));
    const plain = await createKey(h, apiId);
    const all = [roles, perms, limits, identityLimits, ofDeletedIdentity, plain];
    const c = counting();
    const found = await findLiveKeysByHashes(
      c.db,
      all.map((k) => hashKey(k.key)),
    );
    expect(c.statements()).toBe(2);
    const get = (k: { key: string }) => found.get(hashKey(k.key));
    expect(get(roles)).toMatchObject({ roles: ["only-role"], permissions: ["via.role"], ratelimits: [], identity: undefined });
    expect(get(perms)).toMatchObject({ roles: [], permissions: ["direct.a", "direct.b"], ratelimits: [], identity: undefined });
    expect(get(limits)?.ratelimits.map((l) => [l.name, l.limit, l.duration, l.autoApply])).toEqual([["own", 3, 1_000, true]]);
    expect(get(limits)).toMatchObject({ roles: [], permissions: [], identity: undefined });
    expect(get(identityLimits)).toMatchObject({ roles: [], permissions: [], ratelimits: [] });
    expect(get(identityLimits)?.identity?.ratelimits.map((l) => [l.name, l.limit, l.duration])).toEqual([["shared", 7, 2_000]]);
    expect(get(ofDeletedIdentity)?.identity).toBeUndefined();
    expect(get(plain)).toMatchObject({ roles: [], permissions: [], ratelimits: [], identity: undefined });
    // By id (one key at a time) the same records.
    for (const k of all) expect(get(k), k.keyId).toEqual(await findLiveKeyById(h.db.pool, h.workspaceId, k.keyId));
  });
});
