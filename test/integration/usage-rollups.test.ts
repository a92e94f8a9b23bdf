// DashboardService.GetUsage reads the analytics roll-ups: per minute from
// _per_minute, per hour from _per_hour, per day from _per_day, for the workspace,
// an API (its key space) or a key, over the ranges the dashboard's charts offer,
// and never a row of another workspace. Rows are put into the roll-ups by hand
// (usage-rollups.ts), so every bucket's count is known; verifications through
// the recorder to the same reads are in verification-usage.test.ts.
//
// The tables are given different rows on purpose (the recorder would add each
// verification to all four): a count that shows up under the wrong granularity
// names the table it was wrongly read from.
import type { AddressInfo } from "node:net";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { type DashboardService, Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { hashPassword } from "../../src/domain/operators/password.js";
import { readUsage } from "../../src/storage/analytics-usage.js";
import { insertOperator, linkWorkspace } from "../../src/storage/operators.js";
import { ensureWorkspace } from "../../src/storage/workspaces.js";
import { signedInDashboard } from "../connect-clients.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { insertRollupRows, keySpaceOf } from "../usage-rollups.js";

const PASSWORD = "usage roll-ups password";
const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
// A fixed noon in the past: the ranges below end here, as the charts' end now.
const END = Date.UTC(2025, 5, 30, 12, 0, 0);
const TODAY = END - (END % DAY);

type Point = { time: number; outcome: string; count: number };
const p = (time: number, outcome: string, count: number): Point => ({ time, outcome, count });

describe("GetUsage from the analytics roll-ups", () => {
  const h = useHarness();
  let dash: Client<typeof DashboardService>;
  let operatorId: string;
  let wsA: string;
  let wsB: string;
  // Two APIs in workspace A, one in B; a1 and a2 are keys of api1, a3 of api2, b1 of apiB.
  let api1: string;
  let api2: string;
  let apiB: string;
  const a1 = "key_usage_a1";
  const a2 = "key_usage_a2";
  const a3 = "key_usage_a3";
  const b1 = "key_usage_b1";

  /** The points of one query, as plain numbers. */
  async function usage(q: { workspaceId?: string; apiId?: string; keyId?: string; from: number; to: number; granularity: Granularity }): Promise<Point[]> {
    const res = await dash.getUsage({
      workspaceId: q.workspaceId ?? wsA,
      apiId: q.apiId ?? "",
      keyId: q.keyId ?? "",
      from: BigInt(q.from),
      to: BigInt(q.to),
      granularity: q.granularity,
    });
    return res.points.map((x) => p(Number(x.time), x.outcome, Number(x.count)));
  }
  // The dashboard's four ranges, ending at END.
  const lastHour = { from: END - HOUR, to: END, granularity: Granularity.MINUTE };
  const lastDay = { from: END - DAY, to: END, granularity: Granularity.HOUR };
  const last7Days = { from: END - 7 * DAY, to: END, granularity: Granularity.HOUR };
  const last30Days = { from: END - 30 * DAY, to: END, granularity: Granularity.DAY };

  // Buckets of each roll-up, inside and outside the ranges.
  const m1 = END - 30 * MIN;
  const m2 = END - MIN;
  const h1 = END - 2 * HOUR;
  const h2 = END - 23 * HOUR;
  const h3 = END - 25 * HOUR; // before the last day, within 7 days
  const h4 = END - 6 * DAY;
  const d1 = TODAY;
  const d2 = TODAY - 10 * DAY;
  const d3 = TODAY - 29 * DAY;

  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    const email = `${uid("op")}@example.test`;
    operatorId = await insertOperator(h.db.pool, { email, passwordHash: await hashPassword(PASSWORD), now: Date.now() });
    wsA = h.workspaceId;
    const otherName = uid("usage_other");
    const rootB = await h.rootKey(["*"], otherName);
    wsB = (await ensureWorkspace(h.db.pool, otherName, Date.now())).id;
    // The operator belongs to both: B's rows must stay out of A's answers by the query, not by the membership check.
    await linkWorkspace(h.db.pool, operatorId, wsA, Date.now());
    await linkWorkspace(h.db.pool, operatorId, wsB, Date.now());
    dash = await signedInDashboard(base, email, PASSWORD);

    const rootA = await h.rootKey(["*"]);
    const createApi = async (rootKey: string, name: string) => (await h.post("/v2/apis.createApi", { name }, rootKey)).body.data.apiId as string;
    api1 = await createApi(rootA, "usage-one");
    api2 = await createApi(rootA, "usage-two");
    apiB = await createApi(rootB, "usage-other");
    const ks1 = await keySpaceOf(h.db.pool, api1);
    const ks2 = await keySpaceOf(h.db.pool, api2);
    const ksB = await keySpaceOf(h.db.pool, apiB);
    const apiOf: Record<string, string> = { [ks1]: api1, [ks2]: api2, [ksB]: apiB };
    const A = (time: number, keySpaceId: string, keyId: string, outcome: string, count: number, more = {}) => ({
      time,
      workspaceId: wsA,
      keySpaceId,
      apiId: apiOf[keySpaceId] ?? "",
      keyId,
      outcome,
      count,
      ...more,
    });
    const B = (time: number, keySpaceId: string, keyId: string, outcome: string, count: number) => ({
      ...A(time, keySpaceId, keyId, outcome, count),
      workspaceId: wsB,
    });

    await insertRollupRows(h.db.pool, "minute", [
      A(m1, ks1, a1, "VALID", 3),
      // Same bucket, key and outcome, another identity and tags: summed into one point.
      A(m1, ks1, a1, "VALID", 2, { identityId: "id_usage", tags: ["path=/a"] }),
      A(m1, ks1, a2, "RATE_LIMITED", 2),
      A(m1, ks2, a3, "VALID", 1),
      A(m1, "", "", "NOT_FOUND", 4),
      A(m2, ks1, a1, "VALID", 1),
      A(m2, ks1, a1, "USAGE_EXCEEDED", 1),
      // Just outside the last hour, on either side (`to` is exclusive).
      A(END - HOUR - MIN, ks1, a1, "VALID", 100),
      A(END, ks1, a1, "VALID", 200),
      B(m1, ksB, b1, "VALID", 7),
      B(m1, "", "", "NOT_FOUND", 9),
      // Another workspace's row that names A's key space and key: still B's.
      B(m1, ks1, a1, "VALID", 11),
    ]);
    await insertRollupRows(h.db.pool, "hour", [
      A(h1, ks1, a1, "VALID", 10),
      A(h1, ks2, a3, "DISABLED", 2),
      A(h2, ks1, a2, "EXPIRED", 1),
      A(h3, ks1, a1, "VALID", 20),
      A(h4, ks1, a2, "VALID", 5),
      A(END - 7 * DAY - HOUR, ks1, a1, "VALID", 50),
      B(h1, ksB, b1, "VALID", 30),
    ]);
    await insertRollupRows(h.db.pool, "day", [
      A(d1, ks1, a1, "VALID", 40),
      A(d1, "", "", "NOT_FOUND", 3),
      A(d2, ks2, a3, "VALID", 6),
      A(d3, ks1, a2, "RATE_LIMITED", 2),
      A(TODAY - 31 * DAY, ks1, a1, "VALID", 70),
      A(TODAY + DAY, ks1, a1, "VALID", 80),
      B(d1, ksB, b1, "VALID", 90),
    ]);
    // Never read by GetUsage, which has no month granularity.
    await insertRollupRows(h.db.pool, "month", [A(Date.UTC(2025, 5, 1), ks1, a1, "VALID", 1_000)]);
  });

  it("the last hour, per minute: the workspace, each API, a key", async () => {
    expect(await usage(lastHour)).toEqual([p(m1, "NOT_FOUND", 4), p(m1, "RATE_LIMITED", 2), p(m1, "VALID", 6), p(m2, "USAGE_EXCEEDED", 1), p(m2, "VALID", 1)]);
    expect(await usage({ ...lastHour, apiId: api1 })).toEqual([p(m1, "RATE_LIMITED", 2), p(m1, "VALID", 5), p(m2, "USAGE_EXCEEDED", 1), p(m2, "VALID", 1)]);
    expect(await usage({ ...lastHour, apiId: api2 })).toEqual([p(m1, "VALID", 1)]);
    expect(await usage({ ...lastHour, keyId: a1 })).toEqual([p(m1, "VALID", 5), p(m2, "USAGE_EXCEEDED", 1), p(m2, "VALID", 1)]);
    expect(await usage({ ...lastHour, apiId: api1, keyId: a2 })).toEqual([p(m1, "RATE_LIMITED", 2)]);
    // A key asked for under an API it is not in has nothing there.
    expect(await usage({ ...lastHour, apiId: api2, keyId: a1 })).toEqual([]);
  });

  it("widens from and to to whole buckets", async () => {
    expect(await usage({ ...lastHour, from: m2 + 10_000, to: m2 + 20_000 })).toEqual([p(m2, "USAGE_EXCEEDED", 1), p(m2, "VALID", 1)]);
    expect(await usage({ from: h1 + 1, to: h1 + 2, granularity: Granularity.HOUR })).toEqual([p(h1, "DISABLED", 2), p(h1, "VALID", 10)]);
    expect(await usage({ from: d1 + HOUR, to: d1 + 2 * HOUR, granularity: Granularity.DAY })).toEqual([p(d1, "NOT_FOUND", 3), p(d1, "VALID", 40)]);
  });

  it("the last day and the last 7 days, per hour", async () => {
    expect(await usage(lastDay)).toEqual([p(h2, "EXPIRED", 1), p(h1, "DISABLED", 2), p(h1, "VALID", 10)]);
    expect(await usage(last7Days)).toEqual([p(h4, "VALID", 5), p(h3, "VALID", 20), p(h2, "EXPIRED", 1), p(h1, "DISABLED", 2), p(h1, "VALID", 10)]);
    expect(await usage({ ...last7Days, apiId: api1 })).toEqual([p(h4, "VALID", 5), p(h3, "VALID", 20), p(h2, "EXPIRED", 1), p(h1, "VALID", 10)]);
    expect(await usage({ ...last7Days, apiId: api2 })).toEqual([p(h1, "DISABLED", 2)]);
    expect(await usage({ ...last7Days, keyId: a2 })).toEqual([p(h4, "VALID", 5), p(h2, "EXPIRED", 1)]);
    expect(await usage({ ...lastDay, keyId: a1 })).toEqual([p(h1, "VALID", 10)]);
  });

  it("the last 30 days, per (UTC) day", async () => {
    expect(await usage(last30Days)).toEqual([p(d3, "RATE_LIMITED", 2), p(d2, "VALID", 6), p(d1, "NOT_FOUND", 3), p(d1, "VALID", 40)]);
    expect(await usage({ ...last30Days, apiId: api1 })).toEqual([p(d3, "RATE_LIMITED", 2), p(d1, "VALID", 40)]);
    expect(await usage({ ...last30Days, apiId: api2 })).toEqual([p(d2, "VALID", 6)]);
    expect(await usage({ ...last30Days, keyId: a1 })).toEqual([p(d1, "VALID", 40)]);
    expect(await usage({ ...last30Days, keyId: a3 })).toEqual([p(d2, "VALID", 6)]);
  });

  it("another workspace's rows never appear, even asked for by its API's or key's id", async () => {
    for (const range of [lastHour, lastDay, last7Days, last30Days]) {
      expect(await usage({ ...range, apiId: apiB }), `${range.granularity}`).toEqual([]);
      expect(await usage({ ...range, keyId: b1 }), `${range.granularity}`).toEqual([]);
      expect(await usage({ ...range, workspaceId: wsB, apiId: api1 }), `${range.granularity}`).toEqual([]);
    }
    // B's own answers hold B's rows only (the row naming A's key is B's).
    expect(await usage({ ...lastHour, workspaceId: wsB })).toEqual([p(m1, "NOT_FOUND", 9), p(m1, "VALID", 18)]);
    expect(await usage({ ...lastHour, workspaceId: wsB, apiId: apiB })).toEqual([p(m1, "VALID", 7)]);
    expect(await usage({ ...lastHour, workspaceId: wsB, keyId: a1 })).toEqual([p(m1, "VALID", 11)]);
    expect(await usage({ ...last7Days, workspaceId: wsB })).toEqual([p(h1, "VALID", 30)]);
    expect(await usage({ ...last30Days, workspaceId: wsB })).toEqual([p(d1, "VALID", 90)]);
  });

  it("a deleted API keeps its history; an unknown API has none", async () => {
    const rootA = await h.rootKey(["*"]);
    expect((await h.post("/v2/apis.deleteApi", { apiId: api2 }, rootA)).status).toBe(200);
    expect(await usage({ ...last30Days, apiId: api2 })).toEqual([p(d2, "VALID", 6)]);
    expect(await usage({ ...last30Days, apiId: "api_no_such_api" })).toEqual([]);
  });

  it("a workspace with more key spaces than one statement reads: every key space summed, none outside the range", async () => {
    // Each key space's range of the primary key is read (migrations/0013): the
    // workspace's key spaces are found first, then read 500 to a statement.
    const wsC = (await ensureWorkspace(h.db.pool, uid("usage_many"), Date.now())).id;
    await linkWorkspace(h.db.pool, operatorId, wsC, Date.now());
    const ks = (i: number) => `ks_usage_many_${String(i).padStart(4, "0")}`;
    const C = (time: number, keySpaceId: string, keyId: string, outcome: string, count: number) => ({
      time,
      workspaceId: wsC,
      keySpaceId,
      keyId,
      outcome,
      count,
    });
    const keyC = "key_usage_c";
    await insertRollupRows(h.db.pool, "minute", [
      ...Array.from({ length: 1_200 }, (_, i) => C(m1, ks(i), `key_usage_many_${i}`, "VALID", 1)),
      // One key's rows under two key spaces that fall in different statements.
      C(m2, ks(0), keyC, "VALID", 5),
      C(m2, ks(1_100), keyC, "VALID", 5),
      C(m1, "", "", "NOT_FOUND", 4),
      // Key spaces whose only buckets are outside the range, on either side.
      C(END, ks(1_200), keyC, "VALID", 100),
      C(END - HOUR - MIN, ks(1_201), keyC, "VALID", 100),
    ]);
    expect(await usage({ ...lastHour, workspaceId: wsC })).toEqual([p(m1, "NOT_FOUND", 4), p(m1, "VALID", 1_200), p(m2, "VALID", 10)]);
    expect(await usage({ ...lastHour, workspaceId: wsC, keyId: keyC })).toEqual([p(m2, "VALID", 10)]);
    expect(await usage({ from: END - HOUR - MIN, to: END + MIN, granularity: Granularity.MINUTE, workspaceId: wsC, keyId: keyC })).toEqual([
      p(END - HOUR - MIN, "VALID", 100),
      p(m2, "VALID", 10),
      p(END, "VALID", 100),
    ]);

    // Against a plain read of the table (no key spaces named), on random ranges and keys.
    let seed = 7;
    const next = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % n;
    };
    const reference = async (keyId: string | undefined, from: number, to: number) => {
      const [found] = await h.db.pool.query(
        `SELECT TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', \`time\`) AS t, outcome, SUM(count) AS n FROM analytics_verifications_per_minute
          WHERE workspace_id = ? ${keyId === undefined ? "" : "AND key_id = ?"} AND \`time\` >= ? AND \`time\` < ? GROUP BY \`time\`, outcome ORDER BY \`time\`, outcome`,
        [wsC, ...(keyId === undefined ? [] : [keyId]), new Date(from).toISOString().slice(0, 19), new Date(to).toISOString().slice(0, 19)],
      );
      return (found as Array<{ t: number; outcome: string; n: string }>).map((r) => p(Number(r.t) * 1000, r.outcome, Number(r.n)));
    };
    for (let i = 0; i < 20; i++) {
      const from = END - HOUR - 2 * MIN + next(70) * MIN;
      const to = from + (1 + next(70)) * MIN;
      const keyId = [undefined, keyC, "key_usage_many_7", "key_usage_many_1150"][next(4)];
      const got = await readUsage(h.db.pool, { workspaceId: wsC, keyId, from, to, granularity: "minute" });
      expect(got, `${keyId} ${from}-${to}`).toEqual(await reference(keyId, from, to));
    }
  });

  it("answers a range that ends past what a DATETIME holds, and one that starts there", async () => {
    const far = Date.UTC(9999, 11, 31);
    expect(await usage({ from: far - 100 * DAY, to: far + 100 * DAY, granularity: Granularity.DAY })).toEqual([]);
    expect(await usage({ from: Date.UTC(10_000, 0, 2), to: Date.UTC(10_000, 0, 3), granularity: Granularity.DAY })).toEqual([]);
  });

  it("still refuses what it refused: no granularity, a backwards range, a workspace not the operator's", async () => {
    const refused = async (call: Promise<unknown>) => {
      const err = await call.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConnectError);
      return (err as ConnectError).code;
    };
    expect(await refused(usage({ ...lastHour, granularity: Granularity.UNSPECIFIED }))).toBe(Code.InvalidArgument);
    expect(await refused(usage({ ...lastHour, from: END, to: END - HOUR }))).toBe(Code.InvalidArgument);
    const stranger = (await ensureWorkspace(h.db.pool, uid("usage_stranger"), Date.now())).id;
    expect(await refused(usage({ ...lastHour, workspaceId: stranger }))).toBe(Code.PermissionDenied);
  });
});
