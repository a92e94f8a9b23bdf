import { beforeAll, describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid, expectOk, many } from "../shared/helpers.js";

const rl = (name: string, extra: Record<string, unknown> = {}) => ({ name, limit: 10, duration: 60_000, ...extra });

describe("identities.updateIdentity 400", () => {
  const h = useHarness();
  beforeAll(async () => {
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "upd" }, await admin(h)));
  });

  it.each<[string, Record<string, unknown>, string]>([
    ["identity missing", { meta: {} }, "identity"],
    ["identity empty", { identity: "", meta: {} }, "identity"],
    ["meta null (not nullable)", { identity: "upd", meta: null }, "meta"],
    ["meta not an object", { identity: "upd", meta: "x" }, "meta"],
    ["meta with 101 properties", { identity: "upd", meta: Object.fromEntries(many(101, (i) => [`k${i}`, i])) }, "meta"],
    ["meta over 1 MB", { identity: "upd", meta: { big: "x".repeat(1_048_577) } }, "meta"],
    ["51 ratelimits", { identity: "upd", ratelimits: many(51, (i) => rl(`limit_${i}`)) }, "ratelimits"],
    ["a duplicate ratelimit name", { identity: "upd", ratelimits: [rl("dup_name"), rl("dup_name")] }, "ratelimits[1].name"],
    ["a ratelimit limit of 0", { identity: "upd", ratelimits: [rl("requests", { limit: 0 })] }, "ratelimits[0].limit"],
    ["a ratelimit duration of 500", { identity: "upd", ratelimits: [rl("requests", { duration: 500 })] }, "ratelimits[0].duration"],
    ["ratelimits null", { identity: "upd", ratelimits: null }, "ratelimits"],
    ["an unknown field", { identity: "upd", externalId: "other" }, "externalId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/identities.updateIdentity", body, await admin(h)), field);
  });
});
