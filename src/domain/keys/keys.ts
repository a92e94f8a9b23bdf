// keys.createKey, getKey, whoami, listKeys, deleteKey.

import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { KeyDetails } from "../../core/records.js";
import { findLiveApi } from "../../storage/apis.js";
import { deleteKeyRow, encryptedKeyInsert, findEncryptedKeys, insertEncryptedKey, softDeleteKey } from "../../storage/key-admin.js";
import {
  findLiveKeyByHash,
  findLiveKeyById,
  insertKeyRow,
  insertRatelimits,
  keyRowInsert,
  listLiveKeys,
  type NewKeyRow,
  ratelimitsInsert,
  searchLiveKeys,
} from "../../storage/keys.js";
import {
  ensurePermissions,
  findLiveIdentityIdByExternalId,
  findRoles,
  linkPermissions,
  linkRoles,
  RelationVanished,
  upsertIdentity,
} from "../../storage/relations.js";
import { isDuplicateKey } from "../../storage/sql.js";
import { VaultUnavailableError } from "../../storage/vault.js";
import { apiNotFound, cachedLiveApi } from "../apis/apis.js";
import { type AuditEvent, auditCreatedOnUse, audited, auditedInOneTrip, fieldList } from "../audit/audit.js";
import { apiPermission, holdsAny, type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { ID_PATTERN, limits } from "../limits.js";
import { Validator } from "../validate.js";
import { generateKey, hashKey } from "./generate.js";
import { type CreditsInput, type RatelimitInput, validateCredits, validateMeta, validateRatelimits } from "./input.js";
import { refillDue } from "./refill.js";

export const keyNotFound = (): AppError => new AppError("err:svc:data:key_not_found");
export const roleNotFound = (name: string): AppError => new AppError("err:svc:data:role_not_found", `Role '${name}' was not found.`);

export interface CreateKeyInput {
  apiId: string;
  prefix?: string | undefined;
  name?: string | undefined;
  byteLength?: number | undefined;
  externalId?: string | undefined;
  meta?: Record<string, unknown> | undefined;
  roles: string[];
  permissions: string[];
  expires?: number | undefined;
  credits?: CreditsInput | undefined;
  ratelimits: RatelimitInput[];
  enabled?: boolean | undefined;
  recoverable?: boolean | undefined;
}

export async function createKey(deps: Deps, p: Principal, input: CreateKeyInput): Promise<{ keyId: string; key: string }> {
  const now = deps.clock.now();
  const v = new Validator();
  const metaText = validateMeta(v, "meta", input.meta);
  const credits = validateCredits(v, input.credits);
  const ratelimits = validateRatelimits(v, "ratelimits", input.ratelimits, now);
  v.done();

  requireAny(p, apiPermission(input.apiId, "create_key"));
  if (input.recoverable) requireAny(p, apiPermission(input.apiId, "encrypt_key"));
  const api = await cachedLiveApi(deps, p.workspaceId, input.apiId);
  if (!api) throw apiNotFound();
  // An unknown role refuses the request before anything is written (the vault may create the workspace's data key).
  const roles = await findRoles(deps.pool, p.workspaceId, input.roles);
  if (roles.missing !== undefined) throw roleNotFound(roles.missing);

  const prefix = input.prefix ?? api.defaultPrefix;
  const byteLength = input.byteLength ?? api.defaultBytes ?? limits.byteLength.default;
  const { key, start } = generateKey(prefix, byteLength);
  const hash = hashKey(key);
  const encrypted = input.recoverable ? await deps.vault.encrypt(p.workspaceId, key) : undefined;

  // Shared rows (the identity, auto-created permission slugs) are made first, each
  // committed on its own: concurrent requests creating the same one then find it,
  // instead of missing it in their transaction's snapshot.
  const identityId =
    input.externalId === undefined ? undefined : await upsertIdentity(deps.pool, p.workspaceId, input.externalId, now, auditCreatedOnUse(deps, p, "identity"));
  let permissionIds = await ensurePermissions(deps.pool, p.workspaceId, input.permissions, now, auditCreatedOnUse(deps, p, "permission"));
  let roleIds = roles.ids;
  const slugCount = new Set(input.permissions).size;

  const event = (keyId: string): AuditEvent => ({
    action: "key.create",
    resources: [
      { type: "key", id: keyId },
      { type: "api", id: api.id },
      ...(identityId === undefined ? [] : [{ type: "identity", id: identityId }]),
      ...permissionIds.map((id) => ({ type: "permission", id })),
      ...roleIds.map((id) => ({ type: "role", id })),
    ],
    description: createdFields(input),
  });

  for (let attempt = 0; ; attempt++) {
    const keyId = newId("key", now);
    const row: NewKeyRow = {
      id: keyId,
      keyAuthId: api.keyAuthId,
      apiId: api.id,
      workspaceId: p.workspaceId,
      hash,
      start,
      prefix,
      byteLength,
      name: input.name,
      identityId,
      meta: metaText,
      expires: input.expires,
      enabled: input.enabled ?? true,
      remaining: credits.remaining,
      refillAmount: credits.refill?.amount,
      refillDay: credits.refill?.day,
      recoverable: input.recoverable ?? false,
      now,
    };
    try {
      // One transaction for every key, the plain one too: its record must commit
      // with it. Without permissions or roles the key is plain writes known in
      // advance (the key, its limits, its ciphertext, the record and its index):
      // they go with START TRANSACTION and COMMIT in one round trip, as a plain key
      // (no autocommitted INSERT) went before the audit log
      // (test/integration/audit-keys.test.ts holds it to that). Links to
      // permissions and roles must see whether each row still exists, so those
      // keys take a statement at a time. A deadlock is retried in both.
      if (slugCount === 0 && roleIds.length === 0) {
        const writes = [keyRowInsert(row)];
        const limitRows = ratelimitsInsert({ workspaceId: p.workspaceId, keyId }, ratelimits, now);
        if (limitRows) writes.push(limitRows);
        if (encrypted) writes.push(encryptedKeyInsert({ workspaceId: p.workspaceId, keyId, ...encrypted, now }));
        await auditedInOneTrip(deps, p, writes, event(keyId));
      } else {
        await audited(
          deps,
          p,
          async (conn) => {
            await insertKeyRow(conn, row);
            await insertRatelimits(conn, { workspaceId: p.workspaceId, keyId }, ratelimits, now);
            const linked =
              (await linkPermissions(conn, p.workspaceId, keyId, permissionIds, now)) + (await linkRoles(conn, p.workspaceId, keyId, roleIds, now));
            // A permission or role deleted concurrently since it was looked up: roll back and look again.
            if (permissionIds.length < slugCount || linked < permissionIds.length + roleIds.length) throw new RelationVanished();
            if (encrypted) await insertEncryptedKey(conn, { workspaceId: p.workspaceId, keyId, ...encrypted, now });
          },
          () => event(keyId),
        );
      }
      deps.keyCache.delete(hash);
      return { keyId, key };
    } catch (err) {
      if (err instanceof RelationVanished) {
        if (attempt >= 3)
          throw new AppError("err:svc:application:service_unavailable", "A permission or role was deleted while the key was being created; try again.");
        permissionIds = await ensurePermissions(deps.pool, p.workspaceId, input.permissions, now, auditCreatedOnUse(deps, p, "permission"));
        const again = await findRoles(deps.pool, p.workspaceId, input.roles);
        if (again.missing !== undefined) throw roleNotFound(again.missing);
        roleIds = again.ids;
        continue;
      }
      // An id collision is retried with a new id; the key itself stays.
      if (isDuplicateKey(err) && attempt < 4 && String((err as Error).message).includes("keys_id")) continue;
      throw err;
    }
  }
}

/**
 * "Created the key with name, meta and credits.": the fields the request set, by
 * name only. Their values stay out of the log: meta may hold anything, and the
 * key itself (or its hash) would let a reader of the log verify as the key.
 */
function createdFields(input: CreateKeyInput): string {
  const set: string[] = [];
  if (input.name !== undefined) set.push("name");
  if (input.prefix !== undefined) set.push("prefix");
  if (input.byteLength !== undefined) set.push("byteLength");
  if (input.externalId !== undefined) set.push("externalId");
  if (input.meta !== undefined) set.push("meta");
  if (input.expires !== undefined) set.push("expires");
  if (input.credits !== undefined) set.push("credits");
  if (input.ratelimits.length > 0) set.push("ratelimits");
  if (input.enabled !== undefined) set.push("enabled");
  if (input.recoverable) set.push("recoverable");
  if (input.roles.length > 0) set.push("roles");
  if (input.permissions.length > 0) set.push("permissions");
  return set.length === 0 ? "Created the key." : `Created the key with ${fieldList(set)}.`;
}

export interface KeyView extends KeyDetails {
  plaintext: string | undefined;
}

/**
 * The balance as of now: a refill that is due but not yet applied (refills are
 * applied by the next verification, no job runs them) is shown as applied.
 */
function withDueRefill(k: KeyDetails, now: number): KeyDetails {
  if (k.refill === undefined || k.remaining === undefined || k.remaining >= k.refill.amount) return k;
  return refillDue(k.refill, k.lastRefillAt, now) ? { ...k, remaining: k.refill.amount } : k;
}

async function withPlaintext(deps: Deps, workspaceId: string, found: KeyDetails[], decrypt: boolean): Promise<KeyView[]> {
  const now = deps.clock.now();
  const keys = found.map((k) => withDueRefill(k, now));
  if (!decrypt) return keys.map((k) => ({ ...k, plaintext: undefined }));
  const rec = keys.filter((k) => k.recoverable).map((k) => k.id);
  const stored = rec.length === 0 ? new Map() : await findEncryptedKeys(deps.pool, rec);
  return Promise.all(
    keys.map(async (k) => {
      const e = stored.get(k.id);
      if (!e) return { ...k, plaintext: undefined };
      try {
        return { ...k, plaintext: await deps.vault.decrypt(workspaceId, e.encrypted, e.encryptionKeyId) };
      } catch (err) {
        // A misconfigured server (no key-encryption key opens the data key) is a 503, not a missing plaintext.
        if (err instanceof VaultUnavailableError) throw err;
        // A key that cannot be decrypted is listed without its plaintext (and logged),
        // so one unreadable row does not fail the whole answer.
        deps.log.warn({ err, keyId: k.id }, "could not decrypt a recoverable key");
        return { ...k, plaintext: undefined };
      }
    }),
  );
}

export async function getKey(deps: Deps, p: Principal, input: { keyId: string; decrypt?: boolean | undefined }): Promise<KeyView> {
  const key = await findLiveKeyById(deps.pool, p.workspaceId, input.keyId);
  if (!key) throw keyNotFound();
  requireAny(p, apiPermission(key.apiId, "read_key"));
  if (input.decrypt) requireAny(p, apiPermission(key.apiId, "decrypt_key"));
  const [view] = await withPlaintext(deps, p.workspaceId, [key], input.decrypt ?? false);
  return view as KeyView;
}

export async function whoami(deps: Deps, p: Principal, input: { key: string }): Promise<KeyView> {
  const key = await findLiveKeyByHash(deps.pool, hashKey(input.key));
  // Another workspace's key and a missing read grant both read as not found, on purpose.
  if (!key || key.workspaceId !== p.workspaceId || !holdsAny(p, apiPermission(key.apiId, "read_key"))) throw keyNotFound();
  return { ...withDueRefill(key, deps.clock.now()), plaintext: undefined };
}

export interface ListKeysInput {
  apiId: string;
  limit?: number | undefined;
  cursor?: string | undefined;
  externalId?: string | undefined;
  decrypt?: boolean | undefined;
}

export async function listKeys(deps: Deps, p: Principal, input: ListKeysInput): Promise<{ keys: KeyView[]; cursor: string | undefined }> {
  const api = await apiWithReadableKeys(deps, p, input.apiId, input.decrypt ?? false);
  let identityId: string | undefined;
  if (input.externalId !== undefined) {
    // An externalId never ends in a space, yet the collation would match `x ` to `x`.
    identityId = / $/.test(input.externalId) ? undefined : await findLiveIdentityIdByExternalId(deps.pool, p.workspaceId, input.externalId);
    if (identityId === undefined) return { keys: [], cursor: undefined };
  }
  const page = await listLiveKeys(deps.pool, {
    workspaceId: p.workspaceId,
    keyAuthId: api.keyAuthId,
    limit: input.limit ?? limits.pageSize.default,
    cursor: input.cursor,
    identityId,
  });
  return { keys: await withPlaintext(deps, p.workspaceId, page.keys, input.decrypt ?? false), cursor: page.next };
}

/**
 * The live API whose keys are listed or searched: read_key, read_api (and
 * decrypt_key when decrypting) on it, then found in the workspace (404).
 */
async function apiWithReadableKeys(deps: Deps, p: Principal, apiId: string, decrypt: boolean) {
  requireAny(p, apiPermission(apiId, "read_key"));
  requireAny(p, apiPermission(apiId, "read_api"));
  if (decrypt) requireAny(p, apiPermission(apiId, "decrypt_key"));
  const api = await findLiveApi(deps.pool, p.workspaceId, apiId);
  if (!api) throw apiNotFound();
  return api;
}

/** The dashboard's search of an API's keys (by id, start, name or externalId), with listKeys's grants. */
export async function searchKeys(
  deps: Deps,
  p: Principal,
  input: { apiId: string; query: string; limit?: number | undefined },
): Promise<{ keys: KeyView[]; more: boolean }> {
  const v = new Validator();
  v.required("apiId", input.apiId, { min: 1, max: 255, pattern: ID_PATTERN, patternText: "^[a-zA-Z0-9_]+$" });
  v.required("query", input.query, { min: 1, max: 256 });
  if (input.query !== "" && input.query.trim() === "") v.add("query", "query must hold more than spaces.");
  v.number("limit", input.limit, { min: 1, max: 100 });
  v.done();
  const api = await apiWithReadableKeys(deps, p, input.apiId, false);
  const found = await searchLiveKeys(deps.pool, { workspaceId: p.workspaceId, keyAuthId: api.keyAuthId, text: input.query, limit: input.limit ?? 50 });
  return { keys: await withPlaintext(deps, p.workspaceId, found.keys, false), more: found.more };
}

export async function deleteKey(deps: Deps, p: Principal, input: { keyId: string; permanent?: boolean | undefined }): Promise<void> {
  const key = await findLiveKeyById(deps.pool, p.workspaceId, input.keyId);
  if (!key) throw keyNotFound();
  requireAny(p, apiPermission(key.apiId, "delete_key"));
  const permanent = input.permanent ?? false;
  const done = await audited(
    deps,
    p,
    (conn) => (permanent ? deleteKeyRow(conn, key.id) : softDeleteKey(conn, key.id, deps.clock.now())),
    // Deleted meanwhile by another request (a 404 here): that request wrote the record.
    (deleted) =>
      deleted
        ? {
            action: "key.delete",
            resources: [
              { type: "key", id: key.id },
              { type: "api", id: key.apiId },
            ],
            description: permanent
              ? "Deleted the key permanently, with its permissions, roles, rate limits and stored ciphertext."
              : "Deleted the key; it stops verifying.",
          }
        : undefined,
  );
  if (!done) throw keyNotFound();
  await deps.invalidate("key", key.id);
}
