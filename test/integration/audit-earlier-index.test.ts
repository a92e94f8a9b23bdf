// Migration 0012 moved the audit log's resource index from audit_log_resources
// (rows naming their record by audit_logs' pk) to audit_resources (by its id).
// What was indexed before the upgrade, and what instances of an earlier version
// write during a rolling upgrade, stays where it is until the audit sweep moves
// it; listAudit reads both tables, so a record is found by its resources before,
// during and after its move, once each, and the old table empties itself.
import type { PoolConnection, RowDataPacket } from "mysql2/promise";
import { describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";
import { moveEarlierIndex, sweepAuditLog } from "../../src/domain/audit/retention.js";
import { type AuditRow, auditInserts, listAudit, moveEarlierIndexRows } from "../../src/storage/audit.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";

describe("the audit resource index of an earlier version", () => {
  const h = useHarness();

  const row = (resources: string[], time = Date.now()): AuditRow => ({
    id: newId("log", time),
    workspaceId: h.workspaceId,
    time,
    actorType: "system",
    actorId: "earlier-index-test",
    action: "api.create",
    resources: resources.map((id) => ({ type: "api", id })),
    description: "written by an earlier version",
    requestId: undefined,
    remoteAddress: undefined,
    userAgent: undefined,
  });

  /** A record and its index rows as versions before 0012 wrote them: by the record's pk, right after it. */
  async function writeAsEarlierVersion(r: AuditRow): Promise<void> {
    const conn: PoolConnection = await h.db.pool.getConnection();
    try {
      const record = auditInserts(r)[0];
      await conn.beginTransaction();
      await conn.query(record?.sql ?? "", [...(record?.params ?? [])]);
      // LAST_INSERT_ID() is the record's pk all along: audit_log_resources has no AUTO_INCREMENT.
      await conn.query(
        `INSERT INTO audit_log_resources (audit_pk, workspace_id, resource_id) VALUES ${r.resources.map(() => "(LAST_INSERT_ID(), ?, ?)").join(", ")}`,
        r.resources.flatMap((x) => [r.workspaceId, x.id]),
      );
      await conn.commit();
    } finally {
      conn.release();
    }
  }

  /** The ids of the records listAudit finds for a resource. */
  const found = async (resourceId: string) =>
    (
      await listAudit(h.db.pool, {
        workspaceId: h.workspaceId,
        since: undefined,
        until: undefined,
        actorId: undefined,
        actions: [],
        resourceId,
        limit: 50,
        after: undefined,
      })
    ).rows.map((r) => r.id);

  const earlierRows = async (resourceIds: string[]) =>
    (await h.db.pool.query<RowDataPacket[]>("SELECT resource_id FROM audit_log_resources WHERE resource_id IN (?)", [resourceIds]))[0].length;
  const indexRows = async (resourceIds: string[]) =>
    (
      await h.db.pool.query<RowDataPacket[]>("SELECT audit_id, resource_id FROM audit_resources WHERE resource_id IN (?) ORDER BY audit_id, resource_id", [
        resourceIds,
      ])
    )[0].map((r) => `${r.audit_id} ${r.resource_id}`);

  it("records an earlier version indexed are found by their resources before the sweep moves them, and after", async () => {
    const [a, b] = [uid("api_mig_a"), uid("api_mig_b")];
    const first = row([a, b]);
    const second = row([b]);
    await writeAsEarlierVersion(first);
    await writeAsEarlierVersion(second);
    expect(await found(a)).toEqual([first.id]);
    expect((await found(b)).sort()).toEqual([first.id, second.id].sort());
    expect(await indexRows([a, b])).toEqual([]);

    expect(await moveEarlierIndex(h.db.pool)).toBeGreaterThanOrEqual(2);
    expect(await earlierRows([a, b])).toBe(0);
    expect(await indexRows([a, b])).toEqual([`${first.id} ${a}`, `${first.id} ${b}`, `${second.id} ${b}`].sort());
    expect(await found(a)).toEqual([first.id]);
    expect((await found(b)).sort()).toEqual([first.id, second.id].sort());
  });

  it("a record whose rows are in both tables (copied, the process gone before the delete) is found once, and moved again quietly", async () => {
    const api = uid("api_both");
    const r = row([api]);
    await writeAsEarlierVersion(r);
    await h.db.pool.query("INSERT INTO audit_resources (audit_id, workspace_id, resource_id) VALUES (?, ?, ?)", [r.id, h.workspaceId, api]);
    expect(await found(api)).toEqual([r.id]);
    await moveEarlierIndex(h.db.pool);
    expect(await earlierRows([api])).toBe(0);
    expect(await indexRows([api])).toEqual([`${r.id} ${api}`]);
  });

  it("a move takes whole records, and at most about 5,000 rows past the first record", async () => {
    const big = row(Array.from({ length: 5_001 }, (_, i) => `${uid("api_big")}_${i}`));
    const small = row([uid("api_small")]);
    await writeAsEarlierVersion(big);
    await writeAsEarlierVersion(small);
    expect(await moveEarlierIndexRows(h.db.pool, 1_000)).toBe(1);
    expect(await earlierRows(big.resources.map((x) => x.id))).toBe(0);
    expect(await earlierRows([small.resources[0]?.id as string])).toBe(1);
    expect(await indexRows(big.resources.map((x) => x.id))).toHaveLength(5_001);
    expect(await moveEarlierIndexRows(h.db.pool, 1_000)).toBe(1);
    expect(await moveEarlierIndexRows(h.db.pool, 1_000)).toBe(0);
  });

  it("the audit sweep moves what an earlier version wrote since, batch by batch; rows of deleted records go", async () => {
    const ids = Array.from({ length: 5 }, (_, i) => uid(`api_late_${i}`));
    const records = ids.map((id, i) => row(i === 0 ? [id, ids[1] as string] : [id]));
    for (const r of records) await writeAsEarlierVersion(r);
    // A record deleted since (retention), its index rows left behind.
    const gone = uid("api_gone");
    const goneRecord = row([gone]);
    await writeAsEarlierVersion(goneRecord);
    await h.db.pool.query("DELETE FROM audit_logs WHERE id = ?", [goneRecord.id]);
    expect(await found(ids[2] as string)).toEqual([records[2]?.id]);

    // Batches of 2 records. `before` 0: no record is old enough to delete.
    expect(await sweepAuditLog(h.db.pool, 0, undefined, 2)).toBe(0);

    expect(await earlierRows([...ids, gone])).toBe(0);
    for (const [i, id] of ids.entries()) {
      const expected = i === 1 ? [records[0]?.id, records[1]?.id].sort() : [records[i]?.id];
      expect((await found(id)).sort()).toEqual(expected);
    }
    expect(await indexRows([gone])).toEqual([]);
    // Moving again finds nothing and changes nothing.
    await sweepAuditLog(h.db.pool, 0, undefined, 2);
    expect(await indexRows(ids)).toHaveLength(6);
  });

  it("a record written now is indexed by its id, and retention deletes its index rows with it", async () => {
    const api = uid("api_now");
    const old = row([api], Date.now() - 40 * 86_400_000);
    for (const s of auditInserts(old)) await h.db.pool.query(s.sql, [...s.params]);
    expect(await indexRows([api])).toEqual([`${old.id} ${api}`]);
    expect(await found(api)).toEqual([old.id]);
    await sweepAuditLog(h.db.pool, Date.now() - 30 * 86_400_000);
    expect(await found(api)).toEqual([]);
    expect(await indexRows([api])).toEqual([]);
  });
});
