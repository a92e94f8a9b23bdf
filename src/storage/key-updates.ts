import { newId } from "../core/ids.js";
import type { RatelimitConfig } from "../core/records.js";
import { exec, placeholders, type Queryable, rows } from "./sql.js";

/** Sets the given columns of a key (names are fixed by the caller, never from input). */
export async function updateKeyColumns(db: Queryable, keyId: string, cols: Record<string, string | number | boolean | null>, now: number): Promise<void> {
  const names = Object.keys(cols);
  const sets = [...names.map((n) => `${n} = ?`), "updated_at_m = ?"];
  await exec(db, `UPDATE \`keys\` SET ${sets.join(", ")} WHERE id = ?`, [...names.map((n) => cols[n] ?? null), now, keyId]);
}

/** Replaces a key's (or identity's) rate limits by name: existing names keep their id. */
export async function replaceRatelimits(
  db: Queryable,
  owner: { workspaceId: string; keyId?: string; identityId?: string },
  wanted: RatelimitConfig[],
  now: number,
): Promise<void> {
  const col = owner.keyId !== undefined ? "key_id" : "identity_id";
  const ownerId = (owner.keyId ?? owner.identityId) as string;
  const existing = await rows(db, `SELECT id, name FROM ratelimits WHERE ${col} = ? FOR UPDATE`, [ownerId]);
  const byName = new Map(existing.map((r) => [String(r.name), String(r.id)]));
  const keep = new Set(wanted.map((w) => w.name));
  const gone = existing.filter((r) => !keep.has(String(r.name))).map((r) => String(r.id));
  if (gone.length > 0) await exec(db, `DELETE FROM ratelimits WHERE id IN (${placeholders(gone.length)})`, gone);
  for (const w of wanted) {
    const id = byName.get(w.name);
    if (id !== undefined) {
      await exec(db, "UPDATE ratelimits SET `limit` = ?, duration = ?, auto_apply = ?, updated_at_m = ? WHERE id = ?", [
        w.limit,
        w.duration,
        w.autoApply,
        now,
        id,
      ]);
    } else {
      await exec(
        db,
        "INSERT INTO ratelimits (id, workspace_id, name, key_id, identity_id, `limit`, duration, auto_apply, created_at_m) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [w.id, owner.workspaceId, w.name, owner.keyId ?? null, owner.identityId ?? null, w.limit, w.duration, w.autoApply, now],
      );
    }
  }
}

export async function clearKeyPermissions(db: Queryable, keyId: string): Promise<void> {
  await exec(db, "DELETE FROM keys_permissions WHERE key_id = ?", [keyId]);
}

export async function clearKeyRoles(db: Queryable, keyId: string): Promise<void> {
  await exec(db, "DELETE FROM keys_roles WHERE key_id = ?", [keyId]);
}

/** credits set/increment/decrement in one statement each; returns the balance after, or undefined when unlimited. */
export async function changeCredits(
  db: Queryable,
  keyId: string,
  op: "increment" | "decrement",
  value: number,
  max: number,
): Promise<{ found: boolean; remaining: number | undefined }> {
  const expr =
    op === "increment" ? "LAST_INSERT_ID(LEAST(remaining_requests + ?, ?))" : "LAST_INSERT_ID(IF(remaining_requests > ?, remaining_requests - ?, 0))";
  const params = op === "increment" ? [value, max, keyId] : [value, value, keyId];
  const r = await exec(db, `UPDATE \`keys\` SET remaining_requests = ${expr} WHERE id = ? AND remaining_requests IS NOT NULL`, params);
  if (r.affectedRows === 1 || r.changedRows === 1) return { found: true, remaining: Number(r.insertId) };
  return { found: false, remaining: undefined };
}

/** Copies a key's direct permissions, roles and rate limits (with new ids) onto another key. */
export async function copyKeyRelations(db: Queryable, from: string, to: string, workspaceId: string, now: number): Promise<void> {
  await exec(
    db,
    "INSERT INTO keys_permissions (key_id, permission_id, workspace_id, created_at_m) SELECT ?, permission_id, workspace_id, ? FROM keys_permissions WHERE key_id = ?",
    [to, now, from],
  );
  await exec(db, "INSERT INTO keys_roles (key_id, role_id, workspace_id, created_at_m) SELECT ?, role_id, workspace_id, ? FROM keys_roles WHERE key_id = ?", [
    to,
    now,
    from,
  ]);
  const limits = await rows(db, "SELECT name, `limit`, duration, auto_apply FROM ratelimits WHERE key_id = ?", [from]);
  for (const l of limits) {
    await exec(db, "INSERT INTO ratelimits (id, workspace_id, name, key_id, `limit`, duration, auto_apply, created_at_m) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [
      newId("rl", now),
      workspaceId,
      String(l.name),
      to,
      Number(l.limit),
      Number(l.duration),
      Boolean(l.auto_apply),
      now,
    ]);
  }
}
