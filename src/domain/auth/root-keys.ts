// Root keys are issued, listed and revoked here, and nowhere else: the CLI (an
// administrator with the database in hand) and the dashboard (an operator, in
// the workspaces they belong to) both call these operations, so a root key's
// name and permissions follow one grammar wherever it is made.
import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { insertRootKey, listRootKeys as listStoredRootKeys, type RootKeyListing, revokeRootKey as revokeStoredRootKey } from "../../storage/root-keys.js";
import type { Deps } from "../deps.js";
import { hashKey } from "../keys/generate.js";
import { Validator } from "../validate.js";
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

/** What these operations need: the database, the time, and the caches to tell. */
export type RootKeyDeps = Pick<Deps, "pool" | "clock" | "invalidate">;

export type { RootKeyListing };

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

/** A new root key for the workspace; its plaintext is in this answer only (the database keeps its hash). */
export async function issueRootKey(
  deps: RootKeyDeps,
  input: { workspaceId: string; name: string | undefined; permissions: readonly string[] },
): Promise<{ keyId: string; rootKey: string }> {
  validateRootKeyInput(input);
  const now = deps.clock.now();
  const rootKey = generateRootKey();
  const keyId = newId("key", now);
  await insertRootKey(deps.pool, {
    id: keyId,
    workspaceId: input.workspaceId,
    hash: hashKey(rootKey),
    start: rootKey.slice(0, 8),
    name: input.name === undefined || input.name === "" ? null : input.name,
    permissions: [...new Set(input.permissions)],
    now,
  });
  return { keyId, rootKey };
}

/** The workspace's live root keys, never their secrets. */
export async function listRootKeys(deps: RootKeyDeps, workspaceId: string): Promise<RootKeyListing[]> {
  return listStoredRootKeys(deps.pool, workspaceId);
}

/**
 * Revokes a live root key: of the workspace given (a key id from elsewhere is
 * "not found" like an unknown one), or of any workspace when none is (the CLI).
 * It answers 401 at once here and on other instances after their next poll.
 */
export async function revokeRootKey(deps: RootKeyDeps, input: { keyId: string; workspaceId: string | undefined }): Promise<void> {
  const v = new Validator();
  v.required("keyId", input.keyId, { max: 48 });
  v.done();
  const hash = await revokeStoredRootKey(deps.pool, input.keyId, input.workspaceId, deps.clock.now());
  if (hash === undefined) throw new AppError("err:svc:data:key_not_found", "No live root key with this id in the workspace.");
  await deps.invalidate("rootkey", hash);
}
