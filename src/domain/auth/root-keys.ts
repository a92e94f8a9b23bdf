// Root keys are issued, listed, changed, rotated and revoked here, and nowhere
// else: the CLI (an administrator with the database in hand), the dashboard (an
// operator, in the workspaces they belong to) and the rootKeys RPCs (a root key
// holding the workspace grants) all call these operations, so a root key follows
// one grammar wherever it is made, and every change leaves its audit record in
// its own transaction.
//
// A root key acting through the RPCs can give and manage only what its own
// grants cover: without that rule, `workspace.*.create_root_key` alone would be
// every permission there is (test/contract/rootKeys.*/403.test.ts).
import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { insertInvalidation } from "../../storage/invalidations.js";
import {
  insertRootKey,
  type LockedRootKey,
  lockRootKey,
  type RootKeyListing,
  softDeleteRootKey,
  listRootKeys as storedRootKeys,
  updateRootKeyRow,
} from "../../storage/root-keys.js";
import { type PoolConnection, transaction } from "../../storage/sql.js";
import { type Actor, type AuditEvent, audited, fieldList, writeAudit } from "../audit/audit.js";
import type { Deps } from "../deps.js";
import { hashKey } from "../keys/generate.js";
import { Validator } from "../validate.js";
import { covers, type Principal } from "./principal.js";
import { generateRootKey } from "./root-key.js";

/**
 * A grant: letters, digits and `. _ * : -`, as in `apis.*.create_key` or
 * `apis.api_123.read_key`. Anything else could never match an operation's
 * permission (auth/operation-permissions.ts), so it is refused rather than stored.
 */
export const ROOT_KEY_PERMISSION = /^[a-zA-Z0-9_.*:-]{1,256}$/;
export const ROOT_KEY_PERMISSION_TEXT = "letters, digits and . _ * : - (1 to 256 characters)";
export const MAX_ROOT_KEY_PERMISSIONS = 1_000;
export const MAX_ROOT_KEY_NAME = 256;
/** The longest grace period of a rotation: 30 days. */
export const MAX_GRACE_PERIOD_MS = 30 * 86_400_000;

/** What these operations need: the database, the time, and the caches to tell. */
export type RootKeyDeps = Pick<Deps, "pool" | "clock" | "invalidate">;

export type { RootKeyListing };

/** Who asks: a principal (a root key, or an operator in the dashboard) or the CLI. */
export type RootKeyActor = Principal | Actor;

/** A root key's name and permissions as every caller must give them; a 400 (invalid_input) naming the field otherwise. */
export function validateRootKeyInput(input: { name: string | undefined; permissions: readonly string[] }): void {
  const v = new Validator();
  v.string("name", input.name, { max: MAX_ROOT_KEY_NAME });
  v.items("permissions", input.permissions, {
    minItems: 1,
    maxItems: MAX_ROOT_KEY_PERMISSIONS,
    pattern: ROOT_KEY_PERMISSION,
    patternText: ROOT_KEY_PERMISSION_TEXT,
  });
  v.done();
}

function validateExpiry(v: Validator, field: string, expires: number | undefined, now: number): void {
  if (expires !== undefined && expires !== 0 && expires <= now) v.add(field, `${field} must be in the future (Unix milliseconds); 0 removes an expiry.`);
}

/** Whether the actor is a root key (the only kind of actor whose own grants bound what it may give). */
const rootKeyPrincipal = (a: RootKeyActor): Principal | undefined => ("permissions" in a && !a.rootKeyId.startsWith("op:") ? a : undefined);

/** 403 unless the calling root key's grants cover every one of these. */
function requireCoverage(actor: RootKeyActor, permissions: readonly string[], what: string): void {
  const p = rootKeyPrincipal(actor);
  if (p === undefined) return;
  const beyond = permissions.filter((g) => !covers(p.permissions, g));
  if (beyond.length === 0) return;
  throw new AppError(
    "err:svc:authorization:insufficient_permissions",
    `A root key can only ${what} permissions its own grants cover; not covered: ${beyond
      .slice(0, 5)
      .map((g) => `'${g}'`)
      .join(", ")}${beyond.length > 5 ? ` and ${beyond.length - 5} more` : ""}.`,
  );
}

const earliest = (a: number | undefined, b: number | undefined): number | undefined => (a === undefined ? b : b === undefined ? a : Math.min(a, b));

/** 90000 -> "1 min 30 s", for people reading the log. */
function duration(ms: number): string {
  const parts: string[] = [];
  let rest = ms;
  for (const [unit, size] of [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["min", 60_000],
    ["s", 1_000],
    ["ms", 1],
  ] as const) {
    if (rest >= size) {
      parts.push(`${Math.floor(rest / size)} ${unit}`);
      rest %= size;
    }
  }
  return parts.join(" ");
}

/**
 * 403 unless an expiring root key gives an expiry no later than its own: a key
 * given 30 days must not be able to mint one that never expires. 0 (or none) is
 * "never", the latest of all.
 */
function requireBoundedExpiry(actor: RootKeyActor, expires: number | undefined): void {
  const own = rootKeyPrincipal(actor)?.expiresAt;
  if (own === undefined || (expires !== undefined && expires !== 0 && expires <= own)) return;
  throw new AppError(
    "err:svc:authorization:insufficient_permissions",
    `This root key expires at ${new Date(own).toISOString()}: it can only give an expiry no later than that (expires at most ${own}).`,
  );
}

const notFound = (): AppError => new AppError("err:svc:data:key_not_found", "No live root key with this id in the workspace.");

const resource = (id: string) => ({ type: "root_key", id });

/** A new root key for the workspace; its plaintext is in this answer only (the database keeps its hash). */
export async function issueRootKey(
  deps: RootKeyDeps,
  actor: RootKeyActor,
  input: { workspaceId: string; name: string | undefined; permissions: readonly string[]; expires?: number | undefined },
): Promise<{ keyId: string; rootKey: string }> {
  validateRootKeyInput(input);
  const now = deps.clock.now();
  const v = new Validator();
  validateExpiry(v, "expires", input.expires === 0 ? -1 : input.expires, now);
  v.done();
  const permissions = [...new Set(input.permissions)];
  requireCoverage(actor, permissions, "give");
  requireBoundedExpiry(actor, input.expires);
  const rootKey = generateRootKey();
  const keyId = newId("key", now);
  await audited(
    deps,
    actor,
    (conn) =>
      insertRootKey(conn, {
        id: keyId,
        workspaceId: input.workspaceId,
        hash: hashKey(rootKey),
        start: rootKey.slice(0, 8),
        name: input.name === undefined || input.name === "" ? null : input.name,
        permissions,
        expiresAt: input.expires,
        now,
      }),
    () => ({
      action: "root_key.create",
      resources: [resource(keyId)],
      description: `Created a root key with ${permissions.length} permission${permissions.length === 1 ? "" : "s"}${input.expires === undefined ? "" : " and an expiry"}.`,
    }),
  );
  return { keyId, rootKey };
}

/** The workspace's live root keys, never their secrets. */
export async function listRootKeys(deps: Pick<Deps, "pool">, workspaceId: string): Promise<RootKeyListing[]> {
  return storedRootKeys(deps.pool, workspaceId);
}

function requireKeyId(keyId: string): void {
  const v = new Validator();
  v.required("keyId", keyId, { max: 48 });
  v.done();
}

/**
 * Runs a change to one live root key, locked, with its audit record; 404 when
 * there is none (a key id of another workspace reads as unknown). A root key may
 * only manage root keys whose grants its own cover. The old hash is evicted
 * here at once and on other instances at their next poll.
 */
async function changeRootKey<T>(
  deps: RootKeyDeps,
  actor: RootKeyActor,
  keyId: string,
  workspaceId: string | undefined,
  change: (conn: PoolConnection, key: LockedRootKey) => Promise<{ result: T; event: AuditEvent }>,
): Promise<T> {
  requireKeyId(keyId);
  let hash = "";
  const result = await transaction(deps.pool, async (conn) => {
    const key = await lockRootKey(conn, keyId, workspaceId);
    if (key === undefined) throw notFound();
    requireCoverage(actor, key.permissions, "manage root keys holding");
    hash = key.hash;
    const done = await change(conn, key);
    // The CLI names no workspace: its record goes to the root key's.
    const who = "type" in actor && actor.workspaceId === undefined ? { ...actor, workspaceId: key.workspaceId } : actor;
    await writeAudit(conn, deps, who, done.event);
    // The other instances' eviction commits with the change: a crash right after
    // the commit cannot leave them serving the old record until its TTL.
    await insertInvalidation(conn, "rootkey", key.hash, deps.clock.now());
    return done.result;
  });
  // Evicts here at once (and tells the others again, which costs them nothing).
  await deps.invalidate("rootkey", hash);
  return result;
}

/**
 * Changes a root key's name, permissions, enabled state or expiry (null or 0:
 * never). A disabled or expired root key is refused on every door (403, as the
 * contract's table says) at once here and elsewhere within the invalidation poll.
 */
export async function updateRootKey(
  deps: RootKeyDeps,
  actor: RootKeyActor,
  input: {
    keyId: string;
    workspaceId: string | undefined;
    name?: string | undefined;
    permissions?: readonly string[] | undefined;
    enabled?: boolean | undefined;
    expires?: number | undefined;
  },
): Promise<RootKeyListing> {
  const now = deps.clock.now();
  const v = new Validator();
  v.string("name", input.name, { max: MAX_ROOT_KEY_NAME });
  if (input.permissions !== undefined) {
    v.items("permissions", input.permissions, {
      minItems: 1,
      maxItems: MAX_ROOT_KEY_PERMISSIONS,
      pattern: ROOT_KEY_PERMISSION,
      patternText: ROOT_KEY_PERMISSION_TEXT,
    });
  }
  validateExpiry(v, "expires", input.expires, now);
  v.done();
  const permissions = input.permissions === undefined ? undefined : [...new Set(input.permissions)];
  if (permissions !== undefined) requireCoverage(actor, permissions, "give");
  const fields = [
    ...(input.name !== undefined ? ["name"] : []),
    ...(permissions !== undefined ? ["permissions"] : []),
    ...(input.enabled !== undefined ? ["enabled"] : []),
    ...(input.expires !== undefined ? ["expires"] : []),
  ];
  // Its expiry is a bound set on a root key by someone else: the key cannot lift it itself.
  if (input.expires !== undefined && rootKeyPrincipal(actor)?.rootKeyId === input.keyId) {
    throw new AppError("err:svc:authorization:insufficient_permissions", "A root key cannot change its own expiry.");
  }
  if (input.expires !== undefined) requireBoundedExpiry(actor, input.expires);
  if (fields.length === 0) {
    // Nothing to change: the key as it is, with no record and no eviction.
    requireKeyId(input.keyId);
    const key = await lockRootKey(deps.pool, input.keyId, input.workspaceId);
    if (key === undefined) throw notFound();
    requireCoverage(actor, key.permissions, "manage root keys holding");
    const { hash: _hash, workspaceId: _ws, ...listed } = key;
    return listed;
  }
  return changeRootKey(deps, actor, input.keyId, input.workspaceId, async (conn, key) => {
    const expiresAt = input.expires === undefined ? undefined : input.expires === 0 ? null : input.expires;
    const name = input.name === undefined ? undefined : input.name === "" ? null : input.name;
    await updateRootKeyRow(conn, key.keyId, { name, permissions, enabled: input.enabled, expiresAt }, now);
    const enabledWord = input.enabled === undefined ? "" : input.enabled ? " (enabled)" : " (disabled)";
    const { hash: _hash, workspaceId: _ws, ...listed } = key;
    return {
      result: {
        ...listed,
        name: name === undefined ? key.name : (name ?? ""),
        permissions: permissions ?? key.permissions,
        enabled: input.enabled ?? key.enabled,
        expiresAt: expiresAt === undefined ? key.expiresAt : (expiresAt ?? undefined),
      },
      event: { action: "root_key.update", resources: [resource(key.keyId)], description: `Updated ${fieldList(fields)}${enabledWord}.` },
    };
  });
}

/**
 * A new secret for a root key: a new root key with the same name, permissions,
 * expiry and state, while the old one keeps working for the grace period and
 * then expires (0: revoked at once). Both are in the audit record.
 */
export async function rotateRootKey(
  deps: RootKeyDeps,
  actor: RootKeyActor,
  input: { keyId: string; workspaceId: string | undefined; gracePeriodMs: number },
): Promise<{ keyId: string; rootKey: string; previousExpires: number }> {
  const v = new Validator();
  v.number("gracePeriodMs", input.gracePeriodMs, { min: 0, max: MAX_GRACE_PERIOD_MS });
  v.done();
  const now = deps.clock.now();
  const rootKey = generateRootKey();
  const newKeyId = newId("key", now);
  return changeRootKey(deps, actor, input.keyId, input.workspaceId, async (conn, old) => {
    await insertRootKey(conn, {
      id: newKeyId,
      workspaceId: old.workspaceId,
      hash: hashKey(rootKey),
      start: rootKey.slice(0, 8),
      name: old.name === "" ? null : old.name,
      permissions: old.permissions,
      // Never later than the caller's own expiry, when it has one (requireBoundedExpiry).
      expiresAt: earliest(old.expiresAt, rootKeyPrincipal(actor)?.expiresAt),
      enabled: old.enabled,
      now,
    });
    // The old secret's end: the grace period's, or its own expiry when that comes first.
    const end = Math.min(now + input.gracePeriodMs, old.expiresAt ?? Number.POSITIVE_INFINITY);
    if (input.gracePeriodMs === 0) await softDeleteRootKey(conn, old.keyId, now);
    else await updateRootKeyRow(conn, old.keyId, { expiresAt: end }, now);
    return {
      result: { keyId: newKeyId, rootKey, previousExpires: end },
      event: {
        action: "root_key.rotate",
        resources: [resource(old.keyId), resource(newKeyId)],
        description:
          input.gracePeriodMs === 0
            ? "Rotated the root key; the old secret was revoked at once."
            : `Rotated the root key; the old secret works for ${duration(input.gracePeriodMs)} more.`,
      },
    };
  });
}

/**
 * Revokes a live root key: of the workspace given (a key id from elsewhere is
 * "not found" like an unknown one), or of any workspace when none is (the CLI).
 * It answers 401 at once here and on other instances after their next poll.
 */
export async function revokeRootKey(deps: RootKeyDeps, actor: RootKeyActor, input: { keyId: string; workspaceId: string | undefined }): Promise<void> {
  await changeRootKey(deps, actor, input.keyId, input.workspaceId, async (conn, key) => {
    await softDeleteRootKey(conn, key.keyId, deps.clock.now());
    return { result: undefined, event: { action: "root_key.delete", resources: [resource(key.keyId)], description: "Revoked the root key." } };
  });
}
