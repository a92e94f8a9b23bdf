// The SQL of one analytics batch (analyticsBatch): each roll-up's rows must come
// in its primary key's order, so that instances writing the same buckets lock
// them in the same order, and hold every identity and bucket once with its sums.
// The database tests (test/integration/analytics-recording.test.ts) check what
// lands; these check the order and the sums of batches too large to write there.
import { describe, expect, it } from "vitest";
import { analyticsBatch, bucketStart, type RatelimitEvent, ROLLUPS, type VerificationEvent } from "./analytics.js";

/** The rows of an `INSERT ... VALUES (...),(...) [ON DUPLICATE KEY ...]` whose values hold no comma, quote or parenthesis. */
function rowsOf(sql: string): string[][] {
  const values = sql.slice(sql.indexOf(" VALUES (") + " VALUES (".length, sql.includes(") ON DUPLICATE") ? sql.indexOf(") ON DUPLICATE") : -1);
  return values.split("),(").map((row) => row.split(",").map((v) => v.replace(/^'|'$/g, "")));
}

// Binary order, as the utf8mb4_bin columns compare.
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const inOrder = (rows: string[][], keyColumns: number[]): boolean =>
  rows.every((row, i) => {
    if (i === 0) return true;
    const prev = rows[i - 1] as string[];
    for (const c of keyColumns) {
      const d = cmp(prev[c] as string, row[c] as string);
      if (d !== 0) return d < 0;
    }
    return false; // a primary key twice
  });

/** 30 minutes around midnight at the end of a month: every roll-up has buckets on both sides. */
const T0 = Date.UTC(2026, 10, 30, 23, 45);
const AT = (i: number, n: number) => T0 + Math.floor((i * 30 * 60_000) / n);

describe("analyticsBatch: roll-up rows", () => {
  it("keys seen once (the cold path): one row per key and bucket, in primary-key order, counts and credits summed", () => {
    const n = 3_000;
    const events: VerificationEvent[] = Array.from({ length: n }, (_, i) => ({
      requestId: `req_${i}`,
      time: AT(i, n),
      workspaceId: i % 3 === 0 ? "ws_b" : "ws_a",
      keySpaceId: i % 2 === 0 ? "ks_2" : "ks_1",
      apiId: i % 2 === 0 ? "api_2" : "api_1",
      // Not in the order they are verified in.
      keyId: `key_${String((i * 7919) % n).padStart(5, "0")}`,
      identityId: i % 5 === 0 ? "id_1" : "",
      externalId: i % 5 === 0 ? "user_1" : "",
      outcome: i % 4 === 0 ? "RATE_LIMITED" : "VALID",
      region: "local",
      tags: i % 6 === 0 ? ["a=b"] : [],
      spentCredits: i % 3,
    }));
    const statements = analyticsBatch(events, []);
    expect(statements).toHaveLength(1 + ROLLUPS.length);
    expect(rowsOf((statements[0] as { sql: string }).sql)).toHaveLength(n);
    ROLLUPS.forEach((g, r) => {
      const rows = rowsOf((statements[1 + r] as { sql: string }).sql);
      // (time, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, tags, tags_hash, count, spent_credits);
      // primary key (workspace_id, key_space_id, time, key_id, identity_id, outcome, tags_hash).
      expect(inOrder(rows, [1, 2, 0, 4, 5, 7, 9]), `${g}: primary-key order`).toBe(true);
      const buckets = new Map<string, { count: number; credits: number }>();
      for (const e of events) {
        const k = `${e.workspaceId}|${e.keySpaceId}|${bucketStart(e.time, g)}|${e.keyId}|${e.identityId}|${e.outcome}|${e.tags.join()}`;
        const b = buckets.get(k) ?? { count: 0, credits: 0 };
        b.count++;
        b.credits += e.spentCredits;
        buckets.set(k, b);
      }
      expect(rows, `${g}: one row per key and bucket`).toHaveLength(buckets.size);
      expect(rows.reduce((s, row) => s + Number(row[10]), 0)).toBe(n);
      expect(rows.reduce((s, row) => s + Number(row[11]), 0)).toBe(events.reduce((s, e) => s + e.spentCredits, 0));
      // Each row names its own key space's API and its identity's external id.
      for (const row of rows) {
        expect(row[3]).toBe(row[2] === "ks_2" ? "api_2" : "api_1");
        expect(row[6]).toBe(row[5] === "id_1" ? "user_1" : "");
      }
    });
  });

  it("a hot key: one row per bucket, outcome and tags, whatever the number of events", () => {
    const n = 2_000;
    const events: VerificationEvent[] = Array.from({ length: n }, (_, i) => ({
      requestId: `req_${i}`,
      time: AT(i, n),
      workspaceId: "ws_a",
      keySpaceId: "ks_1",
      apiId: "api_1",
      keyId: "key_hot",
      identityId: "",
      externalId: "",
      outcome: i % 2 === 0 ? "VALID" : "USAGE_EXCEEDED",
      region: "local",
      tags: [],
      spentCredits: 1,
    }));
    const [, minute, hour, day, month] = analyticsBatch(events, []).map((s) => rowsOf(s.sql));
    // 30 minutes (two outcomes each), then both sides of midnight on the last day of a month.
    expect(minute).toHaveLength(60);
    for (const rows of [hour, day, month]) {
      expect(rows).toHaveLength(4);
      expect(inOrder(rows as string[][], [1, 2, 0, 4, 5, 7, 9])).toBe(true);
    }
  });

  it("rate limits: one row per namespace, identifier and bucket, in primary-key order", () => {
    const n = 2_500;
    const events: RatelimitEvent[] = Array.from({ length: n }, (_, i) => ({
      requestId: `req_${i}`,
      time: AT(i, n),
      workspaceId: i % 2 === 0 ? "ws_a" : "ws_b",
      namespaceId: i % 3 === 0 ? "ns_2" : "ns_1",
      identifier: `user_${(i * 31) % 1_000}`,
      passed: i % 4 !== 0,
    }));
    const statements = analyticsBatch([], events);
    ROLLUPS.forEach((g, r) => {
      const rows = rowsOf((statements[1 + r] as { sql: string }).sql);
      // (time, workspace_id, namespace_id, identifier, passed, total); primary key (workspace_id, namespace_id, time, identifier).
      expect(inOrder(rows, [1, 2, 0, 3]), `${g}: primary-key order`).toBe(true);
      const buckets = new Set(events.map((e) => `${e.workspaceId}|${e.namespaceId}|${bucketStart(e.time, g)}|${e.identifier}`));
      expect(rows).toHaveLength(buckets.size);
      expect(rows.reduce((s, row) => s + Number(row[5]), 0)).toBe(n);
      expect(rows.reduce((s, row) => s + Number(row[4]), 0)).toBe(events.filter((e) => e.passed).length);
    });
  });
});
