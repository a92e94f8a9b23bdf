// The actions the audit log can hold, with no imports: the dashboard's audit page
// offers them as its filter, and importing the module that writes records would
// bring the database driver into the browser bundle.
/** Every action the log can hold: the filter of listLogs accepts these and no others. */
export const AUDIT_ACTIONS = [
  "api.create",
  "api.delete",
  "key.create",
  "key.update",
  "key.delete",
  "key.reroll",
  "key.update_credits",
  "key.add_permissions",
  "key.remove_permissions",
  "key.set_permissions",
  "key.add_roles",
  "key.remove_roles",
  "key.set_roles",
  "key.migrate",
  "key_migration.create",
  "identity.create",
  "identity.update",
  "identity.delete",
  "permission.create",
  "permission.delete",
  "role.create",
  "role.delete",
  "role.set_permissions",
  "ratelimit_namespace.create",
  "ratelimit_namespace.delete",
  "ratelimit_override.set",
  "ratelimit_override.delete",
  "root_key.create",
  "root_key.update",
  "root_key.rotate",
  "root_key.delete",
  "workspace.create",
  "operator.create",
  "operator.sign_in",
  "operator.sign_in_failed",
  "operator.sign_out",
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];
