import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { GRANT } from "../rootKeys.createRootKey/support.js";
import { expectError } from "../shared/helpers.js";

describe("auditLogs.listLogs 403", () => {
  const h = useHarness();

  it.each<[string, (ws: string) => string[]]>([
    ["every root-key grant but read_audit_log", () => [GRANT.create, GRANT.read, GRANT.update, GRANT.delete]],
    ["read grants of other resources", () => ["apis.*.read_api", "apis.*.read_key", "identity.*.read_identity", "rbac.*.read_role"]],
    ["read_audit_log of another resource type", () => ["apis.*.read_audit_log"]],
    // The workspace resource takes `*` only (docs/permissions.md): a grant naming a workspace id covers nothing here.
    ["read_audit_log for its own workspace id", (ws) => [`workspace.${ws}.read_audit_log`]],
  ])("a root key with %s -> 403 insufficient_permissions", async (_label, perms) => {
    const res = await h.post("/v2/auditLogs.listLogs", {}, await h.rootKey(perms(h.workspaceId)));
    expectError(h, res, 403, "err:svc:authorization:insufficient_permissions");
    expect(res.body.error.detail).toContain(GRANT.readAudit);
  });
});
