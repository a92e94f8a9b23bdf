// Key migrations (domain/keys/migrate.ts): a workspace's record of how the hashes it
// imports were computed, and the bulk writes of keys.migrateKeys. An import
// batch is up to 1,000 keys, so every write here is a multi-row statement: a
// batch costs a few round trips, not a few per key.
import { newId } from "../core/ids.js";
import type { RatelimitConfig } from "../core/records.js";
import { exec, one, type Pool, type PoolConnection, placeholders, type Queryable, retryingDeadlocks, rows, transaction } from "./sql.js";

/**
 * How the imported hashes of a migration were computed: `sha256`, keyhold's own hash (base64 SHA-256 of the whole
 * key); or the hex SHA-256 of the key's long token that github.com/seamapi/prefixed-api-key stores
 * (domain/keys/migrated-lookup.ts).
 */
export type MigrationAlgorithm = "sha256" | "github.com/seamapi/prefixed-api-key";

export interface KeyMigration {
  id: string;
  algorithm: MigrationAlgorithm;
}

export async function insertKeyMigration(
  db: Queryable,
  m: { id: string; workspaceId: string; algorithm: MigrationAlgorithm; createdAt: number },
): Promise<void> {
  await exec(db, "INSERT INTO key_migrations (id, workspace_id, algorithm, created_at_m) VALUES (?, ?, ?, ?)", [m.id, m.workspaceId, m.algorithm, m.createdAt]);
}

/** A migration of the workspace; another workspace's migration is not found. */
export async function findKeyMigration(db: Queryable, workspaceId: string, id: string): Promise<KeyMigration | null> {
  const r = await one(db, "SELECT id, algorithm FROM key_migrations WHERE id = ? AND workspace_id = ?", [id, workspaceId]);
  // The collation ignores trailing spaces: `mig_x ` would find `mig_x`, which is not the id asked for.
  return r && String(r.id) === id ? { id, algorithm: String(r.algorithm) as MigrationAlgorithm } : null;
}

/** Rows per multi-row statement: well under max_allowed_packet and the placeholder limit. */
const CHUNK = 1000;

async function inChunks<T>(items: readonly T[], size: number, fn: (chunk: T[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await fn(items.slice(i, i + size));
}

/**
 * The hashes among these that some key already has, in any workspace and
 * deleted or not: keys.hash is unique across the whole table.
 */
export async function hashesInUse(db: Queryable, hashes: readonly string[]): Promise<Set<string>> {
  const used = new Set<string>();
  await inChunks(hashes, CHUNK, async (chunk) => {
    for (const r of await rows(db, `SELECT hash FROM \`keys\` WHERE hash IN (${placeholders(chunk.length)})`, chunk)) used.add(String(r.hash));
  });
  return used;
}

/**
 * Finds or creates one row per name in a workspace table with a unique
 * (workspace_id, name) index, and returns name -> id. Run outside a transaction
 * (each statement commits) so concurrent imports find each other's rows; names
 * go in sorted order and a deadlock is retried, as in relations.ts.
 */
/** Told, inside the transaction that made them, which rows were created (for their audit records). */
export type OnCreated = (conn: PoolConnection, created: ReadonlyArray<{ name: string; id: string }>) => Promise<void>;

async function ensureNamed(
  db: Queryable,
  t: { select: string; insert: string; row: (name: string) => Array<string | number | null> },
  workspaceId: string,
  names: readonly string[],
  onCreated?: { pool: Pool; created: OnCreated },
): Promise<Map<string, string>> {
  const unique = [...new Set(names)].sort();
  const ids = new Map<string, string>();
  const asked = new Set(unique);
  const read = async (q: Queryable, chunk: string[], lock: boolean) => {
    const found = await rows(q, `${t.select} (${placeholders(chunk.length)})${lock ? " LOCK IN SHARE MODE" : ""}`, [workspaceId, ...chunk]);
    // The collation ignores trailing spaces; only an exact match is the row asked for.
    for (const r of found) if (asked.has(String(r.name))) ids.set(String(r.name), String(r.id));
  };
  await inChunks(unique, CHUNK, (chunk) => read(db, chunk, false));
  const missing = unique.filter((n) => !ids.has(n));
  if (missing.length === 0) return ids;
  const create = async (q: Queryable, chunk: string[], inTransaction: boolean): Promise<Array<{ name: string; id: string }>> => {
    const made = chunk.map(t.row);
    const values = made.map((r) => `(${r.map(() => "?").join(", ")})`).join(", ");
    const insert = () => exec(q, `${t.insert} VALUES ${values}`, made.flat());
    // In a transaction a deadlock has already rolled all of it back: retrying the
    // statement alone would commit it outside the transaction, away from its
    // audit record. transaction() retries the whole of it instead.
    await (inTransaction ? insert() : retryingDeadlocks(insert));
    const lock = inTransaction;
    await read(q, chunk, lock);
    // Ours where the row read back has the id this call generated; a concurrent caller's otherwise.
    return chunk.flatMap((name, i) => (ids.get(name) === made[i]?.[0] ? [{ name, id: String(made[i]?.[0]) }] : []));
  };
  if (onCreated === undefined) {
    await inChunks(missing, CHUNK, (chunk) => create(db, chunk, false));
    return ids;
  }
  // Audited: the rows and their records in one transaction. The read back is a
  // locking (current) read, which sees a concurrent caller's committed rows.
  await transaction(onCreated.pool, async (conn) => {
    const created: Array<{ name: string; id: string }> = [];
    await inChunks(missing, CHUNK, async (chunk) => created.push(...(await create(conn, chunk, true))));
    if (created.length > 0) await onCreated.created(conn, created);
  });
  return ids;
}

/** Live identities by externalId, created (meta `{}`, no limits) when missing. */
export const ensureIdentities = (
  db: Queryable,
  workspaceId: string,
  externalIds: readonly string[],
  now: number,
  onCreated?: { pool: Pool; created: OnCreated },
) =>
  ensureNamed(
    db,
    {
      select: "SELECT id, external_id AS name FROM identities WHERE workspace_id = ? AND deleted = 0 AND external_id IN",
      insert: "INSERT IGNORE INTO identities (id, workspace_id, external_id, meta, deleted, created_at_m)",
      row: (externalId) => [newId("id", now), workspaceId, externalId, "{}", 0, now],
    },
    workspaceId,
    externalIds,
    onCreated,
  );

/** Permissions by slug, created (name = slug) when missing, as createKey creates them. */
export const ensurePermissionSlugs = (
  db: Queryable,
  workspaceId: string,
  slugs: readonly string[],
  now: number,
  onCreated?: { pool: Pool; created: OnCreated },
) =>
  ensureNamed(
    db,
    {
      select: "SELECT id, slug AS name FROM permissions WHERE workspace_id = ? AND slug IN",
      insert: "INSERT IGNORE INTO permissions (id, workspace_id, name, slug, description, created_at_m)",
      row: (slug) => [newId("perm", now), workspaceId, slug, slug, `Auto-created permission: ${slug}`, now],
    },
    workspaceId,
    slugs,
    onCreated,
  );

/** Roles by name, created (without permissions) when missing. */
export const ensureRoleNames = (db: Queryable, workspaceId: string, names: readonly string[], now: number, onCreated?: { pool: Pool; created: OnCreated }) =>
  ensureNamed(
    db,
    {
      select: "SELECT id, name FROM roles WHERE workspace_id = ? AND name IN",
      insert: "INSERT IGNORE INTO roles (id, workspace_id, name, description, created_at_m)",
      row: (name) => [newId("role", now), workspaceId, name, `Auto-created role: ${name}`, now],
    },
    workspaceId,
    names,
    onCreated,
  );

/**
 * How many of these permission, role or (live) identity ids still exist,
 * share-locked until the transaction ends so none can be deleted before the
 * links to it commit.
 */
export async function lockLive(db: Queryable, table: "permissions" | "roles" | "identities", workspaceId: string, ids: readonly string[]): Promise<number> {
  let live = 0;
  const alive = table === "identities" ? " AND deleted = 0" : "";
  await inChunks(ids, CHUNK, async (chunk) => {
    const found = await rows(db, `SELECT id FROM ${table} WHERE workspace_id = ?${alive} AND id IN (${placeholders(chunk.length)}) LOCK IN SHARE MODE`, [
      workspaceId,
      ...chunk,
    ]);
    live += found.length;
  });
  return live;
}

export interface MigratedKeyRow {
  id: string;
  hash: string;
  name: string | undefined;
  identityId: string | undefined;
  meta: string | undefined;
  expires: number | undefined;
  enabled: boolean;
  remaining: number | undefined;
  refillAmount: number | undefined;
  refillDay: number | undefined;
  ratelimits: RatelimitConfig[];
  permissionIds: string[];
  roleIds: string[];
}

export interface MigrationTarget {
  workspaceId: string;
  apiId: string;
  keyAuthId: string;
  migrationId: string;
  /** Random bytes a reroll of the key uses (the imported key's own length is unknown). */
  byteLength: number;
  now: number;
}

/**
 * Inserts the key rows, skipping those whose hash is taken meanwhile (a
 * concurrent import or createKey), and returns the ids of those inserted. Run
 * it in the transaction that then adds their relations (insertKeyRelations).
 */
export async function insertMigratedKeys(db: Queryable, t: MigrationTarget, keys: readonly MigratedKeyRow[]): Promise<Set<string>> {
  const inserted = new Set<string>();
  await inChunks(keys, CHUNK, async (chunk) => {
    const values = chunk.map(() => "(?, ?, ?, ?, ?, '', NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, FALSE, ?, ?)").join(", ");
    const params = chunk.flatMap((k) => [
      k.id,
      t.keyAuthId,
      t.apiId,
      t.workspaceId,
      k.hash,
      t.byteLength,
      k.name ?? null,
      k.identityId ?? null,
      k.meta ?? null,
      k.expires ?? null,
      k.enabled,
      k.remaining ?? null,
      k.refillAmount ?? null,
      k.refillDay ?? null,
      t.now,
      t.now,
      t.migrationId,
    ]);
    // A taken hash (or, never in practice, id) leaves that row out instead of failing the batch.
    await exec(
      db,
      `INSERT INTO \`keys\` (id, key_auth_id, api_id, workspace_id, hash, start, prefix, byte_length, name, identity_id, meta,
         expires_at_m, enabled, remaining_requests, refill_amount, refill_day, last_refill_at_m, recoverable, created_at_m, pending_migration_id)
       VALUES ${values} ON DUPLICATE KEY UPDATE pk = pk`,
      params,
    );
    const ids = chunk.map((k) => k.id);
    for (const r of await rows(db, `SELECT id FROM \`keys\` WHERE id IN (${placeholders(ids.length)})`, ids)) inserted.add(String(r.id));
  });
  return inserted;
}

/** The rate limits, direct permissions and roles of freshly inserted keys. */
export async function insertKeyRelations(db: Queryable, workspaceId: string, keys: readonly MigratedKeyRow[], now: number): Promise<void> {
  const limits = keys.flatMap((k) => k.ratelimits.map((l) => [l.id, workspaceId, l.name, k.id, null, l.limit, l.duration, l.autoApply, now]));
  await inChunks(limits, CHUNK, (chunk) =>
    exec(
      db,
      `INSERT INTO ratelimits (id, workspace_id, name, key_id, identity_id, \`limit\`, duration, auto_apply, created_at_m)
       VALUES ${chunk.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
      chunk.flat(),
    ),
  );
  const links = async (table: "keys_permissions" | "keys_roles", column: string, pairs: Array<[string, string]>) =>
    inChunks(pairs, CHUNK * 4, (chunk) =>
      exec(
        db,
        `INSERT INTO ${table} (key_id, ${column}, workspace_id, created_at_m) VALUES ${chunk.map(() => "(?, ?, ?, ?)").join(", ")}`,
        chunk.flatMap(([keyId, id]) => [keyId, id, workspaceId, now]),
      ),
    );
  await links(
    "keys_permissions",
    "permission_id",
    keys.flatMap((k) => k.permissionIds.map((p): [string, string] => [k.id, p])),
  );
  await links(
    "keys_roles",
    "role_id",
    keys.flatMap((k) => k.roleIds.map((r): [string, string] => [k.id, r])),
  );
}

/** A live key of a live API waiting for its first verification under this migration, by its imported hash. */
export async function findPendingKey(
  db: Queryable,
  workspaceId: string,
  migrationId: string,
  hash: string,
): Promise<{ id: string; apiId: string } | undefined> {
  const r = await one(
    db,
    `SELECT k.id, k.api_id FROM \`keys\` k JOIN apis a ON a.id = k.api_id AND a.deleted_at_m IS NULL
      WHERE k.hash = ? AND k.pending_migration_id = ? AND k.workspace_id = ? AND k.deleted_at_m IS NULL`,
    [hash, migrationId, workspaceId],
  );
  return r && { id: String(r.id), apiId: String(r.api_id) };
}

/**
 * Moves a pending key to the standard hash and clears its marker, only if it is
 * still pending with the imported hash (so of two concurrent verifications one
 * wins). False when another got there first.
 */
export async function completeKeyMigration(
  db: Queryable,
  k: { id: string; migrationId: string; importedHash: string; hash: string; start: string },
): Promise<boolean> {
  const r = await exec(db, "UPDATE `keys` SET hash = ?, start = ?, pending_migration_id = NULL WHERE id = ? AND hash = ? AND pending_migration_id = ?", [
    k.hash,
    k.start,
    k.id,
    k.importedHash,
    k.migrationId,
  ]);
  return r.affectedRows === 1;
}

/** Whether a live key has this hash (read past any cache). */
export async function hashIsLive(db: Queryable, hash: string): Promise<boolean> {
  return (await one(db, "SELECT id FROM `keys` WHERE hash = ? AND deleted_at_m IS NULL", [hash])) !== undefined;
}
