// kill -9 of the server in the middle of a stream of changes (createKey,
// updateKey, deleteKey, createIdentity, createPermission), twice. After the
// kill, every change in the database has its audit record and every audit
// record its change: the two commit in one transaction, so a crash can lose
// both, never one. Every change answered 200 has its record.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { post } from "./client.js";

const ROUNDS = 2;
const CONCURRENCY = 8;

type Rows = Array<Record<string, unknown>>;

describe("kill -9 during a stream of audited changes", () => {
  const h = useHarness();
  let rk: string;
  let rootKeyId: string;
  let apiId: string;
  let server: ServerProcess | undefined;
  /** What was answered 200: action and resource id. */
  const acknowledged: Array<{ action: string; id: string }> = [];

  beforeAll(async () => {
    rk = await h.rootKey(["*"]);
    const [found] = await h.db.pool.query("SELECT id FROM root_keys ORDER BY pk DESC LIMIT 1");
    rootKeyId = String((found as Rows)[0]?.id);
    server = await startServer(h.config.databaseUrl ?? "");
    const api = await post(server.url, "/v2/apis.createApi", { name: "audit-crash" }, rk);
    expect(api.status, api.text).toBe(200);
    apiId = api.body.data.apiId;
  });

  afterAll(async () => {
    await server?.kill();
  });

  /** One change of each kind per step, on keys made by this worker; kills the process after some answers. */
  async function round(r: number, proc: ServerProcess): Promise<void> {
    const killAfter = 30 + Math.floor(Math.random() * 60);
    let ok = 0;
    let dead = false;
    void proc.exited.then(() => {
      dead = true;
    });
    const answered = (status: number) => {
      if (status === 200 && ++ok === killAfter) setTimeout(() => proc.proc.kill("SIGKILL"), Math.random() * 10);
    };
    const worker = async (w: number) => {
      for (let i = 0; !dead; i++) {
        const created = await post(proc.url, "/v2/keys.createKey", { apiId, name: `c-${r}-${w}-${i}`, meta: { secret: "s3cr3t-meta" } }, rk, 10_000);
        answered(created.status);
        if (created.status !== 200) continue;
        const keyId = String(created.body.data.keyId);
        acknowledged.push({ action: "key.create", id: keyId });
        const updated = await post(proc.url, "/v2/keys.updateKey", { keyId, name: `u-${r}-${w}-${i}` }, rk, 10_000);
        answered(updated.status);
        if (updated.status === 200) acknowledged.push({ action: "key.update", id: keyId });
        if (i % 2 === 0) {
          const deleted = await post(proc.url, "/v2/keys.deleteKey", { keyId }, rk, 10_000);
          answered(deleted.status);
          if (deleted.status === 200) acknowledged.push({ action: "key.delete", id: keyId });
        }
        if (i % 3 === 0) {
          const ext = `ext-${r}-${w}-${i}`;
          const identity = await post(proc.url, "/v2/identities.createIdentity", { externalId: ext }, rk, 10_000);
          answered(identity.status);
          if (identity.status === 200) acknowledged.push({ action: "identity.create", id: String(identity.body.data.identityId) });
          const perm = await post(proc.url, "/v2/permissions.createPermission", { name: `p.${r}.${w}.${i}`, slug: `p.${r}.${w}.${i}` }, rk, 10_000);
          answered(perm.status);
          if (perm.status === 200) acknowledged.push({ action: "permission.create", id: String(perm.body.data.permissionId) });
        }
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, w) => worker(w)));
    expect(await proc.exited).toBe("SIGKILL");
  }

  it("leaves no change without its record, and no record without its change", async () => {
    for (let r = 0; r < ROUNDS; r++) {
      const proc = server ?? (await startServer(h.config.databaseUrl ?? ""));
      server = undefined;
      await round(r, proc);
    }
    const q = async (sql: string, params: unknown[] = []) => (await h.db.pool.query(sql, params))[0] as Rows;
    const records = await q("SELECT action, resources, actor_id, description FROM audit_logs WHERE workspace_id = ?", [h.workspaceId]);
    const recorded = (action: string) =>
      new Set(
        records
          .filter((x) => x.action === action)
          .map((x) => (JSON.parse(String(x.resources)) as Array<{ type: string; id: string }>).find((res) => res.type !== "api")?.id),
      );
    const keys = await q("SELECT id, deleted_at_m FROM `keys` WHERE api_id = ?", [apiId]);
    const created = recorded("key.create");
    const deletedRecords = recorded("key.delete");
    const keyIds = new Set(keys.map((k) => String(k.id)));
    const deletedKeys = new Set(keys.filter((k) => k.deleted_at_m !== null).map((k) => String(k.id)));
    console.log(`[audit-crash] ${acknowledged.length} changes answered 200; ${keys.length} keys (${deletedKeys.size} deleted), ${records.length} records`);
    // Both ways: every key has its creation record, every creation record its key.
    expect([...keyIds].filter((id) => !created.has(id))).toEqual([]);
    expect([...created].filter((id) => id === undefined || !keyIds.has(id))).toEqual([]);
    // Every deleted key has its deletion record, and every deletion record a deleted key.
    expect([...deletedKeys].filter((id) => !deletedRecords.has(id))).toEqual([]);
    expect([...deletedRecords].filter((id) => id === undefined || !deletedKeys.has(id))).toEqual([]);
    // An update record names a key that exists.
    expect([...recorded("key.update")].filter((id) => id === undefined || !keyIds.has(id))).toEqual([]);
    // Identities and permissions: the same both ways.
    const identities = new Set((await q("SELECT id FROM identities WHERE workspace_id = ?", [h.workspaceId])).map((x) => String(x.id)));
    expect(identities).toEqual(recorded("identity.create"));
    const permissions = new Set((await q("SELECT id FROM permissions WHERE workspace_id = ?", [h.workspaceId])).map((x) => String(x.id)));
    expect(permissions).toEqual(recorded("permission.create"));
    // Every change answered 200 is recorded, by the root key that made it; no record holds a secret.
    for (const a of acknowledged) expect(recorded(a.action).has(a.id), `${a.action} ${a.id}`).toBe(true);
    expect(new Set(records.map((x) => x.actor_id))).toEqual(new Set([rootKeyId]));
    expect(JSON.stringify(records)).not.toContain("s3cr3t-meta");
    expect(JSON.stringify(records)).not.toContain(rk);
  }, 120_000);
});
