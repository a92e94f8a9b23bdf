// UsageRecorder without a database: a batch the database refuses is kept for the
// next flush (a later use recorded meanwhile wins), and stop(until) tries again
// until its deadline.
import { describe, expect, it } from "vitest";
import { UsageRecorder } from "./usage.js";

function recorder(refusals: number) {
  const written: Array<Map<string, number>> = [];
  const errors: unknown[] = [];
  let left = refusals;
  const rec = new UsageRecorder(
    async (batch) => {
      if (left-- > 0) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
      written.push(new Map(batch));
    },
    (err) => errors.push(err),
  );
  return { rec, written, errors };
}

describe("UsageRecorder", () => {
  it("keeps a refused batch for the next flush; a use recorded meanwhile is not moved back", async () => {
    const { rec, written, errors } = recorder(1);
    rec.record("key_a", 100);
    rec.record("key_b", 200);
    const first = rec.flush();
    rec.record("key_b", 300);
    await first;
    expect(errors).toHaveLength(1);
    expect(rec.size).toBe(2);
    await rec.flush();
    expect(written).toEqual([
      new Map([
        ["key_b", 300],
        ["key_a", 100],
      ]),
    ]);
    expect(rec.size).toBe(0);
  });

  it("stop(until) tries again until the deadline; stop() tries once", async () => {
    const once = recorder(2);
    once.rec.record("key_a", 1);
    await once.rec.stop();
    expect(once.written).toEqual([]);
    expect(once.rec.size).toBe(1);

    const retried = recorder(2);
    retried.rec.record("key_a", 1);
    await retried.rec.stop(Date.now() + 5_000, 10);
    expect(retried.written).toEqual([new Map([["key_a", 1]])]);
    expect(retried.errors).toHaveLength(2);
  });

  it("counts the batch being written until the database has taken it", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const rec = new UsageRecorder(
      () => gate,
      () => undefined,
    );
    rec.record("key_a", 1);
    rec.record("key_b", 1);
    const flushed = rec.flush();
    await new Promise((r) => setImmediate(r));
    rec.record("key_c", 2);
    expect(rec.size).toBe(3);
    release();
    await flushed;
    expect(rec.size).toBe(1);
  });
});
