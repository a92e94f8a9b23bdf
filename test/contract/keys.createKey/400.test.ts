// keys.createKey: the rejected side of every constraint on createKey's fields
// (src/domain/limits.ts, src/domain/keys/input.ts; the accepted side is in
// 200.test.ts). Each 400 must name the field in error.errors[].location or .message.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, expectInvalid, listedKeyIds, many } from "../shared/helpers.js";

const MAX_EXPIRES = 4_102_444_800_000;
const limits = (n: number) => many(n, (i) => ({ name: `limit_${String(i).padStart(3, "0")}`, limit: 1000, duration: 60_000 }));

describe("keys.createKey 400", () => {
  const h = useHarness();

  // [label, fields replacing the valid base body {apiId}, field that must be named]
  const invalid: Array<[string, Record<string, unknown>, string]> = [
    // apiId: required, 3-255, ^[a-zA-Z0-9_]+$
    ["apiId missing", { apiId: undefined }, "apiId"],
    ["apiId empty", { apiId: "" }, "apiId"],
    ["apiId of 2 characters", { apiId: "ab" }, "apiId"],
    ["apiId of 256 characters", { apiId: "a".repeat(256) }, "apiId"],
    ["apiId with a hyphen", { apiId: "api-123" }, "apiId"],
    ["apiId with a space", { apiId: "api 123" }, "apiId"],
    ["apiId not a string", { apiId: 123 }, "apiId"],
    ["apiId null", { apiId: null }, "apiId"],
    // prefix: 1-16, ^[a-zA-Z0-9_]+$
    ["prefix empty", { prefix: "" }, "prefix"],
    ["prefix of 17 characters", { prefix: "p".repeat(17) }, "prefix"],
    ["prefix with a hyphen", { prefix: "my-prefix" }, "prefix"],
    ["prefix with a dot", { prefix: "my.prefix" }, "prefix"],
    ["prefix not a string", { prefix: 7 }, "prefix"],
    // name: 1-255
    ["name empty", { name: "" }, "name"],
    ["name of 256 characters", { name: "n".repeat(256) }, "name"],
    ["name not a string", { name: { first: "x" } }, "name"],
    // byteLength: integer 16-255
    ["byteLength 15", { byteLength: 15 }, "byteLength"],
    ["byteLength 256", { byteLength: 256 }, "byteLength"],
    ["byteLength 0", { byteLength: 0 }, "byteLength"],
    ["byteLength negative", { byteLength: -16 }, "byteLength"],
    ["byteLength as a string", { byteLength: "16" }, "byteLength"],
    ["byteLength not an integer", { byteLength: 16.5 }, "byteLength"],
    // externalId: 1-255, ^[a-zA-Z0-9_.-]+$
    ["externalId empty", { externalId: "" }, "externalId"],
    ["externalId of 256 characters", { externalId: "e".repeat(256) }, "externalId"],
    ["externalId with a space", { externalId: "user 1" }, "externalId"],
    ["externalId with a slash", { externalId: "user/1" }, "externalId"],
    ["externalId with an @", { externalId: "user@example.com" }, "externalId"],
    ["externalId not a string", { externalId: 42 }, "externalId"],
    // meta: an object
    ["meta a string", { meta: "text" }, "meta"],
    ["meta an array", { meta: [1, 2] }, "meta"],
    ["meta a number", { meta: 5 }, "meta"],
    ["meta with 101 properties", { meta: Object.fromEntries(many(101, (i) => [`p${i}`, i])) }, "meta"],
    ["meta over 1 MB", { meta: { blob: "x".repeat(1_100_000) } }, "meta"],
    // roles: at most 100 items, each 1-100, ^[a-zA-Z0-9_:\-\.\*]+$
    ["101 roles", { roles: many(101, (i) => `role_${i}`) }, "roles"],
    ["a role of 101 characters", { roles: ["r".repeat(101)] }, "roles"],
    ["an empty role", { roles: [""] }, "roles"],
    ["a role with a space and !", { roles: ["bad role!"] }, "roles"],
    ["a role with a slash", { roles: ["a/b"] }, "roles"],
    ["a role that is not a string", { roles: [5] }, "roles"],
    ["roles not an array", { roles: "admin" }, "roles"],
    // permissions: at most 1000 items, each 1-100
    ["1001 permissions", { permissions: many(1001, (i) => `perm.${i}`) }, "permissions"],
    ["a permission of 101 characters", { permissions: ["p".repeat(101)] }, "permissions"],
    ["an empty permission", { permissions: [""] }, "permissions"],
    ["a permission that is not a string", { permissions: [true] }, "permissions"],
    ["permissions not an array", { permissions: "documents.read" }, "permissions"],
    // expires: integer 0-4102444800000
    ["expires -1", { expires: -1 }, "expires"],
    ["expires 4102444800001", { expires: MAX_EXPIRES + 1 }, "expires"],
    ["expires as a string", { expires: "1700000000000" }, "expires"],
    ["expires not an integer", { expires: 1.5 }, "expires"],
    // credits: an object, never null
    ["credits null", { credits: null }, "credits"],
    ["credits a number", { credits: 10 }, "credits"],
    ["credits.remaining negative", { credits: { remaining: -1 } }, "remaining"],
    ["credits.remaining as a string", { credits: { remaining: "10" } }, "remaining"],
    ["a refill without remaining", { credits: { refill: { interval: "daily", amount: 10 } } }, "remaining"],
    ["a refill with remaining null", { credits: { remaining: null, refill: { interval: "daily", amount: 10 } } }, "remaining"],
    ["a refill interval that is not daily or monthly", { credits: { remaining: 1, refill: { interval: "weekly", amount: 10 } } }, "interval"],
    ["a refill amount of 0", { credits: { remaining: 1, refill: { interval: "daily", amount: 0 } } }, "amount"],
    ["a refillDay of 0", { credits: { remaining: 1, refill: { interval: "monthly", amount: 5, refillDay: 0 } } }, "refillDay"],
    ["a refillDay of 32", { credits: { remaining: 1, refill: { interval: "monthly", amount: 5, refillDay: 32 } } }, "refillDay"],
    ["an unknown field inside credits", { credits: { remaining: 1, cost: 1 } }, "cost"],
    // ratelimits: at most 50 items, each {name 3-128, limit >= 1, duration >= 1000}
    ["51 ratelimits", { ratelimits: limits(51) }, "ratelimits"],
    ["ratelimits not an array", { ratelimits: { name: "abc", limit: 1, duration: 1000 } }, "ratelimits"],
    ["a rate limit name of 2 characters", { ratelimits: [{ name: "ab", limit: 1, duration: 1000 }] }, "name"],
    ["a rate limit without a name", { ratelimits: [{ limit: 1, duration: 1000 }] }, "name"],
    ["a rate limit limit of 0", { ratelimits: [{ name: "requests", limit: 0, duration: 1000 }] }, "limit"],
    ["a rate limit duration of 999 ms", { ratelimits: [{ name: "requests", limit: 1, duration: 999 }] }, "duration"],
    ["two rate limits with the same name", { ratelimits: [limits(1)[0], limits(1)[0]] }, "ratelimits"],
    ["autoApply as a string", { ratelimits: [{ name: "requests", limit: 1, duration: 1000, autoApply: "yes" }] }, "autoApply"],
    // enabled / recoverable: booleans
    ["enabled as a string", { enabled: "true" }, "enabled"],
    ["enabled as a number", { enabled: 1 }, "enabled"],
    ["enabled null", { enabled: null }, "enabled"],
    ["recoverable as a string", { recoverable: "false" }, "recoverable"],
    // anything else
    ["an unknown field", { color: "blue" }, "color"],
  ];

  it.each(invalid)("%s -> 400 invalid_input naming the field", async (_label, fields, field) => {
    const apiId = await createApi(h);
    // JSON round trip drops `undefined`, so {apiId: undefined} really omits apiId.
    const body = JSON.parse(JSON.stringify({ apiId, ...fields }));
    expectInvalid(h, await h.post("/v2/keys.createKey", body, await admin(h)), field);
  });

  it("a body naming several bad fields names each of them", async () => {
    const apiId = await createApi(h);
    const res = await h.post("/v2/keys.createKey", { apiId, prefix: "", byteLength: 15, expires: -1 }, await admin(h));
    for (const f of ["prefix", "byteLength", "expires"]) expectInvalid(h, res, f);
  });

  it("invalid JSON and a non-object body -> 400", async () => {
    expectInvalid(h, await h.post("/v2/keys.createKey", '{"apiId":', await admin(h)), "body");
    expectInvalid(h, await h.post("/v2/keys.createKey", "[]", await admin(h)), "body");
  });

  it("a rejected request creates nothing", async () => {
    const apiId = await createApi(h);
    const rk = await admin(h);
    expectInvalid(h, await h.post("/v2/keys.createKey", { apiId, byteLength: 15 }, rk), "byteLength");
    expect(await listedKeyIds(h, apiId)).toEqual([]);
  });
});
