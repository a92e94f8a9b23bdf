import type { RootKeysService } from "../../gen/keyhold/v2/root_keys_service_pb.js";
import { requireAny } from "../domain/auth/principal.js";
import { issueRootKey, listRootKeys, type RootKeyListing, revokeRootKey, rotateRootKey, updateRootKey } from "../domain/auth/root-keys.js";
import type { Deps } from "../domain/deps.js";
import { big, optNum } from "./convert.js";
import type { Operations } from "./types.js";

/** The grants of the rootKeys group: `workspace.*.<action>` (docs/permissions.md). */
export const ROOT_KEY_GRANT = {
  create: "workspace.*.create_root_key",
  read: "workspace.*.read_root_key",
  update: "workspace.*.update_root_key",
  delete: "workspace.*.delete_root_key",
} as const;

export const toRootKeyData = (k: RootKeyListing) => ({
  keyId: k.keyId,
  name: k.name,
  start: k.start,
  permissions: k.permissions,
  enabled: k.enabled,
  expires: k.expiresAt === undefined ? undefined : big(k.expiresAt),
  createdAt: big(k.createdAt),
  lastUsedAt: k.lastUsedAt === undefined ? undefined : big(k.lastUsedAt),
});

export function rootKeysService(deps: Deps): Operations<typeof RootKeysService> {
  return {
    async createRootKey(req, { principal }) {
      requireAny(principal, [ROOT_KEY_GRANT.create]);
      const out = await issueRootKey(deps, principal, {
        workspaceId: principal.workspaceId,
        name: req.name,
        permissions: req.permissions,
        expires: optNum(req.expires),
      });
      return { keyId: out.keyId, key: out.rootKey };
    },
    async listRootKeys(_req, { principal }) {
      requireAny(principal, [ROOT_KEY_GRANT.read]);
      return { rootKeys: (await listRootKeys(deps, principal.workspaceId)).map(toRootKeyData) };
    },
    async updateRootKey(req, { principal }) {
      requireAny(principal, [ROOT_KEY_GRANT.update]);
      const key = await updateRootKey(deps, principal, {
        keyId: req.keyId,
        workspaceId: principal.workspaceId,
        name: req.name,
        permissions: req.setPermissions ? req.permissions : undefined,
        enabled: req.enabled,
        expires: optNum(req.expires),
      });
      return { rootKey: toRootKeyData(key) };
    },
    async rotateRootKey(req, { principal }) {
      requireAny(principal, [ROOT_KEY_GRANT.create]);
      requireAny(principal, [ROOT_KEY_GRANT.update]);
      const out = await rotateRootKey(deps, principal, { keyId: req.keyId, workspaceId: principal.workspaceId, gracePeriodMs: Number(req.gracePeriodMs) });
      return { keyId: out.keyId, key: out.rootKey, previousExpires: big(out.previousExpires) };
    },
    async deleteRootKey(req, { principal }) {
      requireAny(principal, [ROOT_KEY_GRANT.delete]);
      await revokeRootKey(deps, principal, { keyId: req.keyId, workspaceId: principal.workspaceId });
      return {};
    },
  };
}
