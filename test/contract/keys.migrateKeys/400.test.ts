// keys.migrateKeys: the rejected side of every constraint on its fields
// (src/domain/limits.ts) and of keyhold's 1,000-keys bound. A 400 names the
// field, for a key by its index (`keys[3].hash`), and changes nothing.
import { createHash, randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import type { MigrationAlgorithm } from "../../../src/storage/key-migrations.js";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectInvalid, listedKeyIds, many, uid } from "../shared/helpers.js";
import { seedMigration } from "./support.js";

const MAX_EXPIRES = 4_102_444_800_000;
const hash = () => createHash("sha256").update(randomBytes(16)).digest("base64");
const limits = (n: number) => many(n, (i) => ({ name: `limit_${String(i).padStart(3, "0")}`, limit: 1000, duration: 60_000 }));

describe("keys.migrateKeys 400", () => {
  const h = useHarness();
  let migrationId = "";
  beforeAll(async () => {
    migrationId = await seedMigration(h, "sha256");
  });

  // [label, top-level fields replacing those of a valid body, field that must be named]
  const invalidBody: Array<[string, Record<string, unknown>, string]> = [
    ["migrationId missing", { migrationId: undefined }, "migrationId"],
    ["migrationId empty", { migrationId: "" }, "migrationId"],
    ["migrationId of 2 characters", { migrationId: "mi" }, "migrationId"],
    ["migrationId of 256 characters", { migrationId: "m".repeat(256) }, "migrationId"],
    ["migrationId not a string", { migrationId: 5 }, "migrationId"],
    ["migrationId null", { migrationId: null }, "migrationId"],
    ["apiId missing", { apiId: undefined }, "apiId"],
    ["apiId empty", { apiId: "" }, "apiId"],
    ["apiId of 2 characters", { apiId: "ab" }, "apiId"],
    ["apiId of 256 characters", { apiId: "a".repeat(256) }, "apiId"],
    ["apiId with a hyphen", { apiId: "api-1" }, "apiId"],
    ["apiId not a string", { apiId: ["api_1"] }, "apiId"],
    ["keys missing", { keys: undefined }, "keys"],
    ["keys empty", { keys: [] }, "keys"],
    ["1,001 keys (keyhold's bound is 1,000 per request)", { keys: many(1001, () => ({ hash: hash() })) }, "keys"],
    ["keys not an array", { keys: { hash: "abc" } }, "keys"],
    ["keys null", { keys: null }, "keys"],
    ["a key that is not an object", { keys: [{ hash: hash() }, "abc"] }, "keys[1]"],
    ["an unknown field", { color: "blue" }, "color"],
  ];

  // [label, fields of the fourth key (keys[3]) replacing a valid one's, field that must be named]
  const invalidKey: Array<[string, Record<string, unknown>, string]> = [
    ["hash missing", { hash: undefined }, "keys[3].hash"],
    ["hash empty", { hash: "" }, "keys[3].hash"],
    ["hash of 2 characters", { hash: "ab" }, "keys[3].hash"],
    ["hash of 65 characters (no algorithm makes more than 64)", { hash: "a".repeat(65) }, "keys[3].hash"],
    ["hash ending in a space", { hash: `${"a".repeat(40)} ` }, "keys[3].hash"],
    ["hash not a string", { hash: 123 }, "keys[3].hash"],
    ["hash null", { hash: null }, "keys[3].hash"],
    ["name empty", { name: "" }, "keys[3].name"],
    ["name of 256 characters", { name: "n".repeat(256) }, "keys[3].name"],
    ["name not a string", { name: 1 }, "keys[3].name"],
    ["externalId empty", { externalId: "" }, "keys[3].externalId"],
    ["externalId of 256 characters", { externalId: "e".repeat(256) }, "keys[3].externalId"],
    ["externalId with a space", { externalId: "user 1" }, "keys[3].externalId"],
    ["externalId not a string", { externalId: 42 }, "keys[3].externalId"],
    ["meta a string", { meta: "text" }, "keys[3].meta"],
    ["meta an array", { meta: [1] }, "keys[3].meta"],
    ["meta with 101 properties", { meta: Object.fromEntries(many(101, (i) => [`p${i}`, i])) }, "keys[3].meta"],
    ["101 roles", { roles: many(101, (i) => `role_${i}`) }, "keys[3].roles"],
    ["a role of 101 characters", { roles: ["r".repeat(101)] }, "keys[3].roles[0]"],
    ["an empty role", { roles: [""] }, "keys[3].roles[0]"],
    ["a role with a space", { roles: ["bad role"] }, "keys[3].roles[0]"],
    ["roles not an array", { roles: "admin" }, "keys[3].roles"],
    ["1,001 permissions", { permissions: many(1001, (i) => `perm.${i}`) }, "keys[3].permissions"],
    ["a permission of 101 characters", { permissions: ["p".repeat(101)] }, "keys[3].permissions[0]"],
    ["an empty permission", { permissions: [""] }, "keys[3].permissions[0]"],
    ["a permission that is not a string", { permissions: [true] }, "keys[3].permissions[0]"],
    ["expires -1", { expires: -1 }, "keys[3].expires"],
    ["expires 4102444800001", { expires: MAX_EXPIRES + 1 }, "keys[3].expires"],
    ["expires as a string", { expires: "1700000000000" }, "keys[3].expires"],
    ["expires not an integer", { expires: 1.5 }, "keys[3].expires"],
    ["enabled as a string", { enabled: "true" }, "keys[3].enabled"],
    ["enabled null", { enabled: null }, "keys[3].enabled"],
    ["credits null", { credits: null }, "keys[3].credits"],
    ["credits a number", { credits: 10 }, "keys[3].credits"],
    ["credits.remaining negative", { credits: { remaining: -1 } }, "keys[3].credits.remaining"],
    ["a refill without remaining", { credits: { refill: { interval: "daily", amount: 10 } } }, "keys[3].credits.remaining"],
    [
      "a refill interval that is not daily or monthly",
      { credits: { remaining: 1, refill: { interval: "weekly", amount: 10 } } },
      "keys[3].credits.refill.interval",
    ],
    ["a refill amount of 0", { credits: { remaining: 1, refill: { interval: "daily", amount: 0 } } }, "keys[3].credits.refill.amount"],
    ["a refillDay of 32", { credits: { remaining: 1, refill: { interval: "monthly", amount: 5, refillDay: 32 } } }, "keys[3].credits.refill.refillDay"],
    ["51 ratelimits", { ratelimits: limits(51) }, "keys[3].ratelimits"],
    ["a rate limit name of 2 characters", { ratelimits: [{ name: "ab", limit: 1, duration: 1000 }] }, "keys[3].ratelimits[0].name"],
    ["a rate limit without a limit", { ratelimits: [{ name: "requests", duration: 1000 }] }, "keys[3].ratelimits[0].limit"],
    ["a rate limit duration of 999 ms", { ratelimits: [{ name: "requests", limit: 1, duration: 999 }] }, "keys[3].ratelimits[0].duration"],
    ["two rate limits with the same name", { ratelimits: [limits(1)[0], limits(1)[0]] }, "keys[3].ratelimits[1].name"],
    ["an unknown field in a key", { prefix: "sk" }, "keys[3].prefix"],
  ];

  const send = async (apiId: string, fields: Record<string, unknown>) => {
    // The JSON round trip drops `undefined`, so {x: undefined} really omits x.
    const body = JSON.parse(JSON.stringify({ migrationId, apiId, keys: [{ hash: hash() }], ...fields }));
    return h.post("/v2/keys.migrateKeys", body, await admin(h));
  };

  it.each(invalidBody)("%s -> 400 invalid_input naming the field", async (_label, fields, field) => {
    const apiId = await createApi(h);
    expectInvalid(h, await send(apiId, fields), field);
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });

  it.each(invalidKey)("a key with %s -> 400 invalid_input naming it by index, and no key goes in", async (_label, fields, field) => {
    const apiId = await createApi(h);
    const keys = [{ hash: hash() }, { hash: hash() }, { hash: hash() }, { hash: hash(), ...fields }];
    const res = await send(apiId, { keys });
    expectInvalid(h, res, field);
    expect(
      res.body.error.errors.every((e: { location: string }) => e.location.startsWith("body.keys[3]")),
      JSON.stringify(res.body.error.errors),
    ).toBe(true);
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });

  it("several bad keys are each named, and nothing at all is created", async () => {
    const apiId = await createApi(h);
    const [ext, role, perm] = [uid("ext"), uid("role"), uid("perm")];
    const res = await send(apiId, {
      keys: [{ hash: hash(), externalId: ext, roles: [role], permissions: [perm] }, { hash: "x" }, { hash: hash(), expires: -5 }],
    });
    for (const f of ["keys[1].hash", "keys[2].expires"]) expectInvalid(h, res, f);
    expect(await listedKeyIds(h, apiId)).toEqual([]);
    const [rows] = await h.db.pool.query(
      "SELECT (SELECT COUNT(*) FROM identities WHERE external_id = ?) + (SELECT COUNT(*) FROM roles WHERE name = ?) + (SELECT COUNT(*) FROM permissions WHERE slug = ?) AS n",
      [ext, role, perm],
    );
    expect(Number((rows as Array<{ n: number }>)[0]?.n)).toBe(0);
  });

  // [label, the migration's algorithm, keys[1].hash, what the message must say]
  const SEAMAPI = "github.com/seamapi/prefixed-api-key";
  const hex = () => createHash("sha256").update(randomBytes(16)).digest("hex");
  const wrongShape: Array<[string, MigrationAlgorithm, string, RegExp]> = [
    ["sha256: a hex SHA-256", "sha256", hex(), /64 hex characters.*base64 SHA-256 of the whole key \(44 characters\)/],
    ["sha256: hex in upper case", "sha256", hex().toUpperCase(), /64 hex characters.*base64/],
    ["sha256: base64 without its padding", "sha256", hash().slice(0, 43), /43 characters.*base64/],
    ["sha256: base64url", "sha256", `${"-_".repeat(21)}A=`, /44 characters.*base64/],
    ["sha256: a leading space", "sha256", ` ${hash()}`, /whitespace/],
    ["sha256: a trailing newline", "sha256", `${hash()}\n`, /whitespace/],
    ["seamapi: a base64 SHA-256", SEAMAPI, hash(), /base64 SHA-256.*hex SHA-256 of the key's long token \(64 hex characters\)/],
    ["seamapi: 63 hex characters", SEAMAPI, hex().slice(1), /63 characters.*64 hex characters/],
    ["seamapi: a non-hex character", SEAMAPI, `${hex().slice(1)}g`, /64 characters.*hex/],
    ["seamapi: a leading tab", SEAMAPI, `\t${hex().slice(1)}`, /whitespace/],
  ];

  it.each(wrongShape)("%s -> 400 invalid_input naming keys[1].hash and what the algorithm takes; nothing is written", async (_label, algorithm, bad, says) => {
    const apiId = await createApi(h);
    const ok = algorithm === "sha256" ? hash() : hex();
    const [ext, role, perm] = [uid("ext"), uid("role"), uid("perm")];
    const res = await h.post(
      "/v2/keys.migrateKeys",
      { migrationId: await seedMigration(h, algorithm), apiId, keys: [{ hash: ok, externalId: ext, roles: [role], permissions: [perm] }, { hash: bad }] },
      await admin(h),
    );
    expectInvalid(h, res, "keys[1].hash");
    const errors = res.body.error.errors as Array<{ location: string; message: string }>;
    expect(errors.map((e) => e.location)).toEqual(["body.keys[1].hash"]);
    expect(errors[0]?.message).toMatch(says);
    expect(await listedKeyIds(h, apiId)).toEqual([]);
    const [rows] = await h.db.pool.query(
      "SELECT (SELECT COUNT(*) FROM `keys` WHERE hash = ?) + (SELECT COUNT(*) FROM identities WHERE external_id = ?) + (SELECT COUNT(*) FROM roles WHERE name = ?) + (SELECT COUNT(*) FROM permissions WHERE slug = ?) AS n",
      [ok, ext, role, perm],
    );
    expect(Number((rows as Array<{ n: number }>)[0]?.n)).toBe(0);
  });

  it("verifyKey: a migrationId of 257 characters -> 400 naming migrationId", async () => {
    expectInvalid(h, await h.post("/v2/keys.verifyKey", { key: "sk_123", migrationId: "m".repeat(257) }, await admin(h)), "migrationId");
  });
});
