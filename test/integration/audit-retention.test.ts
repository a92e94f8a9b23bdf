// AUDIT_RETENTION_DAYS: records older than the bound are deleted, batch by
// batch, with their resource index rows; newer ones stay.
import { describe, expect, it } from "vitest";
import { newId } from "../../src/core/ids.js";
import { sweepAuditLog } from "../../src/domain/audit/retention.js";
import { loadConfig } from "../../src/server/config.js";
import { insertAudit } from "../../src/storage/audit.js";
import { useHarness } from "../harness.js";

type Rows = Array<Record<string, unknown>>;

describe("audit log retention", () => {
  const h = useHarness();

  it("AUDIT_RETENTION_DAYS is 365 by default, 1-36500, and refused otherwise", () => {
    expect(loadConfig({}).auditRetentionDays).toBe(365);
    expect(loadConfig({ AUDIT_RETENTION_DAYS: "30" }).auditRetentionDays).toBe(30);
    expect(() => loadConfig({ AUDIT_RETENTION_DAYS: "0" })).toThrow(/AUDIT_RETENTION_DAYS=0 is out of range/);
    expect(() => loadConfig({ AUDIT_RETENTION_DAYS: "a year" })).toThrow(/AUDIT_RETENTION_DAYS="a year" is not a whole number/);
  });

  it("deletes every record older than the bound in batches, with its index rows, and keeps the rest", async () => {
    const now = Date.now();
    const day = 86_400_000;
    const write = async (time: number, label: string) => {
      await insertAudit(h.db.pool, {
        id: newId("log", time),
        workspaceId: h.workspaceId,
        time,
        actorType: "system",
        actorId: "retention-test",
        action: "api.create",
        resources: [{ type: "api", id: `api_${label}` }],
        description: label,
        requestId: undefined,
        remoteAddress: undefined,
        userAgent: undefined,
      });
    };
    for (let i = 0; i < 7; i++) await write(now - (40 + i) * day, `old${i}`);
    for (let i = 0; i < 3; i++) await write(now - i * day, `new${i}`);
    const q = async (sql: string) => (await h.db.pool.query(sql, ["retention-test"]))[0] as Rows;

    // A batch of 3 takes three rounds for 7 old records.
    const deleted = await sweepAuditLog(h.db.pool, now - 30 * day, undefined, 3);
    expect(deleted).toBe(7);
    expect((await q("SELECT description FROM audit_logs WHERE actor_id = ? ORDER BY time_m")).map((r) => r.description)).toEqual(["new2", "new1", "new0"]);
    const [orphans] = await h.db.pool.query(
      "SELECT r.resource_id FROM audit_resources r LEFT JOIN audit_logs a ON a.id = r.audit_id WHERE a.pk IS NULL AND r.resource_id LIKE 'api_old%'",
    );
    expect(orphans).toEqual([]);
    expect(await sweepAuditLog(h.db.pool, now - 30 * day, undefined, 3)).toBe(0);
  });
});
