// permissions.* over real gRPC (h2c), with a client built only from the .proto
// files, as any gRPC user would build one. The same domain code serves the JSON
// gateway, so this checks the wire: messages, status codes, error metadata.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admin, createApi, createKey, expectOk, verifyKey } from "../contract/shared/helpers.js";
import { bearer, type Client, call, failure, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";

interface PermissionMsg {
  id: string;
  name: string;
  slug: string;
  description?: string;
}
interface RoleMsg {
  id: string;
  name: string;
  description?: string;
  permissions: PermissionMsg[];
}

function load(): grpc.ServiceClientConstructor {
  return service(loadServices("permissions_service.proto"), "PermissionsService");
}

describe("gRPC: PermissionsService", () => {
  const h = useHarness();
  let client: Client;
  let auth: grpc.Metadata;

  beforeAll(async () => {
    const port = await h.grpcPort();
    const Permissions = load();
    client = new Permissions(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    auth = bearer(await h.rootKey(["rbac.*"]));
  });

  afterAll(() => client?.close());

  it("CreatePermission returns a permissionId that GetPermission (and the JSON API) can read", async () => {
    const res = await call<{ permissionId: string }>(client, "createPermission", { name: "Read docs", slug: "docs.read", description: "Read" }, auth);
    expect(res.permissionId).toMatch(/^perm_/);
    const got = await call<{ permission: PermissionMsg }>(client, "getPermission", { permission: "docs.read" }, auth);
    expect(got.permission).toEqual({ id: res.permissionId, name: "Read docs", slug: "docs.read", description: "Read" });
    const json = expectOk(await h.post("/v2/permissions.getPermission", { permission: res.permissionId }, await admin(h)));
    expect(json).toEqual({ id: res.permissionId, name: "Read docs", slug: "docs.read", description: "Read" });
  });

  it("CreateRole auto-creates slugs; GetRole by id and by name returns the role with its permissions", async () => {
    const { roleId } = await call<{ roleId: string }>(
      client,
      "createRole",
      { name: "grpc editor", description: "Edits", permissions: ["docs.read", "docs.write"] },
      auth,
    );
    expect(roleId).toMatch(/^role_/);
    for (const role of [roleId, "grpc editor"]) {
      const got = await call<{ role: RoleMsg }>(client, "getRole", { role }, auth);
      expect(got.role).toMatchObject({ id: roleId, name: "grpc editor", description: "Edits" });
      expect(got.role.permissions.map((p) => p.slug)).toEqual(["docs.read", "docs.write"]);
      expect(got.role.permissions[1]).toMatchObject({ name: "docs.write", slug: "docs.write", id: expect.stringMatching(/^perm_/) });
    }
  });

  it("a role without permissions and description comes back without them", async () => {
    const { roleId } = await call<{ roleId: string }>(client, "createRole", { name: "grpc bare" }, auth);
    const got = await call<{ role: RoleMsg }>(client, "getRole", { role: roleId }, auth);
    expect(got.role.id).toBe(roleId);
    expect(got.role.permissions ?? []).toEqual([]);
    expect(got.role.description).toBeUndefined();
  });

  it("ListPermissions and ListRoles page with a cursor", async () => {
    const first = await call<{ permissions: PermissionMsg[]; pagination: { hasMore: boolean; cursor?: string } }>(
      client,
      "listPermissions",
      { limit: 1 },
      auth,
    );
    expect(first.permissions).toHaveLength(1);
    expect(first.pagination).toMatchObject({ hasMore: true, cursor: expect.any(String) });
    const rest = await call<{ permissions: PermissionMsg[]; pagination: { hasMore: boolean } }>(
      client,
      "listPermissions",
      { limit: 100, cursor: first.pagination.cursor },
      auth,
    );
    expect([...first.permissions, ...rest.permissions].map((p) => p.slug).sort()).toEqual(["docs.read", "docs.write"]);
    expect(rest.pagination.hasMore).toBe(false);
    const roles = await call<{ roles: RoleMsg[] }>(client, "listRoles", { search: "GRPC" }, auth);
    expect(roles.roles.map((r) => r.name).sort()).toEqual(["grpc bare", "grpc editor"]);
  });

  it("a duplicate slug or role name fails with ALREADY_EXISTS and the error code in metadata", async () => {
    const perm = await failure(call(client, "createPermission", { name: "again", slug: "docs.read" }, auth));
    expect(perm.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(perm.metadata.get("error-code")).toEqual(["err:svc:data:permission_already_exists"]);
    const role = await failure(call(client, "createRole", { name: "grpc editor" }, auth));
    expect(role.code).toBe(grpc.status.ALREADY_EXISTS);
    expect(role.metadata.get("error-code")).toEqual(["err:svc:data:role_already_exists"]);
  });

  it("an unknown role or permission is NOT_FOUND", async () => {
    const role = await failure(call(client, "getRole", { role: "nobody" }, auth));
    expect(role.code).toBe(grpc.status.NOT_FOUND);
    expect(role.metadata.get("error-code")).toEqual(["err:svc:data:role_not_found"]);
    const perm = await failure(call(client, "deletePermission", { permission: "no.such" }, auth));
    expect(perm.code).toBe(grpc.status.NOT_FOUND);
    expect(perm.metadata.get("error-code")).toEqual(["err:svc:data:permission_not_found"]);
  });

  // Fields gRPC callers leave unset arrive as "" or 0, and limits are not capped
  // by the JSON schema: the domain rules still answer 400, never 500.
  it.each<[string, string, unknown, string]>([
    ["an empty slug", "createPermission", { name: "n" }, "slug"],
    ["a slug with a space", "createPermission", { name: "n", slug: "a b" }, "slug"],
    ["a role name with a trailing space", "createRole", { name: "admin " }, "name"],
    ["a role name of 129 characters", "createRole", { name: "r".repeat(129) }, "name"],
    ["an invalid permission slug in a role", "createRole", { name: "ok", permissions: ["bad/slug"] }, "permissions[0]"],
    ["an empty role reference", "getRole", {}, "role"],
    ["limit 0 given explicitly", "listRoles", { limit: 0 }, "limit"],
    ["a negative limit", "listPermissions", { limit: -3 }, "limit"],
    ["a huge limit", "listPermissions", { limit: 2_000_000_000 }, "limit"],
  ])("%s fails with INVALID_ARGUMENT naming the field", async (_label, method, req, field) => {
    const err = await failure(call(client, method, req, auth));
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:application:invalid_input"]);
    expect(err.details).toContain(field);
  });

  it("a missing grant is PERMISSION_DENIED", async () => {
    const err = await failure(call(client, "createRole", { name: "nope" }, bearer(await h.rootKey(["rbac.*.read_role"]))));
    expect(err.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:authorization:insufficient_permissions"]);
  });

  it("without the root key in `authorization` the call is UNAUTHENTICATED", async () => {
    const err = await failure(call(client, "getRole", { role: "x" }, new grpc.Metadata()));
    expect(err.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:authentication:missing"]);
  });

  // Cache eviction across front doors (docs/caching.md): a role deleted over gRPC is gone from the
  // very next JSON verification of a key whose record was cached.
  it("DeleteRole over gRPC is seen by the very next keys.verifyKey", async () => {
    await call(client, "createRole", { name: "grpc_temp", permissions: ["temp.use"] }, auth);
    const { key } = await createKey(h, await createApi(h), { roles: ["grpc_temp"] });
    expect(await verifyKey(h, key, { permissions: "temp.use" })).toMatchObject({ valid: true, code: "VALID" });
    expect(await call(client, "deleteRole", { role: "grpc_temp" }, auth)).toEqual({});
    expect(await verifyKey(h, key, { permissions: "temp.use" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
  });

  // Last in this block: the listing tests above count this block's roles and permissions.
  it("SetRolePermissions replaces a role's permissions (by id or name), seen by the very next keys.verifyKey; its errors are gRPC's", async () => {
    const { roleId } = await call<{ roleId: string }>(client, "createRole", { name: "grpc_setter", permissions: ["set.old"] }, auth);
    const { key } = await createKey(h, await createApi(h), { roles: ["grpc_setter"] });
    expect(await verifyKey(h, key, { permissions: "set.old" })).toMatchObject({ valid: true, code: "VALID" });

    const set = await call<{ permissions: PermissionMsg[] }>(client, "setRolePermissions", { roleId, permissions: ["set.new", "set.b"] }, auth);
    expect(set.permissions.map((p) => p.slug)).toEqual(["set.b", "set.new"]);
    expect(set.permissions[1]).toMatchObject({ id: expect.stringMatching(/^perm_/), name: "set.new", slug: "set.new" });
    expect(await verifyKey(h, key, { permissions: "set.old" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });
    expect(await verifyKey(h, key, { permissions: "set.new AND set.b" })).toMatchObject({ valid: true, code: "VALID" });

    const cleared = await call<{ permissions?: PermissionMsg[] }>(client, "setRolePermissions", { roleId: "grpc_setter", permissions: [] }, auth);
    expect(cleared.permissions ?? []).toEqual([]);
    expect(await verifyKey(h, key, { permissions: "set.new" })).toMatchObject({ valid: false, code: "INSUFFICIENT_PERMISSIONS" });

    const missing = await failure(call(client, "setRolePermissions", { roleId: "nobody", permissions: [] }, auth));
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.metadata.get("error-code")).toEqual(["err:svc:data:role_not_found"]);
    for (const [req, field] of [
      [{ roleId: "", permissions: [] }, "roleId"],
      [{ roleId, permissions: ["bad/slug"] }, "permissions[0]"],
    ] as const) {
      const invalid = await failure(call(client, "setRolePermissions", req, auth));
      expect(invalid.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(invalid.details).toContain(field);
    }
    const denied = await failure(call(client, "setRolePermissions", { roleId, permissions: [] }, bearer(await h.rootKey(["rbac.*.add_permission_to_role"]))));
    expect(denied.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(denied.metadata.get("error-code")).toEqual(["err:svc:authorization:insufficient_permissions"]);
  });
});

describe("gRPC: KeysService grant operations", () => {
  const h = useHarness();
  let keys: Client;
  let perms: Client;
  let auth: grpc.Metadata;

  beforeAll(async () => {
    const port = await h.grpcPort();
    const services = loadServices("keys_service.proto", "permissions_service.proto");
    keys = new (service(services, "KeysService"))(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    perms = new (service(services, "PermissionsService"))(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    auth = bearer(await h.rootKey(["*"]));
  });

  afterAll(() => {
    keys?.close();
    perms?.close();
  });

  it("AddPermissions, SetRoles and RemovePermissions answer with the key's grants, and verification follows", async () => {
    const apiId = await createApi(h);
    const k = await createKey(h, apiId);
    const added = await call<{ permissions: PermissionMsg[] }>(keys, "addPermissions", { keyId: k.keyId, permissions: ["files.read", "files.write"] }, auth);
    expect(added.permissions.map((p) => p.slug)).toEqual(["files.read", "files.write"]);
    await call(perms, "createRole", { name: "auditor", permissions: ["audit.read"] }, auth);
    const roles = await call<{ roles: RoleMsg[] }>(keys, "setRoles", { keyId: k.keyId, roles: ["auditor"] }, auth);
    expect(roles.roles.map((r) => r.name)).toEqual(["auditor"]);
    expect((await verifyKey(h, k.key, { permissions: "audit.read AND files.write" })).code).toBe("VALID");
    const left = await call<{ permissions: PermissionMsg[] }>(keys, "removePermissions", { keyId: k.keyId, permissions: ["files.write"] }, auth);
    expect(left.permissions.map((p) => p.slug)).toEqual(["files.read"]);
    expect((await verifyKey(h, k.key, { permissions: "files.write" })).code).toBe("INSUFFICIENT_PERMISSIONS");
    const missing = await failure(call(keys, "addRoles", { keyId: k.keyId, roles: ["ghost"] }, auth));
    expect(missing.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.metadata.get("error-code")).toEqual(["err:svc:data:role_not_found"]);
  });
});
