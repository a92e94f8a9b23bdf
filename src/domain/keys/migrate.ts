// keys.migrateKeys: keys issued by another system, imported
// by their hashes so that they keep working here. A batch is written in bulk:
// shared rows (identities, permission slugs, roles) first, each statement
// committing on its own as createKey does, then every key with its relations and
// the batch's audit record in one transaction of multi-row INSERTs. A key goes in
// whole or not at all.

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { RatelimitConfig, Refill } from "../../core/records.js";
import { findLiveApi } from "../../storage/apis.js";
import {
  ensureIdentities,
  ensurePermissionSlugs,
  ensureRoleNames,
  findKeyMigration,
  hashesInUse,
  insertKeyRelations,
  insertMigratedKeys,
  lockLive,
  type MigratedKeyRow,
  type MigrationAlgorithm,
  type MigrationTarget,
} from "../../storage/key-migrations.js";
import { RelationVanished } from "../../storage/relations.js";
import { apiNotFound } from "../apis/apis.js";
import { type AuditEvent, auditCreatedOnUse, audited } from "../audit/audit.js";
import { apiPermission, type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { limits } from "../limits.js";
import { Validator } from "../validate.js";
import { type CreditsInput, type RatelimitInput, validateCredits, validateMeta, validateRatelimits } from "./input.js";
import { forgetMissedImports, rememberMigration, SEAMAPI } from "./migrated-lookup.js";

export interface MigrateKeyInput {
  hash: string;
  name?: string | undefined;
  externalId?: string | undefined;
  meta?: Record<string, unknown> | undefined;
  roles: string[];
  permissions: string[];
  expires?: number | undefined;
  enabled?: boolean | undefined;
  credits?: CreditsInput | undefined;
  ratelimits: RatelimitInput[];
}

export interface MigrateKeysInput {
  migrationId: string;
  apiId: string;
  keys: MigrateKeyInput[];
}

export interface MigrateKeysResult {
  /** The keys imported, in request order. */
  migrated: Array<{ hash: string; keyId: string }>;
  /** Hashes already used by a key, or repeated in the request, in request order. */
  failed: string[];
}

export const migrationNotFound = (): AppError => new AppError("err:svc:data:migration_not_found");

interface PlannedKey {
  input: MigrateKeyInput;
  /** The hash as stored: the one sent, or, for a seamapi migration, the same hex in lowercase. */
  hash: string;
  meta: string | undefined;
  remaining: number | undefined;
  refill: Refill | undefined;
  ratelimits: RatelimitConfig[];
}

function validate(input: MigrateKeysInput, now: number): PlannedKey[] {
  const v = new Validator();
  const planned = input.keys.map((k, i): PlannedKey => {
    const f = `keys[${i}]`;
    const meta = validateMeta(v, `${f}.meta`, k.meta);
    const credits = validateCredits(v, k.credits, `${f}.credits`);
    const ratelimits = validateRatelimits(v, `${f}.ratelimits`, k.ratelimits, now);
    return { input: k, hash: k.hash, meta, remaining: credits.remaining, refill: credits.refill, ratelimits };
  });
  v.done();
  return planned;
}

const BASE64_SHA256 = /^[A-Za-z0-9+/]{43}=$/;
const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;

const shapeOf = (hash: string): string =>
  HEX_SHA256.test(hash) ? "64 hex characters" : BASE64_SHA256.test(hash) ? "a 44-character base64 SHA-256" : `${[...hash].length} characters`;

/** What is wrong with a hash for this algorithm, if anything: a hash of any other shape could never match a presented key. */
function hashProblem(algorithm: MigrationAlgorithm, field: string, hash: string): { message: string; fix: string } | undefined {
  if (hash.trim() !== hash) return { message: `${field} must not start or end with whitespace.`, fix: `Trim ${field}.` };
  if (algorithm === "sha256") {
    if (BASE64_SHA256.test(hash)) return undefined;
    return {
      message: `${field} is ${shapeOf(hash)}, but a sha256 migration takes the standard base64 SHA-256 of the whole key (44 characters).`,
      fix: HEX_SHA256.test(hash)
        ? `Hash the whole keys as base64, or, for hex SHA-256 hashes of seamapi long tokens, use a ${SEAMAPI} migration.`
        : "Send base64(SHA-256(key)) of each whole key, with its = padding.",
    };
  }
  if (HEX_SHA256.test(hash)) return undefined;
  return {
    message: `${field} is ${shapeOf(hash)}, but a ${SEAMAPI} migration takes the hex SHA-256 of the key's long token (64 hex characters).`,
    fix: BASE64_SHA256.test(hash)
      ? "Send the hex SHA-256 of each long token, or, for base64 SHA-256 hashes of whole keys, use a sha256 migration."
      : "Send hex(SHA-256(long token)) for each key, as github.com/seamapi/prefixed-api-key stores it.",
  };
}

/**
 * The keys with their hashes as stored, once the migration's algorithm is known;
 * a 400 naming every hash of the wrong shape. Hex is read in either case and
 * stored in lowercase, as verification computes it.
 */
function withStoredHashes(planned: readonly PlannedKey[], algorithm: MigrationAlgorithm): readonly PlannedKey[] {
  const v = new Validator();
  planned.forEach((k, i) => {
    const problem = hashProblem(algorithm, `keys[${i}].hash`, k.input.hash);
    if (problem) v.add(`keys[${i}].hash`, problem.message, problem.fix);
  });
  v.done();
  return algorithm === SEAMAPI ? planned.map((k) => ({ ...k, hash: k.input.hash.toLowerCase() })) : planned;
}

/** The shared rows the keys name, found or created: name -> id for each kind. */
async function ensureRelations(deps: Deps, p: Principal, workspaceId: string, keys: readonly PlannedKey[], now: number) {
  const [identities, permissions, roles] = await Promise.all([
    ensureIdentities(
      deps.pool,
      workspaceId,
      keys.flatMap((k) => (k.input.externalId === undefined ? [] : [k.input.externalId])),
      now,
      auditCreatedOnUse(deps, p, "identity"),
    ),
    ensurePermissionSlugs(
      deps.pool,
      workspaceId,
      keys.flatMap((k) => k.input.permissions),
      now,
      auditCreatedOnUse(deps, p, "permission"),
    ),
    ensureRoleNames(
      deps.pool,
      workspaceId,
      keys.flatMap((k) => k.input.roles),
      now,
      auditCreatedOnUse(deps, p, "role"),
    ),
  ]);
  return { identities, permissions, roles };
}

/**
 * Every name must have been found or created; one that is not is a row deleted
 * between being created (or found) and being read back, by a concurrent
 * deleteIdentity, deletePermission or deleteRole: look them up again.
 */
function idOf(byName: Map<string, string>, name: string): string {
  const id = byName.get(name);
  if (id === undefined) throw new RelationVanished();
  return id;
}

const idsOf = (byName: Map<string, string>, names: readonly string[]): string[] => [...new Set(names.map((n) => idOf(byName, n)))];

function toRows(keys: readonly PlannedKey[], keyIds: readonly string[], rel: Awaited<ReturnType<typeof ensureRelations>>): MigratedKeyRow[] {
  return keys.map((k, i) => ({
    id: keyIds[i] as string,
    hash: k.hash,
    name: k.input.name,
    identityId: k.input.externalId === undefined ? undefined : idOf(rel.identities, k.input.externalId),
    meta: k.meta,
    expires: k.input.expires,
    enabled: k.input.enabled ?? true,
    remaining: k.remaining,
    refillAmount: k.refill?.amount,
    refillDay: k.refill?.day,
    ratelimits: k.ratelimits,
    permissionIds: idsOf(rel.permissions, k.input.permissions),
    roleIds: idsOf(rel.roles, k.input.roles),
  }));
}

/**
 * One record for the whole batch, not one per key: the batch commits as one
 * transaction, so one record names exactly what went in, and its cost stays two
 * statements (the resource index takes every key id in one multi-row INSERT)
 * where a record per key would add two round trips per key, 2,000 for a batch
 * of 1,000. Each key is still found by its id through the resource index. The
 * hashes stay out: a hash is what verification looks a key up by. A batch whose
 * every hash was taken meanwhile changed nothing and writes no record.
 */
function migratedEvent(target: MigrationTarget, ids: ReadonlySet<string>): AuditEvent | undefined {
  if (ids.size === 0) return undefined;
  return {
    action: "key.migrate",
    resources: [{ type: "api", id: target.apiId }, { type: "migration", id: target.migrationId }, ...[...ids].map((id) => ({ type: "key", id }))],
    description: `Imported ${ids.size} key${ids.size === 1 ? "" : "s"} by ${ids.size === 1 ? "its hash" : "their hashes"}.`,
  };
}

/**
 * Writes the keys with their relations, each key whole or not at all; returns the
 * ids of those inserted (a hash taken meanwhile by another request leaves its key out).
 */
async function insertBatch(
  deps: Deps,
  p: Principal,
  target: MigrationTarget,
  candidates: readonly PlannedKey[],
  keyIds: readonly string[],
): Promise<Set<string>> {
  const ws = target.workspaceId;
  for (let attempt = 1; ; attempt++) {
    try {
      const keys = toRows(candidates, keyIds, await ensureRelations(deps, p, ws, candidates, target.now));
      const permissionIds = [...new Set(keys.flatMap((k) => k.permissionIds))];
      const roleIds = [...new Set(keys.flatMap((k) => k.roleIds))];
      const identityIds = [...new Set(keys.flatMap((k) => (k.identityId === undefined ? [] : [k.identityId])))];
      return await audited(
        deps,
        p,
        async (conn) => {
          // Share-lock the identities, permissions and roles first: none can be
          // deleted before the keys and links naming it commit. (Rows made on first
          // use committed in their own transaction, so one may be gone already.)
          const live =
            (await lockLive(conn, "identities", ws, identityIds)) +
            (await lockLive(conn, "permissions", ws, permissionIds)) +
            (await lockLive(conn, "roles", ws, roleIds));
          if (live < identityIds.length + permissionIds.length + roleIds.length) throw new RelationVanished();
          const ids = await insertMigratedKeys(conn, target, keys);
          await insertKeyRelations(
            conn,
            ws,
            keys.filter((k) => ids.has(k.id)),
            target.now,
          );
          return ids;
        },
        (ids) => migratedEvent(target, ids),
      );
    } catch (err) {
      // An identity, permission or role deleted concurrently since it was looked up: look again.
      if (!(err instanceof RelationVanished)) throw err;
      if (attempt >= 3) {
        throw new AppError(
          "err:svc:application:service_unavailable",
          "An identity, permission or role was deleted while the keys were being imported; try again.",
        );
      }
    }
  }
}

export async function migrateKeys(deps: Deps, p: Principal, input: MigrateKeysInput): Promise<MigrateKeysResult> {
  const now = deps.clock.now();
  const valid = validate(input, now);
  requireAny(p, apiPermission(input.apiId, "create_key"));
  const api = await findLiveApi(deps.pool, p.workspaceId, input.apiId);
  if (!api) throw apiNotFound();
  const migration = await findKeyMigration(deps.pool, p.workspaceId, input.migrationId);
  if (!migration) throw migrationNotFound();
  rememberMigration(deps, p.workspaceId, migration);
  const planned = withStoredHashes(valid, migration.algorithm);

  // The first key with a hash is imported; a repeat in the request, or a hash some
  // key already has (in any workspace: keys.hash is unique), is reported instead.
  const first = new Map<string, PlannedKey>();
  for (const k of planned) if (!first.has(k.hash)) first.set(k.hash, k);
  const inUse = await hashesInUse(deps.pool, [...first.keys()]);
  const candidates = [...first.values()].filter((k) => !inUse.has(k.hash));

  const keyIds = candidates.map(() => newId("key", now));
  const target: MigrationTarget = {
    workspaceId: p.workspaceId,
    apiId: api.id,
    keyAuthId: api.keyAuthId,
    migrationId: migration.id,
    byteLength: limits.byteLength.default,
    now,
  };
  const inserted = candidates.length === 0 ? new Set<string>() : await insertBatch(deps, p, target, candidates, keyIds);
  const keyIdOf = new Map<string, string>();
  candidates.forEach((k, i) => {
    const id = keyIds[i] as string;
    if (inserted.has(id)) keyIdOf.set(k.hash, id);
  });
  // An imported sha256 hash is looked up as it is, any imported hash through the
  // migration: forget both as remembered misses here (other instances' expire).
  for (const hash of keyIdOf.keys()) deps.keyCache.delete(hash);
  forgetMissedImports(deps, migration.id, keyIdOf.keys());
  return report(planned, keyIdOf);
}

/**
 * Each hash in request order, as it was sent: its first occurrence migrated if
 * its key went in, everything else failed.
 */
function report(planned: readonly PlannedKey[], keyIdOf: Map<string, string>): MigrateKeysResult {
  const result: MigrateKeysResult = { migrated: [], failed: [] };
  const reported = new Set<string>();
  for (const { input, hash } of planned) {
    const keyId = keyIdOf.get(hash);
    if (keyId !== undefined && !reported.has(hash)) result.migrated.push({ hash: input.hash, keyId });
    else result.failed.push(input.hash);
    reported.add(hash);
  }
  return result;
}
