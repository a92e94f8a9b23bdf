// The root-key grants every operation needs, as data. Written from the checks the
// domain code makes (src/domain/**); docs/permissions.md ("Which operation needs
// which grant") says the same in prose. test/security/root-key-permissions.test.ts
// checks the code against this table for every RPC of every service; only
// test/security reads the table (the domain code makes its checks itself), so a
// change to the rules is made in both places.
//
// Grants are `resource.resourceId.action`; `{apiId}`, `{namespaceId}` and
// `{identityId}` stand for the id of the resource the request reaches (the API of
// the key, for key operations). A grant containing `*` covers a wanted grant by
// the glob rule (docs/permissions.md, "Wildcards"), so `*`, `apis.*` and `apis.*.*` cover
// `apis.{apiId}.read_key` too; the table lists the narrowest forms only.

/** Every grantable action of each resource type (docs/permissions.md, "Grants: `resource.resourceId.action`"), whether or not an operation checks it yet. */
export const GRANTABLE_ACTIONS = {
  apis: [
    "create_api",
    "read_api",
    "delete_api",
    "update_api",
    "create_key",
    "read_key",
    "update_key",
    "delete_key",
    "verify_key",
    "encrypt_key",
    "decrypt_key",
    "read_analytics",
  ],
  ratelimit: [
    "limit",
    "create_namespace",
    "read_namespace",
    "update_namespace",
    "delete_namespace",
    "set_override",
    "read_override",
    "delete_override",
    "list_overrides",
    "read_analytics",
  ],
  rbac: [
    "create_permission",
    "read_permission",
    "delete_permission",
    "update_permission",
    "create_role",
    "read_role",
    "delete_role",
    "update_role",
    "add_permission_to_key",
    "remove_permission_from_key",
    "add_role_to_key",
    "remove_role_from_key",
    "add_permission_to_role",
    "remove_permission_from_role",
  ],
  identity: ["create_identity", "read_identity", "update_identity", "delete_identity"],
  workspace: ["create_root_key", "read_root_key", "update_root_key", "delete_root_key", "read_audit_log"],
} as const;

export type ResourceType = keyof typeof GRANTABLE_ACTIONS;

/** The id placeholder of each resource type; rbac grants exist only in the `rbac.*` form. */
export const RESOURCE_PLACEHOLDER = { apis: "apiId", ratelimit: "namespaceId", identity: "identityId", rbac: undefined, workspace: undefined } as const;

export type Placeholder = "apiId" | "namespaceId" | "identityId";

/** Request shapes that need grants beyond the operation's own. */
export const CONDITIONS = {
  recoverable: "the call creates a recoverable key (createKey with recoverable: true; rerollKey of a recoverable key)",
  decrypt: "the request sets decrypt: true",
  newPermissionSlug: "the request names a permission slug the workspace does not have yet (it is created)",
  namesPermissions: "the request names at least one permission",
  newNamespace: "the request names a namespace that does not exist yet (it is created; having no id before, only `ratelimit.*.limit` covers it)",
} as const;

export type Condition = keyof typeof CONDITIONS;

export interface GrantRule {
  /** Any one of these grants satisfies the rule. */
  anyOf: readonly string[];
  /** The rule applies only to requests meeting this condition. */
  when?: Condition;
  /** The rule holds for every namespace the request names (multiLimit). */
  forEach?: true;
}

/**
 * What a caller lacking a grant gets: an HTTP error, or a 200 that reveals
 * nothing: verifyKey's verification code, or (code "") an empty answer (an
 * analytics query narrowed to resources the caller may read, here none).
 */
export interface Denial {
  status: 200 | 403 | 404;
  code: string;
}

export interface OperationPermissions {
  /** Every rule that applies must hold. */
  rules: readonly GrantRule[];
  /** Default: 403 insufficient_permissions. */
  denied?: Denial;
  /** When the caller holds the grant for other resources only, if that differs from `denied`. */
  deniedWithOtherResourceGrant?: Denial;
  note?: string;
}

export const FORBIDDEN: Denial = { status: 403, code: "err:svc:authorization:insufficient_permissions" };

const api = (action: string): GrantRule => ({ anyOf: [`apis.*.${action}`, `apis.{apiId}.${action}`] });
const identity = (action: string): GrantRule => ({ anyOf: [`identity.*.${action}`, `identity.{identityId}.${action}`] });
const namespace = (action: string): GrantRule => ({ anyOf: [`ratelimit.*.${action}`, `ratelimit.{namespaceId}.${action}`] });
const only = (grant: string, when?: Condition): GrantRule => (when === undefined ? { anyOf: [grant] } : { anyOf: [grant], when });
const withWhen = (rule: GrantRule, when: Condition): GrantRule => ({ ...rule, when });

const LIST_KEYS: OperationPermissions = { rules: [api("read_key"), api("read_api"), withWhen(api("decrypt_key"), "decrypt")] };
const LIMIT_RULES: readonly GrantRule[] = [{ ...namespace("limit"), forEach: true }, only("ratelimit.*.create_namespace", "newNamespace")];

/** Keyed by `<group>.<operation>`, the JSON path after `/v2/`. */
export const OPERATION_PERMISSIONS: Record<string, OperationPermissions> = {
  "apis.createApi": { rules: [only("apis.*.create_api")] },
  "apis.getApi": { rules: [api("read_api")] },
  "apis.listKeys": LIST_KEYS,
  "apis.deleteApi": { rules: [api("delete_api")] },

  "keys.createKey": {
    rules: [api("create_key"), withWhen(api("encrypt_key"), "recoverable")],
    note: "roles, permissions (new slugs are created) and externalId (the identity is created) need no rbac or identity grant, as in Unkey",
  },
  "keys.verifyKey": {
    rules: [api("verify_key")],
    deniedWithOtherResourceGrant: { status: 200, code: "NOT_FOUND" },
    note: "403 only when the root key holds no verify_key grant at all; one for other APIs reads as NOT_FOUND, so it cannot tell whether the key exists",
  },
  "keys.getKey": { rules: [api("read_key"), withWhen(api("decrypt_key"), "decrypt")] },
  "keys.whoami": {
    rules: [api("read_key")],
    denied: { status: 404, code: "err:svc:data:key_not_found" },
    note: "a missing grant reads as an unknown key: a 403 would confirm that the string is a real key",
  },
  "keys.updateKey": {
    rules: [api("update_key")],
    note: "roles, permissions and externalId are replaced with update_key alone, as in Unkey",
  },
  "keys.updateCredits": { rules: [api("update_key")] },
  "keys.deleteKey": { rules: [api("delete_key")] },
  "keys.rerollKey": { rules: [api("create_key"), withWhen(api("encrypt_key"), "recoverable")] },
  "keys.listKeys": LIST_KEYS,
  "keys.addPermissions": {
    rules: [api("update_key"), only("rbac.*.add_permission_to_key"), only("rbac.*.create_permission", "newPermissionSlug")],
  },
  "keys.removePermissions": { rules: [api("update_key"), only("rbac.*.remove_permission_from_key")] },
  "keys.setPermissions": {
    rules: [
      api("update_key"),
      only("rbac.*.add_permission_to_key"),
      only("rbac.*.remove_permission_from_key"),
      only("rbac.*.create_permission", "newPermissionSlug"),
    ],
  },
  "keys.addRoles": { rules: [api("update_key"), only("rbac.*.add_role_to_key")] },
  "keys.removeRoles": { rules: [api("update_key"), only("rbac.*.remove_role_from_key")] },
  "keys.setRoles": { rules: [api("update_key"), only("rbac.*.add_role_to_key"), only("rbac.*.remove_role_from_key")] },
  "keys.migrateKeys": {
    rules: [api("create_key")],
    note: "missing identities, permissions and roles are created without rbac or identity grants, as createKey creates them",
  },

  "identities.createIdentity": { rules: [only("identity.*.create_identity")] },
  "identities.getIdentity": { rules: [identity("read_identity")] },
  "identities.listIdentities": { rules: [only("identity.*.read_identity")], note: "the whole workspace is listed, so only the wildcard form" },
  "identities.updateIdentity": { rules: [identity("update_identity")] },
  "identities.deleteIdentity": { rules: [identity("delete_identity")] },

  "ratelimit.limit": { rules: LIMIT_RULES },
  "ratelimit.multiLimit": { rules: LIMIT_RULES },
  "ratelimit.setOverride": { rules: [namespace("set_override")] },
  "ratelimit.getOverride": {
    rules: [namespace("read_override")],
    denied: { status: 404, code: "err:svc:data:ratelimit_override_not_found" },
    note: "a missing grant is the same 404 as an unknown namespace or override, so the call cannot be used to probe which exist",
  },
  "ratelimit.listOverrides": { rules: [namespace("read_override")] },
  "ratelimit.deleteOverride": { rules: [namespace("delete_override")] },

  "permissions.createPermission": { rules: [only("rbac.*.create_permission")] },
  "permissions.getPermission": { rules: [only("rbac.*.read_permission")] },
  "permissions.listPermissions": { rules: [only("rbac.*.read_permission")] },
  "permissions.deletePermission": { rules: [only("rbac.*.delete_permission")] },
  "permissions.createRole": {
    rules: [only("rbac.*.create_role"), only("rbac.*.add_permission_to_role", "namesPermissions"), only("rbac.*.create_permission", "newPermissionSlug")],
  },
  "permissions.getRole": { rules: [only("rbac.*.read_role")] },
  "permissions.listRoles": { rules: [only("rbac.*.read_role")] },
  "permissions.deleteRole": { rules: [only("rbac.*.delete_role")] },
  "permissions.setRolePermissions": {
    rules: [only("rbac.*.add_permission_to_role"), only("rbac.*.remove_permission_from_role"), only("rbac.*.create_permission", "newPermissionSlug")],
    note: "a set both adds and removes, so both grants are needed even for a call that does one of them (`[]` included), as keys.setPermissions",
  },

  "rootKeys.createRootKey": {
    rules: [only("workspace.*.create_root_key")],
    note: "every permission given must also be covered by the caller's own grants (403 otherwise)",
  },
  "rootKeys.listRootKeys": { rules: [only("workspace.*.read_root_key")] },
  "rootKeys.updateRootKey": {
    rules: [only("workspace.*.update_root_key")],
    note: "the root key changed, and any permissions given, must be covered by the caller's own grants",
  },
  "rootKeys.rotateRootKey": {
    rules: [only("workspace.*.create_root_key"), only("workspace.*.update_root_key")],
    note: "the root key rotated must be covered by the caller's own grants",
  },
  "rootKeys.deleteRootKey": {
    rules: [only("workspace.*.delete_root_key")],
    note: "the root key revoked must be covered by the caller's own grants",
  },

  "auditLogs.listLogs": { rules: [only("workspace.*.read_audit_log")] },

  "analytics.getVerifications": {
    rules: [api("read_analytics")],
    deniedWithOtherResourceGrant: { status: 200, code: "" },
    note: "a grant naming APIs narrows the answer to their verifications: with grants for other APIs only, the query reads nothing",
  },
  "analytics.getRatelimits": {
    rules: [namespace("read_analytics")],
    deniedWithOtherResourceGrant: { status: 200, code: "" },
    note: "a grant naming namespaces narrows the answer to their checks: with grants for other namespaces only, the query reads nothing",
  },
};
