// Refills happen on UTC dates without any job to run: the first verification in a
// new period sets the balance to the refill amount.
import { describe, expect, it } from "vitest";
import { api, key, verify, withClock } from "../fixtures.js";
import { useHarness } from "../harness.js";

describe("credit refills", () => {
  const h = useHarness();

  const at = <T>(ms: number, fn: () => Promise<T>) => withClock(h, ms, fn);

  it("a daily refill sets the balance to the amount on the next UTC day, once", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 1, refill: { interval: "daily", amount: 3 } } });
    expect(await verify(h, rk, k.key)).toMatchObject({ code: "VALID", credits: 0 });
    expect((await verify(h, rk, k.key)).code).toBe("USAGE_EXCEEDED");
    const tomorrow = (Math.floor(Date.now() / 86_400_000) + 1) * 86_400_000 + 1000;
    await at(tomorrow, async () => {
      // Reads show the due refill before any verification has applied it.
      expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.credits.remaining).toBe(3);
      expect(await verify(h, rk, k.key)).toMatchObject({ code: "VALID", credits: 2 });
      expect(await verify(h, rk, k.key)).toMatchObject({ code: "VALID", credits: 1 });
    });
  });

  it("a monthly refill on day 31 has happened by the last day of next month", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 0, refill: { interval: "monthly", amount: 5, refillDay: 31 } } });
    const now = new Date();
    // The last day of next month, after midnight UTC.
    const lastOfNext = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 2, 0) + 3_600_000;
    expect((await verify(h, rk, k.key)).code).toBe("USAGE_EXCEEDED");
    await at(lastOfNext, async () => {
      expect(await verify(h, rk, k.key)).toMatchObject({ code: "VALID", credits: 4 });
    });
  });
});
