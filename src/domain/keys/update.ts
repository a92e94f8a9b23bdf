// keys.updateKey, keys.updateCredits and keys.rerollKey. Each change evicts the
// key from the verification cache before answering, so the next verification
// on this instance sees it (docs/caching.md, "Invalidation on the instance that
// made the change").

import { AppError, invalidField } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import type { Refill } from "../../core/records.js";
import { insertEncryptedKey } from "../../storage/key-admin.js";
import { changeCredits, clearKeyPermissions, clearKeyRoles, copyKeyRelations, replaceRatelimits, updateKeyColumns } from "../../storage/key-updates.js";
import { findIdentityIdOfKey, findLiveKeyById, insertKeyRow, lockKeyRow } from "../../storage/keys.js";
import { ensurePermissions, findRoles, linkPermissions, linkRoles, RelationVanished, upsertIdentity } from "../../storage/relations.js";
import { transaction } from "../../storage/sql.js";
import { type AuditEvent, auditCreatedOnUse, audited, fieldList, writeAudit } from "../audit/audit.js";
import { apiPermission, type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";
import { MAX_SAFE } from "../limits.js";
import { Validator } from "../validate.js";
import { generateKey, hashKey } from "./generate.js";
import { type RatelimitInput, type RefillInput, validateMeta, validateRatelimits, validateRefill } from "./input.js";
import { keyNotFound, roleNotFound } from "./keys.js";

/** A field that may be left alone (undefined), cleared ({}), or set ({value}). */
export interface Nullable<T> {
  value?: T | undefined;
}

export interface UpdateKeyInput {
  keyId: string;
  name?: Nullable<string> | undefined;
  externalId?: Nullable<string> | undefined;
  meta?: Nullable<Record<string, unknown>> | undefined;
  expires?: Nullable<number> | undefined;
  credits?: { remaining?: Nullable<number> | undefined; refill?: Nullable<RefillInput> | undefined } | undefined;
  ratelimits?: RatelimitInput[] | undefined;
  enabled?: boolean | undefined;
  roles?: string[] | undefined;
  permissions?: string[] | undefined;
}

export async function updateKey(deps: Deps, p: Principal, input: UpdateKeyInput): Promise<void> {
  const now = deps.clock.now();
  const v = new Validator();
  const metaText = validateMeta(v, "meta", input.meta?.value);
  const remaining = input.credits?.remaining;
  let refill: Refill | undefined;
  if (input.credits?.refill?.value !== undefined) {
    refill = validateRefill(v, "credits.refill", input.credits.refill.value, { dailyDayIsError: true });
  }
  const ratelimits = input.ratelimits === undefined ? undefined : validateRatelimits(v, "ratelimits", input.ratelimits, now);
  v.done();

  const key = await findLiveKeyById(deps.pool, p.workspaceId, input.keyId);
  if (!key) throw keyNotFound();
  requireAny(p, apiPermission(key.apiId, "update_key"));

  // What the credits become, to refuse a refill on an unlimited key.
  const clearsBalance = remaining !== undefined && remaining.value === undefined;
  const balanceAfter = remaining === undefined ? key.remaining : remaining.value;
  if (refill !== undefined && (clearsBalance || balanceAfter === undefined)) {
    throw invalidField("credits.remaining", "`credits.remaining` must be provided when `credits.refill` is set.");
  }

  // An unknown role refuses the request before anything is written.
  let roleIds: string[] | undefined;
  if (input.roles !== undefined) {
    const roles = await findRoles(deps.pool, p.workspaceId, input.roles);
    if (roles.missing !== undefined) throw roleNotFound(roles.missing);
    roleIds = roles.ids;
  }
  // Shared rows first, each committed on its own (see createKey).
  const identityId =
    input.externalId?.value === undefined
      ? undefined
      : await upsertIdentity(deps.pool, p.workspaceId, input.externalId.value, now, auditCreatedOnUse(deps, p, "identity"));
  let permissionIds =
    input.permissions === undefined
      ? undefined
      : await ensurePermissions(deps.pool, p.workspaceId, input.permissions, now, auditCreatedOnUse(deps, p, "permission"));
  const slugCount = new Set(input.permissions).size;

  const fields = updatedFields(input);
  // The identity linked, and the one unlinked when it changes; the permissions and
  // roles the key is given when a list is set (all of them: the lists are replaced
  // whole, so naming those it loses would take one more read of the old lists).
  const updated = (permissions: readonly string[], roles: readonly string[]): AuditEvent => ({
    action: "key.update",
    resources: [
      { type: "key", id: key.id },
      { type: "api", id: key.apiId },
      ...(identityId === undefined ? [] : [{ type: "identity", id: identityId }]),
      ...(input.externalId !== undefined && key.identity !== undefined && key.identity.id !== identityId ? [{ type: "identity", id: key.identity.id }] : []),
      ...permissions.map((id) => ({ type: "permission", id })),
      ...roles.map((id) => ({ type: "role", id })),
    ],
    description: `Updated ${fieldList(fields)}.`,
  });
  const apply = () =>
    transaction(deps.pool, async (conn) => {
      await lockKeyRow(conn, key.id);
      const cols: Record<string, string | number | boolean | null> = {};
      if (input.name !== undefined) cols.name = input.name.value ?? null;
      if (input.meta !== undefined) cols.meta = input.meta.value === undefined ? null : (metaText ?? null);
      if (input.expires !== undefined) cols.expires_at_m = input.expires.value ?? null;
      if (input.enabled !== undefined) cols.enabled = input.enabled;
      if (input.externalId !== undefined) {
        cols.identity_id = identityId ?? null;
      }
      if (remaining !== undefined) {
        cols.remaining_requests = remaining.value ?? null;
        // Unlimited credits have nothing to refill.
        if (remaining.value === undefined) {
          cols.refill_amount = null;
          cols.refill_day = null;
        }
      }
      const refillChange = input.credits?.refill;
      if (refillChange !== undefined && !clearsBalance) {
        cols.refill_amount = refill?.amount ?? null;
        cols.refill_day = refill?.day ?? null;
        if (refill !== undefined) cols.last_refill_at_m = now;
      }
      await updateKeyColumns(conn, key.id, cols, now);
      if (ratelimits !== undefined) await replaceRatelimits(conn, { workspaceId: p.workspaceId, keyId: key.id }, ratelimits, now);
      let linked = 0;
      let wanted = 0;
      if (permissionIds !== undefined) {
        await clearKeyPermissions(conn, key.id);
        linked += await linkPermissions(conn, p.workspaceId, key.id, permissionIds, now);
        wanted += slugCount;
      }
      if (roleIds !== undefined) {
        await clearKeyRoles(conn, key.id);
        linked += await linkRoles(conn, p.workspaceId, key.id, roleIds, now);
        wanted += roleIds.length;
      }
      // A permission or role deleted concurrently since it was looked up: roll back and look again.
      if (linked < wanted) throw new RelationVanished();
      // A request that names no field changes nothing a reader of the log would look for (only updated_at).
      if (fields.length > 0) await writeAudit(conn, deps, p, updated(permissionIds ?? [], roleIds ?? []));
    });
  for (let attempt = 1; ; attempt++) {
    try {
      await apply();
      break;
    } catch (err) {
      if (!(err instanceof RelationVanished)) throw err;
      if (attempt >= 3)
        throw new AppError("err:svc:application:service_unavailable", "A permission or role was deleted while the key was being updated; try again.");
      if (input.permissions !== undefined)
        permissionIds = await ensurePermissions(deps.pool, p.workspaceId, input.permissions, now, auditCreatedOnUse(deps, p, "permission"));
      if (input.roles !== undefined) {
        const again = await findRoles(deps.pool, p.workspaceId, input.roles);
        if (again.missing !== undefined) throw roleNotFound(again.missing);
        roleIds = again.ids;
      }
    }
  }
  await deps.invalidate("key", key.id);
}

/**
 * The fields a request sets (or clears), by name: the log says what changed,
 * never to what (meta may hold secrets, credits are the customer's business).
 */
function updatedFields(input: UpdateKeyInput): string[] {
  const fields: string[] = [];
  if (input.name !== undefined) fields.push("name");
  if (input.externalId !== undefined) fields.push("externalId");
  if (input.meta !== undefined) fields.push("meta");
  if (input.expires !== undefined) fields.push("expires");
  if (input.credits?.remaining !== undefined) fields.push("credits.remaining");
  if (input.credits?.refill !== undefined) fields.push("credits.refill");
  if (input.ratelimits !== undefined) fields.push("ratelimits");
  if (input.enabled !== undefined) fields.push("enabled");
  if (input.roles !== undefined) fields.push("roles");
  if (input.permissions !== undefined) fields.push("permissions");
  return fields;
}

export interface UpdateCreditsInput {
  keyId: string;
  operation: string;
  value?: number | undefined;
}

export async function updateCredits(
  deps: Deps,
  p: Principal,
  input: UpdateCreditsInput,
): Promise<{ remaining: number | undefined; refill: Refill | undefined }> {
  if (input.operation !== "set" && input.value === undefined) {
    throw invalidField("value", "When specifying an increment or decrement operation, a value must be provided.");
  }
  const key = await findLiveKeyById(deps.pool, p.workspaceId, input.keyId);
  if (!key) throw keyNotFound();
  requireAny(p, apiPermission(key.apiId, "update_key"));
  const now = deps.clock.now();
  const op = input.operation;
  // A root key's change of the balance, so audited; the spends of verifyKey are not (a hot-path effect, not a management change).
  const result = await audited(
    deps,
    p,
    async (conn): Promise<{ remaining: number | undefined; refill: Refill | undefined }> => {
      if (op === "set") {
        if (input.value === undefined) {
          // Unlimited: the refill goes too.
          await updateKeyColumns(conn, key.id, { remaining_requests: null, refill_amount: null, refill_day: null }, now);
          return { remaining: undefined, refill: undefined };
        }
        await updateKeyColumns(conn, key.id, { remaining_requests: input.value }, now);
        return { remaining: input.value, refill: key.refill };
      }
      // Thrown inside the transaction: nothing changed, so it rolls back with no record.
      const changed = await changeCredits(conn, key.id, op as "increment" | "decrement", input.value as number, MAX_SAFE);
      if (!changed.found) throw invalidField("operation", "You cannot increment or decrement a key with unlimited credits.");
      await updateKeyColumns(conn, key.id, {}, now);
      return { remaining: changed.remaining, refill: key.refill };
    },
    // The operation by name, never the amount nor the balance.
    () => ({
      action: "key.update_credits",
      resources: [
        { type: "key", id: key.id },
        { type: "api", id: key.apiId },
      ],
      description:
        op === "set"
          ? input.value === undefined
            ? "Set credits.remaining to unlimited; cleared credits.refill."
            : "Set credits.remaining."
          : op === "increment"
            ? "Incremented credits.remaining."
            : "Decremented credits.remaining.",
    }),
  );
  await deps.invalidate("key", key.id);
  return result;
}

export async function rerollKey(deps: Deps, p: Principal, input: { keyId: string; expiration: number }): Promise<{ keyId: string; key: string }> {
  const old = await findLiveKeyById(deps.pool, p.workspaceId, input.keyId);
  if (!old) throw keyNotFound();
  requireAny(p, apiPermission(old.apiId, "create_key"));
  if (old.recoverable) requireAny(p, apiPermission(old.apiId, "encrypt_key"));
  const now = deps.clock.now();
  const { key, start } = generateKey(old.prefix, old.byteLength);
  const encrypted = old.recoverable ? await deps.vault.encrypt(p.workspaceId, key) : undefined;
  const keyId = newId("key", now);
  const graceEnds = now + input.expiration;
  await transaction(deps.pool, async (conn) => {
    await insertKeyRow(conn, {
      id: keyId,
      keyAuthId: old.keyAuthId,
      apiId: old.apiId,
      workspaceId: p.workspaceId,
      hash: hashKey(key),
      start,
      prefix: old.prefix,
      byteLength: old.byteLength,
      name: old.name,
      identityId: old.identity?.id ?? (await findIdentityIdOfKey(conn, old.id)),
      meta: old.meta === undefined ? undefined : JSON.stringify(old.meta),
      expires: old.expires,
      enabled: old.enabled,
      remaining: old.remaining,
      refillAmount: old.refill?.amount,
      refillDay: old.refill?.day,
      recoverable: old.recoverable,
      now,
    });
    await copyKeyRelations(conn, old.id, keyId, p.workspaceId, now);
    if (encrypted) await insertEncryptedKey(conn, { workspaceId: p.workspaceId, keyId, ...encrypted, now });
    // The old key keeps working until the grace period ends (never longer than it would have).
    await updateKeyColumns(conn, old.id, { expires_at_m: old.expires === undefined ? graceEnds : Math.min(old.expires, graceEnds) }, now);
    await writeAudit(conn, deps, p, {
      action: "key.reroll",
      resources: [
        { type: "key", id: old.id },
        { type: "key", id: keyId },
        { type: "api", id: old.apiId },
      ],
      description:
        "Rerolled the key: a new key with its settings, permissions, roles and rate limits; set expires of the old key to the end of the grace period.",
    });
  });
  await deps.invalidate("key", old.id);
  return { keyId, key };
}
