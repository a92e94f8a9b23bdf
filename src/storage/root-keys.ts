import { exec, one, optNum, placeholders, type Queryable, type Row, rows } from "./sql.js";

export interface RootKeyRecord {
  id: string;
  workspaceId: string;
  permissions: string[];
  enabled: boolean;
  expiresAt: number | undefined;
  workspaceEnabled: boolean;
}

export async function insertRootKey(
  db: Queryable,
  r: {
    id: string;
    workspaceId: string;
    hash: string;
    start: string;
    name: string | null;
    permissions: string[];
    now: number;
    expiresAt?: number | undefined;
    enabled?: boolean;
  },
): Promise<void> {
  await exec(
    db,
    "INSERT INTO root_keys (id, workspace_id, hash, start, name, permissions, enabled, expires_at_m, created_at_m) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    [r.id, r.workspaceId, r.hash, r.start, r.name, JSON.stringify(r.permissions), r.enabled ?? true, r.expiresAt ?? null, r.now],
  );
}

/** A live root key by hash, with its workspace's state. */
export async function findRootKeyByHash(db: Queryable, hash: string): Promise<RootKeyRecord | undefined> {
  const r = await one(
    db,
    `SELECT rk.id, rk.workspace_id, rk.permissions, rk.enabled, rk.expires_at_m, w.enabled AS ws_enabled
       FROM root_keys rk JOIN workspaces w ON w.id = rk.workspace_id AND w.deleted_at_m IS NULL
      WHERE rk.hash = ? AND rk.deleted_at_m IS NULL`,
    [hash],
  );
  if (!r) return undefined;
  return {
    id: String(r.id),
    workspaceId: String(r.workspace_id),
    permissions: JSON.parse(String(r.permissions)) as string[],
    enabled: Boolean(r.enabled),
    expiresAt: optNum(r.expires_at_m),
    workspaceEnabled: Boolean(r.ws_enabled),
  };
}

export interface RootKeyListing {
  keyId: string;
  name: string;
  start: string;
  permissions: string[];
  enabled: boolean;
  expiresAt: number | undefined;
  createdAt: number;
  /** Approximate (written behind); undefined when never used. */
  lastUsedAt: number | undefined;
}

const LISTING = "id, workspace_id, hash, name, start, permissions, enabled, expires_at_m, created_at_m, last_used_at_m";

const listingOf = (r: Row): RootKeyListing => ({
  keyId: String(r.id),
  name: r.name === null ? "" : String(r.name),
  start: String(r.start),
  permissions: JSON.parse(String(r.permissions)) as string[],
  enabled: Boolean(r.enabled),
  expiresAt: optNum(r.expires_at_m),
  createdAt: Number(r.created_at_m),
  lastUsedAt: optNum(r.last_used_at_m),
});

/** The workspace's live root keys, oldest id first. */
export async function listRootKeys(db: Queryable, workspaceId: string): Promise<RootKeyListing[]> {
  const rs = await rows(db, `SELECT ${LISTING} FROM root_keys WHERE workspace_id = ? AND deleted_at_m IS NULL ORDER BY id`, [workspaceId]);
  return rs.map(listingOf);
}

export interface LockedRootKey extends RootKeyListing {
  workspaceId: string;
  hash: string;
}

/**
 * A live root key (of the workspace, when one is given), locked for the rest of
 * the transaction: two changes to one root key run one after the other.
 */
export async function lockRootKey(db: Queryable, keyId: string, workspaceId: string | undefined): Promise<LockedRootKey | undefined> {
  const r =
    workspaceId === undefined
      ? await one(db, `SELECT ${LISTING} FROM root_keys WHERE id = ? AND deleted_at_m IS NULL FOR UPDATE`, [keyId])
      : await one(db, `SELECT ${LISTING} FROM root_keys WHERE id = ? AND workspace_id = ? AND deleted_at_m IS NULL FOR UPDATE`, [keyId, workspaceId]);
  return r === undefined ? undefined : { ...listingOf(r), workspaceId: String(r.workspace_id), hash: String(r.hash) };
}

/** Writes the fields given (null expiresAt: never expires). */
export async function updateRootKeyRow(
  db: Queryable,
  keyId: string,
  set: { name?: string | null | undefined; permissions?: string[] | undefined; enabled?: boolean | undefined; expiresAt?: number | null | undefined },
  now: number,
): Promise<void> {
  const cols: string[] = ["updated_at_m = ?"];
  const params: (string | number | boolean | null)[] = [now];
  if (set.name !== undefined) {
    cols.push("name = ?");
    params.push(set.name);
  }
  if (set.permissions !== undefined) {
    cols.push("permissions = ?");
    params.push(JSON.stringify(set.permissions));
  }
  if (set.enabled !== undefined) {
    cols.push("enabled = ?");
    params.push(set.enabled);
  }
  if (set.expiresAt !== undefined) {
    cols.push("expires_at_m = ?");
    params.push(set.expiresAt);
  }
  await exec(db, `UPDATE root_keys SET ${cols.join(", ")} WHERE id = ?`, [...params, keyId]);
}

/** Soft-deletes a root key (locked by lockRootKey in the same transaction). */
export async function softDeleteRootKey(db: Queryable, keyId: string, now: number): Promise<void> {
  await exec(db, "UPDATE root_keys SET deleted_at_m = ? WHERE id = ? AND deleted_at_m IS NULL", [now, keyId]);
}

/** Writes root keys' last-used times (the write-behind's flush): one UPDATE per 1,000 keys. */
export async function touchRootKeys(db: Queryable, used: Map<string, number>): Promise<void> {
  const all = [...used.keys()];
  for (let i = 0; i < all.length; i += 1000) {
    const ids = all.slice(i, i + 1000);
    const params: (string | number)[] = [];
    for (const id of ids) params.push(id, used.get(id) ?? 0);
    // COALESCE: the column is NULL until first use, and GREATEST with NULL is NULL.
    await exec(
      db,
      `UPDATE root_keys SET last_used_at_m = GREATEST(COALESCE(last_used_at_m, 0), CASE id ${ids.map(() => "WHEN ? THEN ?").join(" ")} ELSE 0 END) WHERE id IN (${placeholders(ids.length)})`,
      [...params, ...ids],
    );
  }
}
