// AnalyticsRecorder without a database: how it cuts batches, waits out an
// outage with every event kept, and drops only the one event a database
// refuses for good (the rest of its batch still written).
import { describe, expect, it } from "vitest";
import type { RatelimitEvent, VerificationEvent } from "../../storage/analytics.js";
import { AnalyticsRecorder } from "./recorder.js";

const event = (n: number, tags: string[] = []): VerificationEvent => ({
  requestId: `req_${n}`,
  time: 1_700_000_000_000 + n,
  workspaceId: "ws_1",
  keySpaceId: "ks_1",
  apiId: "api_1",
  keyId: `key_${n}`,
  identityId: "",
  externalId: "",
  outcome: "VALID",
  region: "local",
  tags,
  spentCredits: 0,
});

function recorder(write: (v: VerificationEvent[], r: RatelimitEvent[]) => Promise<void>, opts = {}) {
  const errors: unknown[] = [];
  const drops: number[] = [];
  const rec = new AnalyticsRecorder(write, (err) => errors.push(err), { onDrop: (n) => drops.push(n), ...opts });
  return { rec, errors, drops };
}

describe("AnalyticsRecorder", () => {
  it("cuts batches by count and by estimated bytes, in order", async () => {
    const batches: string[][] = [];
    const { rec } = recorder(async (v) => void batches.push(v.map((e) => e.requestId)), { batchSize: 3, batchBytes: 40_000 });
    for (let i = 0; i < 5; i++) rec.verification(event(i));
    // Two events with 20 tags of 512 characters: each is over 40,000 estimated bytes, so each goes alone.
    const big = Array.from({ length: 20 }, (_, i) => `${i}`.padEnd(512, "x"));
    rec.verification(event(5, big));
    rec.verification(event(6, big));
    await rec.flush();
    expect(batches).toEqual([["req_0", "req_1", "req_2"], ["req_3", "req_4"], ["req_5"], ["req_6"]]);
    expect(rec.pendingRows).toBe(0);
  });

  it("by default writes a backlog 500 events at a time: a batch's SQL is built while every request waits", async () => {
    const sizes: number[] = [];
    const { rec } = recorder(async (v) => void sizes.push(v.length));
    for (let i = 0; i < 1_200; i++) rec.verification(event(i));
    await rec.flush();
    expect(sizes).toEqual([500, 500, 200]);
  });

  it("counts a batch by its tuples: events of a few keys go 2,000 at a time, a new tuple past 500 waits for the next", async () => {
    const batches: Array<{ v: number; r: number; keys: number }> = [];
    const { rec } = recorder(async (v, r) => void batches.push({ v: v.length, r: r.length, keys: new Set(v.map((e) => e.keyId)).size }));
    const hot = (n: number, key: string, extra: Partial<VerificationEvent> = {}): VerificationEvent => ({ ...event(n), keyId: key, ...extra });
    // 4,500 verifications of two keys, each VALID or not: four tuples.
    for (let i = 0; i < 4_500; i++) rec.verification(hot(i, `key_${i % 2}`, i % 3 === 0 ? { outcome: "RATE_LIMITED" } : {}));
    await rec.flush();
    expect(batches).toEqual([
      { v: 2_000, r: 0, keys: 2 },
      { v: 2_000, r: 0, keys: 2 },
      { v: 500, r: 0, keys: 2 },
    ]);
    // Tags are part of a tuple; rate-limit checks' namespace and identifier are theirs.
    batches.length = 0;
    for (let i = 0; i < 498; i++) rec.verification(hot(i, "key_tagged", { tags: [`n=${i % 3}`] }));
    for (let i = 0; i < 10; i++) rec.verification(event(10_000 + i)); // keys seen once: a tuple each
    for (let i = 0; i < 300; i++)
      rec.ratelimit({ requestId: `req_rl_${i}`, time: 0, workspaceId: "ws_1", namespaceId: "ns_1", identifier: `u${i % 2}`, passed: true });
    await rec.flush();
    // 3 tuples of tagged events, then room for 497 more: the 10 new keys, then the checks' two.
    expect(batches).toEqual([{ v: 508, r: 300, keys: 11 }]);
    batches.length = 0;
    for (let i = 0; i < 600; i++) rec.verification(event(20_000 + i));
    await rec.flush();
    expect(batches.map((b) => b.v)).toEqual([500, 100]);
  });

  it("takes the events of its tuples from past a new tuple it has no room for; that one waits, in order, for the next batch", async () => {
    const batches: string[][] = [];
    const { rec } = recorder(
      async (v, r) => void batches.push([...v.map((e) => `${e.keyId}/${e.requestId}`), ...r.map((e) => `${e.identifier}/${e.requestId}`)]),
      {
        batchSize: 3,
      },
    );
    const of = (n: number, key: string): VerificationEvent => ({ ...event(n), keyId: key });
    ["a", "b", "c", "d", "a", "b", "e", "c", "a"].forEach((key, n) => void rec.verification(of(n, key)));
    // Rate-limit checks count toward the same three tuples: the batch has none left for them.
    rec.ratelimit({ requestId: "req_rl", time: 0, workspaceId: "ws_1", namespaceId: "ns_1", identifier: "u", passed: true });
    await rec.flush();
    expect(batches).toEqual([
      ["a/req_0", "b/req_1", "c/req_2", "a/req_4", "b/req_5", "c/req_7", "a/req_8"],
      ["d/req_3", "e/req_6", "u/req_rl"],
    ]);
    expect(rec.pendingRows).toBe(0);
  });

  it("leaves at most 2,000 events for later while it takes a batch, so that a backlog of keys seen once is not searched whole", async () => {
    const firsts: string[][] = [];
    const { rec } = recorder(async (v) => void firsts.push(v.map((e) => e.keyId)), { batchSize: 1, minGapMs: 0 });
    const of = (n: number, key: string): VerificationEvent => ({ ...event(n), keyId: key });
    // 1,999 keys seen once between two events of key x: the second joins the first's batch.
    rec.verification(of(0, "x"));
    for (let n = 1; n < 2_000; n++) rec.verification(of(n, `once_${n}`));
    rec.verification(of(2_000, "x"));
    await rec.flush();
    expect(firsts[0]).toEqual(["x", "x"]);
    expect(firsts).toHaveLength(2_000);
    // 2,001 between them: the search stops before the second, which goes in its own turn.
    firsts.length = 0;
    rec.verification(of(0, "y"));
    for (let n = 1; n <= 2_001; n++) rec.verification(of(n, `once_${n}`));
    rec.verification(of(2_002, "y"));
    await rec.flush();
    expect(firsts[0]).toEqual(["y"]);
    expect(firsts.at(-1)).toEqual(["y"]);
    expect(firsts).toHaveLength(2_003);
  });

  it("keeps every event through an outage and writes them, in order, once the database answers", async () => {
    let down = true;
    const written: string[] = [];
    const { rec, errors, drops } = recorder(async (v) => {
      if (down) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      written.push(...v.map((e) => e.requestId));
    });
    for (let i = 0; i < 4; i++) rec.verification(event(i));
    await rec.flush();
    await rec.flush();
    expect(rec.pendingRows).toBe(4);
    expect(errors).toHaveLength(2);
    down = false;
    rec.verification(event(4));
    await rec.flush();
    expect(written).toEqual(["req_0", "req_1", "req_2", "req_3", "req_4"]);
    expect(drops).toEqual([]);
  });

  it("drops only the event the database refuses for good; the rest of its batch is written", async () => {
    const written: string[] = [];
    const { rec, errors, drops } = recorder(async (v) => {
      if (v.some((e) => e.requestId === "req_2")) throw Object.assign(new Error("Data too long for column"), { errno: 1406 });
      written.push(...v.map((e) => e.requestId));
    });
    for (let i = 0; i < 6; i++) rec.verification(event(i));
    await rec.flush();
    expect(written.sort()).toEqual(["req_0", "req_1", "req_3", "req_4", "req_5"]);
    expect(drops).toEqual([1]);
    expect(rec.dropped).toBe(1);
    expect(errors).toHaveLength(1);
    expect(rec.pendingRows).toBe(0);
  });

  it("splits a refused batch of more events than batchSize down to the one it drops: one hot key's 1,200", async () => {
    const written: string[] = [];
    let tries = 0;
    const { rec, drops } = recorder(async (v) => {
      if (++tries > 100) throw new Error("the same refused batch, again and again");
      if (v.some((e) => e.requestId === "req_700")) throw Object.assign(new Error("Incorrect string value"), { errno: 1366 });
      written.push(...v.map((e) => e.requestId));
    });
    for (let i = 0; i < 1_200; i++) rec.verification({ ...event(i), keyId: "key_hot" });
    await rec.flush();
    expect(written).toHaveLength(1_199);
    expect(written).not.toContain("req_700");
    expect(drops).toEqual([1]);
    expect(rec.pendingRows).toBe(0);
  });

  it("drops the refused event itself, not what was recorded while it was written, nor an event of the other kind", async () => {
    const written: string[] = [];
    let rec!: AnalyticsRecorder;
    const made = recorder(async (v, r) => {
      if ([...v, ...r].some((e) => e.requestId === "req_bad")) {
        // Recorded while the refused batch was at the database.
        for (let i = 0; i < 3; i++) rec.verification(event(i));
        throw Object.assign(new Error("Data too long for column"), { errno: 1406 });
      }
      written.push(...v.map((e) => e.requestId), ...r.map((e) => e.requestId));
    });
    rec = made.rec;
    rec.ratelimit({ requestId: "req_bad", time: 0, workspaceId: "ws_1", namespaceId: "ns_1", identifier: "u", passed: true });
    await rec.flush();
    expect(written.sort()).toEqual(["req_0", "req_1", "req_2"]);
    expect(rec.dropped).toBe(1);
    expect(rec.pendingRows).toBe(0);
  });

  it("holds at most maxPending events and maxPendingBytes; beyond, new ones are dropped and counted", async () => {
    const { rec, drops } = recorder(async () => undefined, { maxPending: 3, maxPendingBytes: 1_000_000 });
    for (let i = 0; i < 5; i++) rec.verification(event(i));
    expect(rec.pendingRows).toBe(3);
    expect(rec.dropped).toBe(2);
    await rec.flush();
    expect(drops).toEqual([2]);
    // An event with 20 tags of 512 characters is estimated at ~21 KB held.
    const bytes = recorder(async () => undefined, { maxPending: 1_000, maxPendingBytes: 20_000 });
    const big = Array.from({ length: 20 }, () => "t".repeat(512));
    for (let i = 0; i < 5; i++) bytes.rec.verification(event(i, big));
    expect(bytes.rec.pendingRows).toBe(1);
    expect(bytes.rec.dropped).toBe(4);
  });

  it("bounds memory by what an event holds, not by the SQL it will become", () => {
    // 1,000 events without tags hold ~200 KB; their SQL would be ~1.5 MB.
    const { rec } = recorder(async () => undefined, { maxPending: 10_000, maxPendingBytes: 210_000 });
    for (let i = 0; i < 1_000; i++) rec.verification(event(i));
    expect(rec.pendingRows).toBe(1_000);
    expect(rec.dropped).toBe(0);
    // Tags count: 20 of 512 characters (~21 KB held) take it over the bound, so the next one is dropped.
    const tags = Array.from({ length: 20 }, () => "t".repeat(512));
    rec.verification(event(1_000, tags));
    rec.verification(event(1_001));
    expect(rec.pendingRows).toBe(1_001);
    expect(rec.dropped).toBe(1);

    // A rate-limit check's identifier is the client's: 2,000 characters hold ~4 KB.
    const limits = recorder(async () => undefined, { maxPending: 10_000, maxPendingBytes: 10_000 });
    const check = (n: number): RatelimitEvent => ({
      requestId: `req_${n}`,
      time: 1_700_000_000_000,
      workspaceId: "ws_1",
      namespaceId: "ns_1",
      identifier: "u".repeat(2_000),
      passed: true,
    });
    for (let i = 0; i < 5; i++) limits.rec.ratelimit(check(i));
    expect(limits.rec.pendingRows).toBe(3);
    expect(limits.rec.dropped).toBe(2);
  });

  it("stop(until) tries a refused batch again until the deadline; stop() tries once", async () => {
    let refusals = 3;
    const written: string[] = [];
    const write = async (v: VerificationEvent[]) => {
      if (refusals-- > 0) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      written.push(...v.map((e) => e.requestId));
    };
    const once = recorder(write);
    for (let i = 0; i < 3; i++) once.rec.verification(event(i));
    await once.rec.stop();
    expect(once.rec.pendingRows).toBe(3);
    expect(written).toEqual([]);

    refusals = 3;
    const retried = recorder(write);
    for (let i = 0; i < 3; i++) retried.rec.verification(event(i));
    await retried.rec.stop(Date.now() + 5_000, 10);
    expect(written).toEqual(["req_0", "req_1", "req_2"]);
    expect(retried.errors).toHaveLength(3);
    expect(retried.rec.pendingRows).toBe(0);

    refusals = 1_000;
    const late = recorder(write);
    late.rec.verification(event(9));
    const started = Date.now();
    await late.rec.stop(started + 200, 10);
    expect(late.rec.pendingRows).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("paces batches that are not full: the next starts minGapMs after the last was written, with what gathered meanwhile", async () => {
    const batches: Array<{ at: number; ids: string[] }> = [];
    // Each write takes 5 ms; the gap is counted from its end.
    const { rec } = recorder(
      async (v) => {
        batches.push({ at: performance.now(), ids: v.map((e) => e.requestId) });
        await new Promise((resolve) => setTimeout(resolve, 5));
      },
      { minGapMs: 200 },
    );
    rec.verification(event(0));
    await rec.flush(); // the first batch goes at once
    rec.verification(event(1));
    const second = rec.flush();
    // Recorded while the second batch waits: it joins it.
    await new Promise((resolve) => setTimeout(resolve, 10));
    rec.verification(event(2));
    await second;
    expect(batches.map((b) => b.ids)).toEqual([["req_0"], ["req_1", "req_2"]]);
    // Each of the two timers (the write's 5 ms, then the gap) may fire up to a millisecond early by
    // performance.now() (libuv's loop time is read once a turn): 203.5 ms was seen under a loaded suite.
    expect((batches[1]?.at ?? 0) - (batches[0]?.at ?? 0)).toBeGreaterThanOrEqual(5 + 200 - 2);
  });

  it("paces a batch cut by its tuples with fewer than batchEvents left: what gathers meanwhile of its tuples joins it", async () => {
    const batches: Array<{ at: number; keys: string[] }> = [];
    const { rec } = recorder(async (v) => void batches.push({ at: performance.now(), keys: v.map((e) => e.keyId) }), { batchSize: 3, minGapMs: 200 });
    const of = (n: number, key: string): VerificationEvent => ({ ...event(n), keyId: key });
    ["a", "b", "c", "d", "e", "f"].forEach((key, n) => void rec.verification(of(n, key)));
    const flushed = rec.flush();
    await new Promise((resolve) => setTimeout(resolve, 20));
    rec.verification(of(6, "d"));
    await flushed;
    expect(batches.map((b) => b.keys)).toEqual([
      ["a", "b", "c"],
      ["d", "e", "f", "d"],
    ]);
    // Timers may fire up to a millisecond early by performance.now() (see the test above).
    expect((batches[1]?.at ?? 0) - (batches[0]?.at ?? 0)).toBeGreaterThanOrEqual(200 - 2);
  });

  it("does not pace a backlog (batchEvents events waiting), or what is left at stop()", async () => {
    const sizes: number[] = [];
    // An hour's gap: a batch that waited would outlast the test's timeout.
    const { rec } = recorder(async (v) => void sizes.push(v.length), { batchSize: 3, batchEvents: 3, minGapMs: 3_600_000 });
    for (let i = 0; i < 6; i++) rec.verification(event(i));
    await rec.flush();
    expect(sizes).toEqual([3, 3]);
    rec.verification(event(6));
    await rec.stop();
    expect(sizes).toEqual([3, 3, 1]);
    expect(rec.pendingRows).toBe(0);
  });
});
