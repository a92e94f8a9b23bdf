// The write-behind of verification counts, against a flush function that keeps
// what it is given (the database side is in test/integration/verification-usage.test.ts).
import { describe, expect, it } from "vitest";
import type { UsageCount } from "../../storage/usage.js";
import { VerificationCounts } from "./verification-counts.js";

const T = Date.UTC(2026, 0, 1, 12, 0, 0);

/** failCalls: which calls of the flush function (1-based) fail, as a database outage would. */
function recorder(opts: { failCalls?: number[]; maxPending?: number; batchSize?: number } = {}) {
  const written: UsageCount[][] = [];
  const errors: number[] = [];
  const drops: number[] = [];
  let calls = 0;
  const counts = new VerificationCounts(
    async (rows) => {
      if (opts.failCalls?.includes(++calls)) throw new Error("database down");
      written.push(rows.map((r) => ({ ...r })));
    },
    (_err, pending) => errors.push(pending),
    { maxPending: opts.maxPending, batchSize: opts.batchSize, onDrop: (n) => drops.push(n) },
  );
  const all = () => written.flat();
  const total = (pred: (r: UsageCount) => boolean) =>
    all()
      .filter(pred)
      .reduce((n, r) => n + r.count, 0);
  return { counts, written, errors, drops, all, total };
}

describe("VerificationCounts", () => {
  it("adds up verifications per key, minute and outcome, with the API's total beside them", async () => {
    const r = recorder();
    r.counts.recordKey("ws1", "api1", "key1", T + 1_000, "VALID");
    r.counts.recordKey("ws1", "api1", "key1", T + 59_999, "VALID");
    r.counts.recordKey("ws1", "api1", "key1", T + 60_000, "VALID");
    r.counts.recordKey("ws1", "api1", "key1", T + 2_000, "RATE_LIMITED");
    r.counts.recordKey("ws1", "api1", "key2", T + 3_000, "VALID");
    r.counts.recordWorkspace("ws1", T + 4_000, "NOT_FOUND");
    r.counts.recordWorkspace("ws1", T + 5_000, "NOT_FOUND");
    expect(r.counts.pendingRows).toBe(8);
    await r.counts.flush();
    expect(r.counts.pendingRows).toBe(0);
    const rows = r.all().map((x) => `${x.apiId}|${x.keyId}|${x.bucketStart - T}|${x.outcome}=${x.count}`);
    expect(rows.sort()).toEqual(
      [
        "api1|key1|0|VALID=2",
        "api1|key1|60000|VALID=1",
        "api1|key1|0|RATE_LIMITED=1",
        "api1|key2|0|VALID=1",
        "api1||0|VALID=3",
        "api1||60000|VALID=1",
        "api1||0|RATE_LIMITED=1",
        "||0|NOT_FOUND=2",
      ].sort(),
    );
    expect(r.all().every((x) => x.workspaceId === "ws1")).toBe(true);
    // Nothing new, nothing written.
    await r.counts.flush();
    expect(r.written).toHaveLength(1);
  });

  it("writes in batches of at most batchSize rows", async () => {
    const r = recorder({ batchSize: 3 });
    for (let i = 0; i < 4; i++) r.counts.recordKey("ws", "api", `key${i}`, T, "VALID");
    await r.counts.flush();
    expect(r.written.map((b) => b.length)).toEqual([3, 2]);
    expect(r.total((x) => x.keyId === "")).toBe(4);
  });

  it("keeps the counts of a failed flush, and of the batches after it, for the next flush", async () => {
    const r = recorder({ failCalls: [1] });
    r.counts.recordKey("ws", "api", "key", T, "VALID");
    r.counts.recordKey("ws", "api", "key", T, "VALID");
    await r.counts.flush();
    expect(r.written).toHaveLength(0);
    expect(r.errors).toEqual([2]);
    expect(r.counts.pendingRows).toBe(2);
    // Verifications during the outage add to the kept rows.
    r.counts.recordKey("ws", "api", "key", T, "VALID");
    await r.counts.flush();
    expect(r.total((x) => x.keyId === "key")).toBe(3);
    expect(r.total((x) => x.keyId === "")).toBe(3);
    expect(r.counts.pendingRows).toBe(0);
  });

  it("a failure part-way keeps only what was not written", async () => {
    // 5 rows (three keys' and the API's two outcomes): the first batch is written, then the database goes away.
    const r = recorder({ batchSize: 2, failCalls: [2] });
    for (let i = 0; i < 3; i++) r.counts.recordKey("ws", "api", `key${i}`, T, i === 0 ? "DISABLED" : "VALID");
    await r.counts.flush();
    expect(r.all()).toHaveLength(2);
    expect(r.counts.pendingRows).toBe(3);
    await r.counts.flush();
    expect(r.all()).toHaveLength(5);
    expect(r.total((x) => x.keyId === "")).toBe(3);
    expect(r.total((x) => x.keyId !== "")).toBe(3);
  });

  it("holds at most maxPending rows: counts for new rows beyond it are dropped, counted and reported", async () => {
    const r = recorder({ maxPending: 3 });
    r.counts.recordKey("ws", "api", "key1", T, "VALID"); // 2 rows
    r.counts.recordKey("ws", "api", "key2", T, "VALID"); // key2's row fits, the API row exists
    r.counts.recordKey("ws", "api", "key3", T, "VALID"); // key3's row is dropped
    r.counts.recordKey("ws", "api", "key1", T, "VALID"); // existing rows still count
    expect(r.counts.pendingRows).toBe(3);
    expect(r.counts.dropped).toBe(1);
    await r.counts.flush();
    expect(r.drops).toEqual([1]);
    expect(r.total((x) => x.keyId === "key1")).toBe(2);
    expect(r.total((x) => x.keyId === "key3")).toBe(0);
    expect(r.total((x) => x.keyId === "")).toBe(4);
    // Once written there is room again.
    r.counts.recordKey("ws", "api", "key3", T, "VALID");
    await r.counts.flush();
    expect(r.total((x) => x.keyId === "key3")).toBe(1);
    expect(r.drops).toEqual([1]);
  });

  it("stop() writes what is pending", async () => {
    const r = recorder();
    r.counts.start();
    r.counts.recordWorkspace("ws", T, "NOT_FOUND");
    await r.counts.stop();
    expect(r.all()).toEqual([{ workspaceId: "ws", apiId: "", keyId: "", bucketStart: T, outcome: "NOT_FOUND", count: 1 }]);
  });
});
