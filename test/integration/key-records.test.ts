// A key's record as the verification miss path reads it (by hash: the key and
// its relations in one statement) is the record getKey's path reads (by id: the
// key, then its relations), relation for relation: roles and limits in name
// order, permissions direct and through roles, the live identity with its meta
// and limits; keys of deleted APIs and deleted keys are not found.
import { describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { findLiveKeyById, findLiveKeysByHashes } from "../../src/storage/keys.js";
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

  it("one hash reads alone (the prepared statement of a single miss)", async () => {
    const apiId = await createApi(h);
    const k = await createKey(h, apiId, { permissions: ["one.perm"], ratelimits: [{ name: "only", limit: 1, duration: 1_000 }] });
    const found = await findLiveKeysByHashes(h.db.pool, [hashKey(k.key)]);
    expect(found.get(hashKey(k.key))).toEqual(await findLiveKeyById(h.db.pool, h.workspaceId, k.keyId));
    expect(found.get(hashKey(k.key))?.permissions).toEqual(["one.perm"]);
  });
});
