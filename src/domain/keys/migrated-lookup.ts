// verifyKey with a migrationId (a migration of keys.migrateKeys): when the
// standard lookup misses, the presented key may be one imported under that
// migration, still stored under the hash the other system computed. On a match
// the row is moved to the standard hash once, and from then on the key is found
// like any other, with or without the migrationId.
//
// A flood of bad keys with a migrationId costs the database no more than one
// without: migrations are cached (they never change once made), and a lookup
// that found nothing is remembered in the key cache's list of misses, with the
// same short TTL. A key imported meanwhile on another instance is therefore
// found up to that TTL late (~2 s, as a key created elsewhere after a miss);
// an import on this instance forgets the misses it makes wrong at once.
import { hash as digest } from "node:crypto";
import { LRUCache } from "lru-cache";
import { MISS } from "../../cache/verification-cache.js";
import type { KeyRecord } from "../../core/records.js";
import { completeKeyMigration, findKeyMigration, findPendingKey, hashIsLive, type KeyMigration } from "../../storage/key-migrations.js";
import { isDuplicateKey } from "../../storage/sql.js";
import { apiPermission, holdsAny, type Principal } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { keyRecordByHash } from "./lookup.js";

export const SEAMAPI = "github.com/seamapi/prefixed-api-key";

/** The longest `start` an answer may carry (KeyResponseData.start is at most 50 characters). */
const MAX_START = 50;

/**
 * What a seamapi migration knows of a presented key: the hash that
 * github.com/seamapi/prefixed-api-key stored for it (hex SHA-256 of the long
 * token) and the `start` to give it once adopted. Undefined for a key not shaped
 * like that library's keys, `prefix_shortToken_longToken`: exactly three
 * non-empty `_`-separated parts (the tokens are base58, and the library reads the
 * short token as the second part, so the prefix holds no `_` either). Its hash
 * covers the long token alone, so without this check `LONG` or `x_y_z_LONG`
 * would match the imported row and take it over for good.
 *
 * `start` is shaped as generate.ts shapes ours: the prefix, `_`, and the first 4
 * characters of the short token, the public half that seamapi itself looks keys
 * up by; nothing of the secret long token is shown.
 */
export function seamapiKey(key: string): { importedHash: string; start: string } | undefined {
  const parts = key.split("_");
  if (parts.length !== 3 || parts.includes("")) return undefined;
  const [prefix, short, long] = parts as [string, string, string];
  return {
    importedHash: digest("sha256", long, "hex"),
    start: [...`${prefix}_${short.slice(0, 4)}`].slice(0, MAX_START).join(""),
  };
}

/** Migrations by `${workspaceId}|${id}`, per database (one pool per process; several in tests). */
const migrationsByPool = new WeakMap<object, LRUCache<string, KeyMigration>>();

function knownMigrations(deps: Deps): LRUCache<string, KeyMigration> {
  let known = migrationsByPool.get(deps.pool);
  if (known === undefined) migrationsByPool.set(deps.pool, (known = new LRUCache({ max: 10_000 })));
  return known;
}

// Misses are remembered in the key cache's list of unknown hashes (its TTL, its
// bound, its bypass while invalidations cannot be received); `|` never occurs
// in a hash, so these entries cannot be mistaken for one.
const unknownMigration = (workspaceId: string, id: string) => `migration|${workspaceId}|${id}`;
const missedImport = (migrationId: string, importedHash: string) => `import|${migrationId}|${importedHash}`;

/** Keeps a migration found elsewhere (by keys.migrateKeys), so verifications find it even if remembered as unknown. */
export function rememberMigration(deps: Deps, workspaceId: string, m: KeyMigration): void {
  knownMigrations(deps).set(`${workspaceId}|${m.id}`, m);
}

/** Forgets remembered misses of these imported hashes: they are in the database now. */
export function forgetMissedImports(deps: Deps, migrationId: string, importedHashes: Iterable<string>): void {
  for (const h of importedHashes) deps.keyCache.delete(missedImport(migrationId, h));
}

/** The caller's workspace's migration with this id, through the cache; another workspace's is unknown. */
async function migrationOf(deps: Deps, workspaceId: string, id: string): Promise<KeyMigration | undefined> {
  const known = knownMigrations(deps);
  const cached = known.get(`${workspaceId}|${id}`);
  if (cached !== undefined) return cached;
  if (deps.keyCache.get(unknownMigration(workspaceId, id)) === MISS) return undefined;
  const version = deps.keyCache.version;
  const found = await findKeyMigration(deps.pool, workspaceId, id);
  if (found) known.set(`${workspaceId}|${id}`, found);
  else deps.keyCache.setMissRead(version, unknownMigration(workspaceId, id));
  return found ?? undefined;
}

/**
 * The key record for a presented key (whose standard hash is `hash`) under the
 * caller's migration `migrationId`, or undefined: an unknown migration (or one of
 * another workspace) reads as NOT_FOUND, like an unknown key.
 */
export async function keyRecordViaMigration(deps: Deps, p: Principal, key: string, hash: string, migrationId: string): Promise<KeyRecord | undefined> {
  const migration = await migrationOf(deps, p.workspaceId, migrationId);
  if (!migration) return undefined;
  // sha256 migrations imported the standard hash itself: there is nothing to adopt.
  const seamapi = migration.algorithm === SEAMAPI ? seamapiKey(key) : undefined;
  if (migration.algorithm === SEAMAPI && seamapi === undefined) return undefined;
  const missed = missedImport(migration.id, seamapi?.importedHash ?? hash);
  if (deps.keyCache.get(missed) === MISS) return undefined;
  // A miss read before a change committed must not be remembered after it.
  const version = deps.keyCache.version;
  const pending = seamapi !== undefined && (await adoptSeamapiKey(deps, p, hash, migration.id, seamapi));
  // This instance may still remember the standard hash as unknown although the key
  // now has it: moved just now, here or by a concurrent verification on another
  // instance, or imported since. Read past that memory once.
  if (!(await hashIsLive(deps.pool, hash))) {
    // A pending key this caller may not adopt is not remembered: one that may is not to be turned away.
    // Nor is one read before this migration's imports or a key with this hash arrived.
    if (!pending && deps.keyCache.unchangedSince(version, missed) && deps.keyCache.unchangedSince(version, hash)) deps.keyCache.setMiss(missed);
    return undefined;
  }
  deps.keyCache.delete(hash);
  return keyRecordByHash(deps, hash);
}

/** Moves the pending key with this imported hash to the standard hash; false when no key is pending under it. */
async function adoptSeamapiKey(deps: Deps, p: Principal, hash: string, migrationId: string, k: { importedHash: string; start: string }): Promise<boolean> {
  const pending = await findPendingKey(deps.pool, p.workspaceId, migrationId, k.importedHash);
  if (!pending) return false;
  // Only a caller that may verify the key's API changes it; to any other it stays unknown.
  if (!holdsAny(p, apiPermission(pending.apiId, "verify_key"))) return true;
  try {
    const moved = await completeKeyMigration(deps.pool, { id: pending.id, migrationId, importedHash: k.importedHash, hash, start: k.start });
    // No record of the key can be cached under any hash yet; the event still reaches every instance, as other key changes do.
    if (moved) await deps.invalidate("key", pending.id);
  } catch (err) {
    // Another key already has the standard hash: this one stays pending, and the presented key is that other key.
    if (!isDuplicateKey(err)) throw err;
  }
  return true;
}
