// The raw analytics tables keep no index but their primary key (migrations 0010
// and 0011): `pk` is UUID_SHORT() by default, and the retention sweep
// (ANALYTICS_RAW_RETENTION_DAYS) finds old rows group by group through the
// primary key. These check what that changed: every old raw row goes and no
// newer one, the roll-ups stay, and rows written without `pk` (as every version
// writes them) are told apart in one key space and millisecond.
import { describe, expect, it } from "vitest";
import { sweepRawAnalytics } from "../../src/domain/analytics/retention.js";
import { type RatelimitEvent, type VerificationEvent, writeAnalytics } from "../../src/storage/analytics.js";
import { useHarness } from "../harness.js";

type Rows = Array<Record<string, unknown>>;
const DAY = 86_400_000;

const verification = (workspaceId: string, keySpaceId: string, time: number, requestId: string): VerificationEvent => ({
  requestId,
  time,
  workspaceId,
  keySpaceId,
  apiId: `api_${keySpaceId}`,
  keyId: `key_${keySpaceId}`,
  identityId: "",
  externalId: "",
  outcome: "VALID",
  region: "local",
  tags: [],
  spentCredits: 0,
});

const ratelimit = (workspaceId: string, namespaceId: string, time: number, requestId: string): RatelimitEvent => ({
  requestId,
  time,
  workspaceId,
  namespaceId,
  identifier: "user-1",
  passed: true,
});

describe("raw analytics: retention and row numbers", () => {
  const h = useHarness();
  const q = async (sql: string, params: unknown[] = []): Promise<Rows> => (await h.db.pool.query(sql, params))[0] as Rows;

  it("the raw tables have no index but their primary key", async () => {
    for (const table of ["analytics_verifications", "analytics_ratelimits"]) {
      const indexes = new Set((await q(`SHOW INDEX FROM ${table}`)).map((r) => r.Key_name));
      expect([...indexes]).toEqual(["PRIMARY"]);
    }
  });

  it("sweeps every raw row older than the bound, in every group, batch by batch; newer rows and the roll-ups stay", async () => {
    const now = Date.now();
    const old = (i: number) => now - (40 + i) * DAY;
    const recent = (i: number) => now - i * 60_000;
    const v: VerificationEvent[] = [];
    // Three groups: 5 old rows in the first, none in the second, 2 in the third; 2 recent rows in each.
    for (let i = 0; i < 5; i++) v.push(verification("ws_ret_1", "ks_ret_a", old(i), `old_1a_${i}`));
    for (let i = 0; i < 2; i++) v.push(verification("ws_ret_2", "ks_ret_a", old(i), `old_2a_${i}`));
    for (const [ws, ks] of [
      ["ws_ret_1", "ks_ret_a"],
      ["ws_ret_1", "ks_ret_b"],
      ["ws_ret_2", "ks_ret_a"],
    ] as const)
      for (let i = 0; i < 2; i++) v.push(verification(ws, ks, recent(i), `new_${ws}_${ks}_${i}`));
    const r = [
      ratelimit("ws_ret_1", "ns_ret", old(0), "old_rl_0"),
      ratelimit("ws_ret_1", "ns_ret", old(1), "old_rl_1"),
      ratelimit("ws_ret_1", "ns_ret", recent(0), "new_rl_0"),
    ];
    await writeAnalytics(h.db.pool, v, r);
    const monthly = async () => q("SELECT SUM(count) AS n FROM analytics_verifications_per_month WHERE workspace_id LIKE 'ws_ret_%'");
    expect(Number((await monthly())[0]?.n)).toBe(13);

    // A batch of 2: three rounds for the first group's 5 old rows.
    expect(await sweepRawAnalytics(h.db.pool, now - 30 * DAY, undefined, 2)).toBe(9);
    const left = await q("SELECT request_id FROM analytics_verifications WHERE workspace_id LIKE 'ws_ret_%' ORDER BY request_id");
    expect(left.map((row) => row.request_id)).toEqual(
      v
        .filter((e) => e.requestId.startsWith("new_"))
        .map((e) => e.requestId)
        .sort(),
    );
    expect(await q("SELECT request_id FROM analytics_ratelimits WHERE workspace_id = 'ws_ret_1'")).toEqual([{ request_id: "new_rl_0" }]);
    expect(Number((await monthly())[0]?.n)).toBe(13);
    expect(await sweepRawAnalytics(h.db.pool, now - 30 * DAY, undefined, 2)).toBe(0);
  });

  it("rows without pk, in one key space and millisecond, each get their own from the database, in the order written", async () => {
    const at = Date.UTC(2026, 10, 29, 6, 0, 0, 123);
    await writeAnalytics(
      h.db.pool,
      [0, 1, 2].map((i) => verification("ws_same_ms", "ks_same_ms", at, `same_ms_${i}`)),
      [0, 1].map((i) => ratelimit("ws_same_ms", "ns_same_ms", at, `same_ms_rl_${i}`)),
    );
    for (const table of ["analytics_verifications", "analytics_ratelimits"]) {
      const rows = await q(`SELECT pk, request_id FROM ${table} WHERE workspace_id = 'ws_same_ms' ORDER BY pk`);
      expect(new Set(rows.map((r) => String(r.pk))).size).toBe(rows.length);
      expect(rows.map((r) => r.request_id)).toEqual(
        table === "analytics_verifications" ? ["same_ms_0", "same_ms_1", "same_ms_2"] : ["same_ms_rl_0", "same_ms_rl_1"],
      );
    }
  });
});
