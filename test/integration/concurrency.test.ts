// Exactness under concurrency on one instance (the keys issue's acceptance figures).
import { describe, expect, it } from "vitest";
import { api, key, midMinute, verify, withClock } from "../fixtures.js";
import { useHarness } from "../harness.js";

describe("credits and rate limits under concurrency", () => {
  const h = useHarness();

  it("200 parallel verifications of a key with 50 credits give exactly 50 VALID and leave 0", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 50 } });
    const results = await Promise.all(Array.from({ length: 200 }, () => verify(h, rk, k.key)));
    expect(results.filter((r) => r.code === "VALID")).toHaveLength(50);
    expect(results.filter((r) => r.code === "USAGE_EXCEEDED")).toHaveLength(150);
    expect(results.every((r) => r.credits >= 0)).toBe(true);
    const got = await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk);
    expect(got.body.data.credits.remaining).toBe(0);
  });

  it("100 parallel verifications against 20 per minute give exactly 20 VALID", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    // A fixed clock in the middle of a window keeps the test off the window edge.
    await withClock(h, midMinute(), async () => {
      const k = await key(h, rk, apiId, { ratelimits: [{ name: "per_minute", limit: 20, duration: 60_000 }] });
      const results = await Promise.all(Array.from({ length: 100 }, () => verify(h, rk, k.key)));
      expect(results.filter((r) => r.code === "VALID")).toHaveLength(20);
      expect(results.filter((r) => r.code === "RATE_LIMITED")).toHaveLength(80);
    });
  });

  it("a rate-limited verification spends no credits", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 10 }, ratelimits: [{ name: "tight", limit: 1, duration: 60_000 }] });
    await withClock(h, midMinute(), async () => {
      expect(await verify(h, rk, k.key)).toMatchObject({ code: "VALID", credits: 9 });
      expect((await verify(h, rk, k.key)).code).toBe("RATE_LIMITED");
      expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.credits.remaining).toBe(9);
    });
  });
});
