import { describe, expect, it } from "vitest";
import { api, expectError, expectInvalid, key } from "../../fixtures.js";
import { useHarness } from "../../harness.js";

describe("keys.updateKey 400/403/404", () => {
  const h = useHarness();

  it.each([
    ["name too long", { name: "n".repeat(256) }, "name"],
    ["externalId with a space", { externalId: "a b" }, "externalId"],
    ["meta not an object", { meta: [1] }, "meta"],
    ["expires beyond the maximum", { expires: 4102444800001 }, "expires"],
    ["negative credits", { credits: { remaining: -1 } }, "credits.remaining"],
    ["daily refill with a refillDay", { credits: { remaining: 1, refill: { interval: "daily", amount: 1, refillDay: 3 } } }, "refillDay"],
    ["enabled null", { enabled: null }, "enabled"],
    ["ratelimits null", { ratelimits: null }, "ratelimits"],
    [
      "duplicate rate-limit names",
      {
        ratelimits: [
          { name: "abc", limit: 1, duration: 1000 },
          { name: "abc", limit: 2, duration: 1000 },
        ],
      },
      "ratelimits[1].name",
    ],
    ["an unknown field", { colour: "red" }, "colour"],
  ])("%s -> 400 naming the field", async (_label, fields, field) => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    expectInvalid(h, await h.post("/v2/keys.updateKey", { keyId: k.keyId, ...fields }, rk), field);
  });

  it("a refill on an unlimited key -> 400 naming credits.remaining", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    expectInvalid(h, await h.post("/v2/keys.updateKey", { keyId: k.keyId, credits: { refill: { interval: "daily", amount: 5 } } }, rk), "credits.remaining");
  });

  it("403 without update_key, naming the permission", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    const res = await h.post("/v2/keys.updateKey", { keyId: k.keyId, name: "x" }, await h.rootKey(["apis.*.read_key"]));
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain("update_key");
  });

  it("404 for an unknown key, a deleted key and another workspace's key", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    expectError(h, await h.post("/v2/keys.updateKey", { keyId: "key_missing000", name: "x" }, rk), 404, "err:svc:data:key_not_found");
    const stranger = await h.rootKey(["*"], "other-workspace");
    expectError(h, await h.post("/v2/keys.updateKey", { keyId: k.keyId, name: "x" }, stranger), 404, "err:svc:data:key_not_found");
    await h.post("/v2/keys.deleteKey", { keyId: k.keyId }, rk);
    expectError(h, await h.post("/v2/keys.updateKey", { keyId: k.keyId, name: "x" }, rk), 404, "err:svc:data:key_not_found");
  });

  it("404 role_not_found for a role that does not exist, and nothing changes", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { name: "kept" });
    const res = await h.post("/v2/keys.updateKey", { keyId: k.keyId, name: "changed", roles: ["ghost"] }, rk);
    expectError(h, res, 404, "err:svc:data:role_not_found");
    expect(res.body.error.detail).toContain("ghost");
    expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.name).toBe("kept");
  });
});
