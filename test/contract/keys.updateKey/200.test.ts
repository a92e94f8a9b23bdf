import { describe, expect, it } from "vitest";
import { api, key, verify } from "../../fixtures.js";
import { useHarness } from "../../harness.js";

describe("keys.updateKey 200", () => {
  const h = useHarness();

  it("changes only the fields sent, and the next verification sees them", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { name: "before", meta: { a: 1 }, credits: { remaining: 5 } });
    expect(await verify(h, rk, k.key)).toMatchObject({ name: "before", meta: { a: 1 }, credits: 4 });

    const res = await h.post("/v2/keys.updateKey", { keyId: k.keyId, name: "after", meta: { b: 2 } }, rk);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({});
    const data = await verify(h, rk, k.key);
    expect(data).toMatchObject({ name: "after", credits: 3 });
    expect(data.meta).toEqual({ b: 2 });
  });

  it("null clears name, meta, expires and credits (unlimited, refill cleared)", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, {
      name: "n",
      meta: { a: 1 },
      expires: Date.now() + 60_000,
      credits: { remaining: 5, refill: { interval: "daily", amount: 5 } },
    });
    const res = await h.post("/v2/keys.updateKey", { keyId: k.keyId, name: null, meta: null, expires: null, credits: null }, rk);
    expect(res.status, res.text).toBe(200);
    const got = await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk);
    expect(got.body.data.name).toBeUndefined();
    expect(got.body.data.meta).toBeUndefined();
    expect(got.body.data.expires).toBeUndefined();
    expect(got.body.data.credits).toBeUndefined();
    expect((await verify(h, rk, k.key)).credits).toBeUndefined();
  });

  it("enabled:false makes the very next verification DISABLED, and true restores it", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    expect((await verify(h, rk, k.key)).code).toBe("VALID");
    await h.post("/v2/keys.updateKey", { keyId: k.keyId, enabled: false }, rk);
    expect((await verify(h, rk, k.key)).code).toBe("DISABLED");
    await h.post("/v2/keys.updateKey", { keyId: k.keyId, enabled: true }, rk);
    expect((await verify(h, rk, k.key)).code).toBe("VALID");
  });

  it("replaces rate limits by name, keeping the id of a name that stays", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, {
      ratelimits: [
        { name: "keep", limit: 10, duration: 60_000 },
        { name: "drop", limit: 10, duration: 60_000 },
      ],
    });
    const before = (await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.ratelimits as Array<{ id: string; name: string }>;
    await h.post(
      "/v2/keys.updateKey",
      {
        keyId: k.keyId,
        ratelimits: [
          { name: "keep", limit: 1, duration: 60_000 },
          { name: "new", limit: 5, duration: 1000 },
        ],
      },
      rk,
    );
    const after = (await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.ratelimits as Array<{ id: string; name: string; limit: number }>;
    expect(after.map((r) => r.name).sort()).toEqual(["keep", "new"]);
    expect(after.find((r) => r.name === "keep")).toMatchObject({ id: before.find((r) => r.name === "keep")?.id, limit: 1 });
    const empty = await h.post("/v2/keys.updateKey", { keyId: k.keyId, ratelimits: [] }, rk);
    expect(empty.status).toBe(200);
    expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.ratelimits).toBeUndefined();
  });

  it("links an identity by externalId (creating it) and unlinks with null", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId);
    await h.post("/v2/keys.updateKey", { keyId: k.keyId, externalId: "user_42" }, rk);
    expect((await verify(h, rk, k.key)).identity).toMatchObject({ externalId: "user_42" });
    await h.post("/v2/keys.updateKey", { keyId: k.keyId, externalId: null }, rk);
    expect((await verify(h, rk, k.key)).identity).toBeUndefined();
  });

  it("replaces permissions, and sending the same body twice gives the same state", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { permissions: ["a.read"] });
    for (let i = 0; i < 2; i++) {
      const res = await h.post("/v2/keys.updateKey", { keyId: k.keyId, permissions: ["b.read", "b.write"] }, rk);
      expect(res.status, res.text).toBe(200);
    }
    expect((await verify(h, rk, k.key)).permissions).toEqual(["b.read", "b.write"]);
  });
});
