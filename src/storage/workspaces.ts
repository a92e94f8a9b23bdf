import { newId } from "../core/ids.js";
import { WorkspaceNameTaken } from "./dashboard.js";
import { exec, isDuplicateKey, one, type Queryable } from "./sql.js";

export interface WorkspaceRow {
  id: string;
  name: string;
  enabled: boolean;
}

export async function findWorkspaceByName(db: Queryable, name: string): Promise<WorkspaceRow | undefined> {
  const r = await one(db, "SELECT id, name, enabled FROM workspaces WHERE name = ? AND deleted_at_m IS NULL", [name]);
  return r && { id: String(r.id), name: String(r.name), enabled: Boolean(r.enabled) };
}

/** Finds the workspace by name or creates it; safe when two processes race. */
export async function ensureWorkspace(db: Queryable, name: string, now: number): Promise<WorkspaceRow> {
  const found = await findWorkspaceByName(db, name);
  if (found) return found;
  try {
    const id = newId("ws", now);
    await exec(db, "INSERT INTO workspaces (id, name, enabled, created_at_m) VALUES (?, ?, TRUE, ?)", [id, name, now]);
    return { id, name, enabled: true };
  } catch (err) {
    if (!isDuplicateKey(err)) throw err;
    const again = await findWorkspaceByName(db, name);
    if (!again) throw err;
    return again;
  }
}

/** A new enabled workspace; throws WorkspaceNameTaken when the name is taken (never joins that one). */
export async function insertWorkspace(db: Queryable, w: { id: string; name: string; now: number }): Promise<void> {
  try {
    await exec(db, "INSERT INTO workspaces (id, name, enabled, created_at_m) VALUES (?, ?, TRUE, ?)", [w.id, w.name, w.now]);
  } catch (err) {
    if (isDuplicateKey(err)) throw new WorkspaceNameTaken();
    throw err;
  }
}
