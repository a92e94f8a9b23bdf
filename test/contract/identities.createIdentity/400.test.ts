import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid, many } from "../shared/helpers.js";

const rl = (name: string, extra: Record<string, unknown> = {}) => ({ name, limit: 10, duration: 60_000, ...extra });

describe("identities.createIdentity 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["externalId missing", {}, "externalId"],
    ["externalId empty", { externalId: "" }, "externalId"],
    ["externalId with a space", { externalId: "user 1" }, "externalId"],
    ["externalId with a slash", { externalId: "user/1" }, "externalId"],
    ["externalId of 256 characters", { externalId: "e".repeat(256) }, "externalId"],
    ["externalId not a string", { externalId: 42 }, "externalId"],
    ["externalId null", { externalId: null }, "externalId"],
    ["meta not an object", { externalId: "u", meta: [1] }, "meta"],
    ["meta null", { externalId: "u", meta: null }, "meta"],
    ["meta with 101 properties", { externalId: "u", meta: Object.fromEntries(many(101, (i) => [`k${i}`, i])) }, "meta"],
    ["meta over 1 MB", { externalId: "u", meta: { big: "x".repeat(1_048_577) } }, "meta"],
    ["ratelimits not an array", { externalId: "u", ratelimits: {} }, "ratelimits"],
    ["51 ratelimits", { externalId: "u", ratelimits: many(51, (i) => rl(`limit_${i}`)) }, "ratelimits"],
    ["two ratelimits with one name", { externalId: "u", ratelimits: [rl("same"), rl("same")] }, "ratelimits[1].name"],
    ["a ratelimit name of 2 characters", { externalId: "u", ratelimits: [rl("ab")] }, "ratelimits[0].name"],
    ["a ratelimit name of 129 characters", { externalId: "u", ratelimits: [rl("n".repeat(129))] }, "ratelimits[0].name"],
    ["a ratelimit without a name", { externalId: "u", ratelimits: [{ limit: 1, duration: 1000 }] }, "ratelimits[0].name"],
    ["a ratelimit limit of 0", { externalId: "u", ratelimits: [rl("requests", { limit: 0 })] }, "ratelimits[0].limit"],
    ["a negative ratelimit limit", { externalId: "u", ratelimits: [rl("requests", { limit: -1 })] }, "ratelimits[0].limit"],
    ["a ratelimit duration of 999", { externalId: "u", ratelimits: [rl("requests", { duration: 999 })] }, "ratelimits[0].duration"],
    ["a ratelimit limit as a string", { externalId: "u", ratelimits: [rl("requests", { limit: "10" })] }, "ratelimits[0].limit"],
    ["a ratelimit limit beyond 2^53", { externalId: "u", ratelimits: [rl("requests", { limit: 2 ** 63 })] }, "ratelimits[0].limit"],
    ["autoApply not a boolean", { externalId: "u", ratelimits: [rl("requests", { autoApply: "yes" })] }, "ratelimits[0].autoApply"],
    ["an unknown ratelimit field", { externalId: "u", ratelimits: [rl("requests", { cost: 1 })] }, "cost"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/identities.createIdentity", body, await admin(h)), field);
  });

  it("names every offending field at once", async () => {
    const res = await h.post("/v2/identities.createIdentity", { externalId: "a b", ratelimits: [rl("x")] }, await admin(h));
    expectInvalid(h, res, "externalId");
    expectInvalid(h, res, "ratelimits[0].name");
  });

  it("names that differ only by trailing spaces count as duplicates (the database would merge them)", async () => {
    const res = await h.post("/v2/identities.createIdentity", { externalId: "pad", ratelimits: [rl("abc"), rl("abc ")] }, await admin(h));
    expectInvalid(h, res, "ratelimits[1].name");
  });

  it("validates before it checks the permission", async () => {
    const rk = await h.rootKey(["identity.*.read_identity"]);
    const res = await h.post("/v2/identities.createIdentity", { externalId: "" }, rk);
    expect(res.status).toBe(400);
  });
});
