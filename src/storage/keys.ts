import { type IdentityRecord, type KeyDetails, NONE, type RatelimitConfig } from "../core/records.js";
import {
  commitInOneTrip,
  exec,
  groupBy,
  num,
  one,
  optNum,
  optStr,
  type Pool,
  placeholders,
  preparedRows,
  type Queryable,
  type Row,
  retryingDeadlocks,
  rows,
  type Statement,
  transaction,
} from "./sql.js";

// With the key's own columns: its live identity (joined), and whether it has
// roles, direct permissions, limits or identity limits at all. Most keys have
// none of them, and then the key's row is its whole record: a batch of cold
// keys reads in one statement, not two (withRelations).
const keyColumns = (lastUsed: string): string => `k.id, k.hash, k.workspace_id, k.api_id, k.key_auth_id, k.start, k.prefix, k.byte_length, k.name,
  k.meta, k.expires_at_m, k.enabled, k.remaining_requests, k.refill_amount, k.refill_day,
  k.last_refill_at_m, ${lastUsed} AS last_used_at_m, k.recoverable, k.created_at_m, k.updated_at_m,
  i.id AS live_identity_id, i.external_id AS identity_external_id, i.meta AS identity_meta,
  EXISTS (SELECT 1 FROM keys_roles xr WHERE xr.key_id = k.id) AS has_roles,
  EXISTS (SELECT 1 FROM keys_permissions xp WHERE xp.key_id = k.id) AS has_permissions,
  EXISTS (SELECT 1 FROM ratelimits xl WHERE xl.key_id = k.id) AS has_limits,
  EXISTS (SELECT 1 FROM ratelimits xi WHERE xi.identity_id = i.id) AS identity_has_limits`;
/** A key's last use (migrations/0014): the greater of keys_last_used's (LAST_USE_JOIN) and the key row's own. */
const KEY_COLUMNS = keyColumns("GREATEST(k.last_used_at_m, COALESCE(lu.last_used_at_m, 0))");
/**
 * The verification's lookup leaves the last use out (0): a verified key's
 * record has no use for it (domain/keys/lookup.ts, toRecord), and the join
 * cost the database 6-8 µs a key on the miss path (batches of 10 and 16
 * hashes, 1,000,000 keys: 34.5-37.5 against 28.5-29.5 and 29-30 against
 * 22.5-23 µs a key, three runs each).
 */
const VERIFY_COLUMNS = keyColumns("0");

/** Live keys (not deleted) of live APIs, with their live identity if any (alias i). */
const LIVE_KEYS = "FROM `keys` k JOIN apis a ON a.id = k.api_id AND a.deleted_at_m IS NULL LEFT JOIN identities i ON i.id = k.identity_id AND i.deleted = 0";
/** ... and their last use (alias lu, KEY_COLUMNS). */
const LIVE_FROM = `${LIVE_KEYS} LEFT JOIN keys_last_used lu ON lu.key_id = k.id`;

export interface NewKeyRow {
  id: string;
  keyAuthId: string;
  apiId: string;
  workspaceId: string;
  hash: string;
  start: string;
  prefix: string | undefined;
  byteLength: number;
  name: string | undefined;
  identityId: string | undefined;
  meta: string | undefined;
  expires: number | undefined;
  enabled: boolean;
  remaining: number | undefined;
  refillAmount: number | undefined;
  refillDay: number | undefined;
  recoverable: boolean;
  now: number;
}

export async function insertKeyRow(db: Queryable, k: NewKeyRow): Promise<void> {
  const { sql, params } = keyRowInsert(k);
  await exec(db, sql, params);
}

/** The key's INSERT, to run alone (insertKeyRow) or in a group (commitInOneTrip). */
export function keyRowInsert(k: NewKeyRow): Statement {
  return {
    sql: `INSERT INTO \`keys\` (id, key_auth_id, api_id, workspace_id, hash, start, prefix, byte_length, name, identity_id, meta,
       expires_at_m, enabled, remaining_requests, refill_amount, refill_day, last_refill_at_m, recoverable, created_at_m)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    // Nothing reads LAST_INSERT_ID() for it: in a group of plain createKeys, one INSERT for all (sql.ts, commitWithOthers).
    rows: true,
    params: [
      k.id,
      k.keyAuthId,
      k.apiId,
      k.workspaceId,
      k.hash,
      k.start,
      k.prefix ?? null,
      k.byteLength,
      k.name ?? null,
      k.identityId ?? null,
      k.meta ?? null,
      k.expires ?? null,
      k.enabled,
      k.remaining ?? null,
      k.refillAmount ?? null,
      k.refillDay ?? null,
      k.now,
      k.recoverable,
      k.now,
    ],
  };
}

export async function insertRatelimits(
  db: Queryable,
  owner: { workspaceId: string; keyId?: string; identityId?: string },
  limits: RatelimitConfig[],
  now: number,
): Promise<void> {
  const s = ratelimitsInsert(owner, limits, now);
  if (s !== undefined) await exec(db, s.sql, s.params);
}

/** The INSERT of an owner's limits; undefined for none. */
export function ratelimitsInsert(
  owner: { workspaceId: string; keyId?: string; identityId?: string },
  limits: RatelimitConfig[],
  now: number,
): Statement | undefined {
  if (limits.length === 0) return undefined;
  const values = limits.map(() => "(?, ?, ?, ?, ?, ?, ?, ?, ?)").join(", ");
  return {
    sql: `INSERT INTO ratelimits (id, workspace_id, name, key_id, identity_id, \`limit\`, duration, auto_apply, created_at_m) VALUES ${values}`,
    rows: true,
    params: limits.flatMap((l) => [l.id, owner.workspaceId, l.name, owner.keyId ?? null, owner.identityId ?? null, l.limit, l.duration, l.autoApply, now]),
  };
}

/** What a key row says of its relations: which of withRelations's reads it needs. */
interface KeyRelations {
  roles: boolean;
  permissions: boolean;
  limits: boolean;
  /** The live identity's own columns; undefined for none (or a deleted one). */
  identity: { id: string; externalId: string; metaText: string | undefined; limits: boolean } | undefined;
}

/** A key row read: its details, their relations still empty, and which it has. */
interface KeyRow {
  details: KeyDetails;
  relations: KeyRelations;
}

function toDetails(r: Row): KeyRow {
  const metaText = optStr(r.meta);
  const refillAmount = optNum(r.refill_amount);
  const identityId = optStr(r.live_identity_id);
  // One literal with every field (no rest or spread): V8 copies a rest-destructured
  // object property by property through the runtime (12% of a cold batch's CPU).
  const details: KeyDetails = {
    id: String(r.id),
    hash: String(r.hash),
    workspaceId: String(r.workspace_id),
    apiId: String(r.api_id),
    keyAuthId: String(r.key_auth_id),
    start: String(r.start),
    prefix: optStr(r.prefix),
    byteLength: num(r.byte_length),
    name: optStr(r.name),
    meta: metaText === undefined ? undefined : (JSON.parse(metaText) as Record<string, unknown>),
    metaSize: metaText?.length ?? 0,
    expires: optNum(r.expires_at_m),
    enabled: Boolean(r.enabled),
    remaining: optNum(r.remaining_requests),
    limitedCredits: r.remaining_requests !== null,
    refill: refillAmount === undefined ? undefined : { amount: refillAmount, day: optNum(r.refill_day) },
    lastRefillAt: optNum(r.last_refill_at_m) ?? num(r.created_at_m),
    lastUsedAt: num(r.last_used_at_m),
    recoverable: Boolean(r.recoverable),
    createdAt: num(r.created_at_m),
    updatedAt: optNum(r.updated_at_m),
    identity: undefined,
    ratelimits: NONE,
    permissions: NONE,
    roles: NONE,
  };
  return {
    details,
    relations: {
      roles: Boolean(r.has_roles),
      permissions: Boolean(r.has_permissions),
      limits: Boolean(r.has_limits),
      identity:
        identityId === undefined
          ? undefined
          : { id: identityId, externalId: String(r.identity_external_id), metaText: optStr(r.identity_meta), limits: Boolean(r.identity_has_limits) },
    },
  };
}

export const toLimit = (r: Row): RatelimitConfig => ({
  id: String(r.id),
  name: String(r.name),
  limit: num(r.limit),
  duration: num(r.duration),
  autoApply: Boolean(r.auto_apply),
});

/**
 * Adds roles, permissions (direct and from roles), rate limits and the
 * identity's limits to key rows, in one statement for all the keys that have
 * any (the parts put together with UNION ALL in rows of one shape, `kind`
 * telling them apart), and none for keys that have none: the key row says
 * which it has (KEY_COLUMNS). The identity itself comes with the key row.
 * Measured on MariaDB 10.11 (keys without relations read by hash, batches of
 * 10, 4 in flight): the key row and an always-sent relations statement cost the
 * database 45-54 µs a key and keyhold 51-56; the key row alone, with its four
 * EXISTS (~3.5 µs each), 32.5-35 and 29. One key a batch: 205-211 and 121-129
 * before, 117-120 and 70-71 after.
 */
async function withRelations(db: Queryable, base: KeyRow[]): Promise<KeyDetails[]> {
  if (base.length === 0) return [];
  const withRoles: string[] = [];
  const withPermissions: string[] = [];
  const withLimits: string[] = [];
  const identityLimitOwners = new Set<string>();
  for (const { details, relations } of base) {
    if (relations.roles) withRoles.push(details.id);
    if (relations.permissions) withPermissions.push(details.id);
    if (relations.limits) withLimits.push(details.id);
    if (relations.identity?.limits) identityLimitOwners.add(relations.identity.id);
  }
  // Columns: kind, owner (key or identity id), id, name, lim, duration, auto_apply.
  const parts: string[] = [];
  const params: string[] = [];
  // Each part's `IN (?)` becomes one placeholder per owner.
  const part = (sql: string, owners: readonly string[]) => {
    parts.push(sql.replace("(?)", `(${placeholders(owners.length)})`));
    params.push(...owners);
  };
  const noLimit = "NULL AS id, NULL AS lim, NULL AS duration, NULL AS auto_apply";
  if (withRoles.length > 0) {
    part(
      `SELECT 'role' AS kind, kr.key_id AS owner, r.name AS name, ${noLimit} FROM keys_roles kr JOIN roles r ON r.id = kr.role_id WHERE kr.key_id IN (?)`,
      withRoles,
    );
    part(
      `SELECT 'perm' AS kind, kr.key_id AS owner, p.slug AS name, ${noLimit}
         FROM keys_roles kr JOIN roles_permissions rp ON rp.role_id = kr.role_id JOIN permissions p ON p.id = rp.permission_id WHERE kr.key_id IN (?)`,
      withRoles,
    );
  }
  if (withPermissions.length > 0) {
    part(
      `SELECT 'perm' AS kind, kp.key_id AS owner, p.slug AS name, ${noLimit} FROM keys_permissions kp JOIN permissions p ON p.id = kp.permission_id WHERE kp.key_id IN (?)`,
      withPermissions,
    );
  }
  const limitColumns = "name, id, `limit` AS lim, duration, auto_apply";
  if (withLimits.length > 0) part(`SELECT 'limit' AS kind, key_id AS owner, ${limitColumns} FROM ratelimits WHERE key_id IN (?)`, withLimits);
  if (identityLimitOwners.size > 0) {
    part(`SELECT 'identityLimit' AS kind, identity_id AS owner, ${limitColumns} FROM ratelimits WHERE identity_id IN (?)`, [...identityLimitOwners]);
  }
  // Ordered by name as a whole: roles and limits keep their order by name within each key (utf8mb4_bin, as before).
  const all = parts.length === 0 ? [] : await rows(db, `${parts.join(" UNION ALL ")} ORDER BY name`, params);
  const of = (kind: string) => all.filter((r) => r.kind === kind);
  const asLimit = (r: Row): RatelimitConfig => ({
    id: String(r.id),
    name: String(r.name),
    limit: num(r.lim),
    duration: num(r.duration),
    autoApply: Boolean(r.auto_apply),
  });
  const roles = groupBy(of("role"), "owner", (r) => String(r.name));
  const permissions = groupBy(of("perm"), "owner", (r) => String(r.name));
  const limits = groupBy(of("limit"), "owner", asLimit);
  const identityLimits = groupBy(of("identityLimit"), "owner", asLimit);
  // One record for an identity however many of the batch's keys share it.
  const identities = new Map<string, IdentityRecord>();
  const identityOf = (i: NonNullable<KeyRelations["identity"]>): IdentityRecord => {
    let record = identities.get(i.id);
    if (record === undefined) {
      const meta = i.metaText === undefined ? undefined : (JSON.parse(i.metaText) as Record<string, unknown>);
      record = {
        id: i.id,
        externalId: i.externalId,
        meta: meta && Object.keys(meta).length > 0 ? meta : undefined,
        ratelimits: identityLimits.get(i.id) ?? [],
      };
      identities.set(i.id, record);
    }
    return record;
  };
  return base.map(({ details, relations }) => {
    const id = details.id;
    details.roles = roles.get(id) ?? details.roles;
    const own = permissions.get(id);
    if (own !== undefined) details.permissions = [...new Set(own)].sort();
    details.ratelimits = limits.get(id) ?? details.ratelimits;
    if (relations.identity !== undefined) details.identity = identityOf(relations.identity);
    return details;
  });
}

/** A live key of a live API by hash, in any workspace (the caller checks the workspace). */
export async function findLiveKeyByHash(db: Queryable, hash: string): Promise<KeyDetails | undefined> {
  return (await findLiveKeysByHashes(db, [hash])).get(hash);
}

/**
 * The IN-list lengths the batch lookup is prepared at: a batch is padded up to
 * the next one (with its first hash again: a value the list holds already adds
 * no row). Prepared, the server parses the lookup once per connection and
 * length instead of once per batch, and the answer comes in the binary
 * protocol. Measured at the statement level (MariaDB 10.11, 1,000,000 keys in
 * the buffer pool, 20,000 found a run, two runs each way): batches of 10 (the
 * miss path's at 4,000-5,000 cold keys a second), the database's CPU 34-40 ->
 * 29-30 µs a key and Node's 14-21 -> 8.4-12.6; of 16, 28-30 -> 24.5-25.5 and
 * 13-15 -> 6.7-7.5; of 40 (padded to 64), 19.5-22 -> 17.5-18 and 6.5-6.8 ->
 * 4.0-5.1. Nine lengths at most: nine prepared statements a pooled
 * connection, a bounded share of the server's max_prepared_stmt_count.
 */
const HASH_LIST_LENGTHS = [1, 2, 4, 8, 16, 32, 64, 128, 256];
type LookupSql = (n: number) => string;
const withLastUse: LookupSql = (n) => `SELECT ${KEY_COLUMNS} ${LIVE_FROM} WHERE k.hash IN (${placeholders(n)}) AND k.deleted_at_m IS NULL`;
const forVerification: LookupSql = (n) => `SELECT ${VERIFY_COLUMNS} ${LIVE_KEYS} WHERE k.hash IN (${placeholders(n)}) AND k.deleted_at_m IS NULL`;
const PREPARED = new Map<LookupSql, string[]>([withLastUse, forVerification].map((f) => [f, HASH_LIST_LENGTHS.map(f)]));

/** The live keys among these hashes (one query for all of them), by hash. */
export function findLiveKeysByHashes(db: Queryable, hashes: readonly string[]): Promise<Map<string, KeyDetails>> {
  return byHashes(db, hashes, withLastUse);
}

/** As findLiveKeysByHashes, for the verification's cache: lastUsedAt is 0 (VERIFY_COLUMNS). */
export function findKeysForVerification(db: Queryable, hashes: readonly string[]): Promise<Map<string, KeyDetails>> {
  return byHashes(db, hashes, forVerification);
}

async function byHashes(db: Queryable, hashes: readonly string[], sql: LookupSql): Promise<Map<string, KeyDetails>> {
  const found = new Map<string, KeyDetails>();
  if (hashes.length === 0) return found;
  const at = HASH_LIST_LENGTHS.findIndex((n) => n >= hashes.length);
  let rs: Row[];
  if (at < 0) rs = await rows(db, sql(hashes.length), [...hashes]);
  else {
    const params = [...hashes];
    while (params.length < (HASH_LIST_LENGTHS[at] as number)) params.push(hashes[0] as string);
    rs = await preparedRows(db, PREPARED.get(sql)?.[at] as string, params);
  }
  for (const d of await withRelations(db, rs.map(toDetails))) found.set(d.hash, d);
  return found;
}

/** A live key of a live API of this workspace, by id. */
export async function findLiveKeyById(db: Queryable, workspaceId: string, keyId: string): Promise<KeyDetails | undefined> {
  const r = await one(db, `SELECT ${KEY_COLUMNS} ${LIVE_FROM} WHERE k.id = ? AND k.workspace_id = ? AND k.deleted_at_m IS NULL`, [keyId, workspaceId]);
  if (!r) return undefined;
  return (await withRelations(db, [toDetails(r)]))[0];
}

/** One page of an API's live keys in id order: limit+1 rows tell whether more exist. */
export async function listLiveKeys(
  db: Queryable,
  q: { workspaceId: string; keyAuthId: string; limit: number; cursor: string | undefined; identityId: string | undefined },
): Promise<{ keys: KeyDetails[]; next: string | undefined }> {
  const where = ["k.key_auth_id = ?", "k.workspace_id = ?", "k.deleted_at_m IS NULL"];
  const params: (string | number)[] = [q.keyAuthId, q.workspaceId];
  if (q.cursor !== undefined) {
    where.push("k.id >= ?");
    params.push(q.cursor);
  }
  if (q.identityId !== undefined) {
    where.push("k.identity_id = ?");
    params.push(q.identityId);
  }
  // LIMIT as a literal: prepared LIMIT placeholders behave differently across MySQL and MariaDB.
  const rs = await rows(db, `SELECT ${KEY_COLUMNS} ${LIVE_FROM} WHERE ${where.join(" AND ")} ORDER BY k.id LIMIT ${q.limit + 1}`, params);
  const page = rs.slice(0, q.limit).map(toDetails);
  const next = rs.length > q.limit ? String(rs[q.limit]?.id) : undefined;
  return { keys: await withRelations(db, page), next };
}

/** LIKE's own characters taken literally, escaped with `!` (a backslash would depend on sql_mode NO_BACKSLASH_ESCAPES). */
const likeLiteral = (s: string): string => s.replace(/[!%_]/g, (c) => `!${c}`);

/**
 * The dashboard's key search over one API's live keys: an id containing `text`,
 * a start beginning with it, or a name or identity externalId containing it in
 * any case (utf8mb4_bin compares bytes, so both sides are lowered, both by the
 * database: JavaScript's rules differ, e.g. for a final sigma). One page of
 * `limit`, in id order; `more` when further keys match.
 */
export async function searchLiveKeys(
  db: Queryable,
  q: { workspaceId: string; keyAuthId: string; text: string; limit: number },
): Promise<{ keys: KeyDetails[]; more: boolean }> {
  const contains = `%${likeLiteral(q.text)}%`;
  const rs = await rows(
    db,
    `SELECT ${KEY_COLUMNS} ${LIVE_FROM}
     WHERE k.key_auth_id = ? AND k.workspace_id = ? AND k.deleted_at_m IS NULL
       AND (k.id LIKE ? ESCAPE '!' OR k.start LIKE ? ESCAPE '!' OR LOWER(k.name) LIKE LOWER(?) ESCAPE '!' OR LOWER(i.external_id) LIKE LOWER(?) ESCAPE '!')
     ORDER BY k.id LIMIT ${q.limit + 1}`,
    [q.keyAuthId, q.workspaceId, contains, `${likeLiteral(q.text)}%`, contains, contains],
  );
  return { keys: await withRelations(db, rs.slice(0, q.limit).map(toDetails)), more: rs.length > q.limit };
}

/**
 * Spends credits atomically: succeeds only when enough remain, so concurrent
 * verifications can never overspend. LAST_INSERT_ID(expr) hands the new balance
 * back in the same statement on MySQL and MariaDB alike.
 */
/** A conditional spend of one key's balance (cost, id, cost): LAST_INSERT_ID hands back the balance after it. */
const SPEND = "UPDATE `keys` SET remaining_requests = LAST_INSERT_ID(remaining_requests - ?) WHERE id = ? AND remaining_requests >= ?";

export async function spendCredits(db: Queryable, keyId: string, cost: number): Promise<{ ok: boolean; remaining: number | undefined }> {
  // A deadlock or certification conflict rolled the statement back: running it again is safe.
  const r = await retryingDeadlocks(() => exec(db, SPEND, [cost, keyId, cost]));
  if (r.affectedRows === 1) return { ok: true, remaining: Number(r.insertId) };
  const cur = await one(db, "SELECT remaining_requests FROM `keys` WHERE id = ?", [keyId]);
  return { ok: false, remaining: optNum(cur?.remaining_requests) };
}

/** What the same UPDATE spends of a key's balance in a batch of keys (spendCreditsOfKeys). */
export interface KeySpend {
  keyId: string;
  cost: number;
}

/**
 * spendCredits for several keys in one transaction and one round trip: the
 * keys' rows locked and read (`FOR UPDATE`, through the id index in id order,
 * so two instances' batches take the locks in the same order and never wait
 * for each other in a circle), then one conditional UPDATE of them all, each
 * key's cost picked by a CASE, then COMMIT. What each key had when locked
 * says what the UPDATE did to it: spent where it covered the cost. Resolves
 * to each key's balance after its spend, in the order given, or undefined
 * where the balance did not cover the cost (or the key has none): nothing was
 * spent of that key, and the caller decides it on its own. A key named more
 * than once is spent all its costs or none. A deadlock or
 * certification conflict rolls the whole batch back and it is sent again
 * (commitInOneTrip). Both statements name the id index (FORCE INDEX): a
 * locking statement that scans the table instead (the optimizer's choice when
 * the list holds much of a small table) locks every row it reads, in the
 * primary key's order.
 *
 * One UPDATE a key in the transaction, as first built, cost about twice as
 * much: a scratch harness (1,000 keys, 4 batches of 30 out at once,
 * bench/README.md "Credits of many keys: one UPDATE a batch"), 28-35 against
 * 17-20 µs of the database's CPU a key and 13-15 against 6-7 of Node's (each
 * statement's own parse, execution and answer). End to end (bench:ab
 * verifyCreditsMany) the difference is within the scenario's spread.
 */
export async function spendCreditsOfKeys(pool: Pool, spends: readonly KeySpend[]): Promise<Array<number | undefined>> {
  // A key named more than once is one WHEN of its costs together (a CASE takes a
  // key's first WHEN only: its later costs were reported spent and never were).
  const totals = new Map<string, number>();
  for (const s of spends) totals.set(s.keyId, (totals.get(s.keyId) ?? 0) + s.cost);
  const ids = [...totals.keys()];
  const cases = `CASE id${" WHEN ? THEN ?".repeat(ids.length)} END`;
  const caseParams = ids.flatMap((id) => [id, totals.get(id) as number]);
  const inList = placeholders(ids.length);
  const [locked] = await commitInOneTrip(pool, [
    { sql: `SELECT id, remaining_requests FROM \`keys\` FORCE INDEX (keys_id) WHERE id IN (${inList}) FOR UPDATE`, params: ids },
    {
      sql: `UPDATE \`keys\` FORCE INDEX (keys_id) SET remaining_requests = remaining_requests - ${cases} WHERE id IN (${inList}) AND remaining_requests >= ${cases}`,
      params: [...caseParams, ...ids, ...caseParams],
    },
  ]);
  const had = new Map<string, number | undefined>();
  for (const r of locked as Row[]) had.set(r.id as string, optNum(r.remaining_requests));
  // Where a key is named more than once, each spend reports the balance after it and those before it.
  const spent = new Map<string, number>();
  return spends.map(({ keyId, cost }) => {
    const before = had.get(keyId);
    if (before === undefined || before < (totals.get(keyId) as number)) return undefined;
    const upTo = (spent.get(keyId) ?? 0) + cost;
    spent.set(keyId, upTo);
    return before - upTo;
  });
}

/** Current balance (for cost 0 checks). */
export async function readCredits(db: Queryable, keyId: string): Promise<number | undefined> {
  const cur = await one(db, "SELECT remaining_requests FROM `keys` WHERE id = ?", [keyId]);
  return optNum(cur?.remaining_requests);
}

/**
 * Applies a due refill once: sets the balance to the refill amount (only when it
 * is below it) and records the time, guarded so that concurrent callers and
 * repeated calls in the same period do nothing more.
 */
export async function applyRefill(db: Queryable, keyId: string, periodStart: number, now: number): Promise<void> {
  await retryingDeadlocks(() =>
    exec(
      db,
      `UPDATE \`keys\` SET remaining_requests = IF(remaining_requests < refill_amount, refill_amount, remaining_requests),
        last_refill_at_m = ?
      WHERE id = ? AND refill_amount IS NOT NULL AND remaining_requests IS NOT NULL
        AND (last_refill_at_m IS NULL OR last_refill_at_m < ?)`,
      [now, keyId, periodStart],
    ),
  );
}

/**
 * Writes last-used times (write-behind from the usage recorder) into
 * keys_last_used, a later time never replaced by an earlier one. A row there
 * is a key id and a number, not the key's wide row (migrations/0014).
 */
export async function touchKeys(db: Queryable, used: Map<string, number>): Promise<void> {
  // In id order: instances flushing the same keys take their rows' locks in the
  // same order, so their upserts wait for each other instead of deadlocking.
  const all = [...used.keys()].sort();
  // Chunks keep each statement well under the 65,535-placeholder limit.
  for (let i = 0; i < all.length; i += 1000) await touchChunk(db, all.slice(i, i + 1000), used);
}

async function touchChunk(db: Queryable, ids: string[], used: Map<string, number>): Promise<void> {
  const params: (string | number)[] = [];
  for (const id of ids) params.push(id, used.get(id) ?? 0);
  // VALUES(x) rather than MySQL 8's row alias: MariaDB has no row alias.
  await exec(
    db,
    `INSERT INTO keys_last_used (key_id, last_used_at_m) VALUES ${ids.map(() => "(?, ?)").join(", ")} ON DUPLICATE KEY UPDATE last_used_at_m = GREATEST(last_used_at_m, VALUES(last_used_at_m))`,
    params,
  );
}

/**
 * Spends a batch one cost at a time under a row lock: each either fits what is
 * left (and is spent) or is refused whole. Returns, per cost, whether it was
 * spent and the balance after it; `unlimited` when the key has no balance.
 * A deadlock, or on a Galera cluster a certification conflict with a spend
 * committed through another node (reported as a deadlock at commit), rolls the
 * whole batch back, so it is decided again from the committed balance.
 */
export async function spendEach(
  pool: import("mysql2/promise").Pool,
  keyId: string,
  costs: readonly number[],
): Promise<{ unlimited: boolean; results: Array<{ ok: boolean; remaining: number }> }> {
  return transaction(pool, async (conn) => {
    const r = await one(conn, "SELECT remaining_requests FROM `keys` WHERE id = ? FOR UPDATE", [keyId]);
    const start = optNum(r?.remaining_requests);
    if (start === undefined) return { unlimited: true, results: [] };
    let left = start;
    const results = costs.map((c) => {
      if (c <= left) {
        left -= c;
        return { ok: true, remaining: left };
      }
      return { ok: false, remaining: left };
    });
    if (left !== start) await exec(conn, "UPDATE `keys` SET remaining_requests = ? WHERE id = ?", [left, keyId]);
    return { unlimited: false, results };
  });
}

/** Takes the key row's lock for the rest of the transaction, so concurrent changes of one key apply one after the other. */
export async function lockKeyRow(conn: Queryable, keyId: string): Promise<void> {
  await one(conn, "SELECT id FROM `keys` WHERE id = ? FOR UPDATE", [keyId]);
}

/** The key's raw identity link (kept even when the identity itself was deleted). */
export async function findIdentityIdOfKey(db: Queryable, keyId: string): Promise<string | undefined> {
  const r = await one(db, "SELECT identity_id FROM `keys` WHERE id = ?", [keyId]);
  return r?.identity_id === null || r?.identity_id === undefined ? undefined : String(r.identity_id);
}

/** Which of these hashes belong to keys of the workspace (deleted ones included). */
export async function findWorkspaceKeyHashes(db: Queryable, workspaceId: string, hashes: readonly string[]): Promise<Set<string>> {
  if (hashes.length === 0) return new Set();
  const rs = await rows(db, `SELECT hash FROM \`keys\` WHERE workspace_id = ? AND hash IN (${placeholders(hashes.length)})`, [workspaceId, ...hashes]);
  return new Set(rs.map((r) => String(r.hash)));
}
