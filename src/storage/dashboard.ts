// Queries only the dashboard needs: workspaces an operator creates, a
// workspace's APIs, and its root keys with their labels.
import { newId } from "../core/ids.js";
import { linkWorkspace, type OperatorWorkspace } from "./operators.js";
import type { Pool } from "./sql.js";
import { exec, isDuplicateKey, type Queryable, rows } from "./sql.js";

export class WorkspaceNameTaken extends Error {}

/** A new workspace with the operator as its member (never joins an existing one by name). */
export async function createOperatorWorkspace(pool: Pool, operatorId: string, name: string, now: number): Promise<OperatorWorkspace> {
  const id = newId("ws", now);
  const conn = await pool.getConnection();
  try {
    await conn.beginTransaction();
    try {
      await exec(conn, "INSERT INTO workspaces (id, name, enabled, created_at_m) VALUES (?, ?, TRUE, ?)", [id, name, now]);
    } catch (err) {
      if (isDuplicateKey(err)) throw new WorkspaceNameTaken();
      throw err;
    }
    await linkWorkspace(conn, operatorId, id, now);
    await conn.commit();
    return { id, name, enabled: true };
  } catch (err) {
    await conn.rollback().catch(() => undefined);
    throw err;
  } finally {
    conn.release();
  }
}

export interface ApiListing {
  id: string;
  name: string;
  createdAt: number;
}

export async function listApis(db: Queryable, workspaceId: string): Promise<ApiListing[]> {
  const rs = await rows(db, "SELECT id, name, created_at_m FROM apis WHERE workspace_id = ? AND deleted_at_m IS NULL ORDER BY id", [workspaceId]);
  return rs.map((r) => ({ id: String(r.id), name: String(r.name), createdAt: Number(r.created_at_m) }));
}

export interface NamespaceListing {
  id: string;
  name: string;
  createdAt: number;
}

export async function listLiveNamespaces(db: Queryable, workspaceId: string): Promise<NamespaceListing[]> {
  const rs = await rows(db, "SELECT id, name, created_at_m FROM ratelimit_namespaces WHERE workspace_id = ? AND deleted_at_m IS NULL ORDER BY id", [
    workspaceId,
  ]);
  return rs.map((r) => ({ id: String(r.id), name: String(r.name), createdAt: Number(r.created_at_m) }));
}

export class NamespaceNameTaken extends Error {}

/** A new namespace; a name in use, or kept by a deleted namespace, is refused. */
export async function createNamespace(db: Queryable, workspaceId: string, name: string, now: number): Promise<NamespaceListing> {
  const id = newId("rlns", now);
  try {
    await exec(db, "INSERT INTO ratelimit_namespaces (id, workspace_id, name, created_at_m) VALUES (?, ?, ?, ?)", [id, workspaceId, name, now]);
  } catch (err) {
    if (isDuplicateKey(err)) throw new NamespaceNameTaken();
    throw err;
  }
  return { id, name, createdAt: now };
}

/** Soft-deletes the workspace's live namespace (kept as a row, so ratelimit.limit answers 410 for it rather than recreating it); false when there is none. */
export async function softDeleteNamespace(db: Queryable, workspaceId: string, namespaceId: string, now: number): Promise<boolean> {
  const r = await exec(db, "UPDATE ratelimit_namespaces SET deleted_at_m = ?, updated_at_m = ? WHERE id = ? AND workspace_id = ? AND deleted_at_m IS NULL", [
    now,
    now,
    namespaceId,
    workspaceId,
  ]);
  return r.affectedRows === 1;
}
