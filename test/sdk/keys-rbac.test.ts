// @unkey/api against keyhold: the `keys` group's permission and role operations
// (addPermissions, removePermissions, setPermissions, addRoles, removeRoles, setRoles).
import type { Unkey } from "@unkey/api";
import { ForbiddenErrorResponse, NotFoundErrorResponse, UnauthorizedErrorResponse } from "@unkey/api/models/errors";
import { beforeAll, describe, expect, it } from "vitest";
import { expectBadRequest, expectSdkError, NOTHING, ok, uid, useSdk } from "./support.js";

describe("@unkey/api keys.* (permissions and roles of a key)", () => {
  const w = useSdk();
  const { h } = w;
  let admin: Unkey;
  let apiId: string;

  beforeAll(async () => {
    admin = await w.admin();
    apiId = (await admin.apis.createApi({ name: uid("rbac") })).data.apiId;
  });

  const newKeyId = async (fields: { permissions?: string[]; roles?: string[] } = {}): Promise<string> =>
    (await admin.keys.createKey({ apiId, ...fields })).data.keyId;

  /** A permission created through the API: {id, name, slug, description}. */
  async function permission(slug = uid("perm")) {
    const id = (await admin.permissions.createPermission({ name: `${slug} name`, slug, description: `${slug} description` })).data.permissionId;
    return { id, name: `${slug} name`, slug, description: `${slug} description` };
  }

  async function role(permissions: string[] = []) {
    const name = uid("role");
    const id = (await admin.permissions.createRole({ name, description: "a role", permissions })).data.roleId;
    return { id, name };
  }

  async function expectAuthFailures(call: (c: Unkey) => Promise<unknown>): Promise<void> {
    await expectSdkError(h, call(w.unknownKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:key_not_found");
    await expectSdkError(h, call(w.truncatedKey()), UnauthorizedErrorResponse, 401, "err:svc:authentication:malformed");
    await expectSdkError(h, call(await w.client(NOTHING)), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
    // update_key alone is not enough: the rbac grant is needed too.
    await expectSdkError(h, call(await w.client([`apis.${apiId}.update_key`])), ForbiddenErrorResponse, 403, "err:svc:authorization:insufficient_permissions");
  }

  const byId = <T extends { id: string }>(xs: T[]): T[] => [...xs].sort((a, b) => a.id.localeCompare(b.id));

  describe("addPermissions", () => {
    it("200: every direct permission of the key after the add; new slugs are created", async () => {
      const existing = await permission();
      const keyId = await newKeyId({ permissions: [existing.slug] });
      const known = await permission();
      const fresh = uid("fresh");
      const c = await w.client([`apis.${apiId}.update_key`, "rbac.*.add_permission_to_key", "rbac.*.create_permission"]);
      const res = await ok(c.keys.addPermissions({ keyId, permissions: [known.slug, fresh, existing.slug] }));
      expect(res.data).toEqual(
        expect.arrayContaining([existing, known, { id: expect.stringMatching(/^perm_/), name: fresh, slug: fresh, description: expect.any(String) }]),
      );
      expect(res.data).toHaveLength(3);
      const got = (await admin.keys.getKey({ keyId })).data.permissions ?? [];
      expect(got.sort()).toEqual([existing.slug, known.slug, fresh].sort());
    });

    it("400: an empty list names `permissions`; a slug outside the pattern too", async () => {
      const keyId = await newKeyId();
      await expectBadRequest(h, admin.keys.addPermissions({ keyId, permissions: [] }), "permissions");
      await expectBadRequest(h, admin.keys.addPermissions({ keyId, permissions: ["has space"] }), "permissions[0]");
    });

    it("401 and 403 (a new slug also needs create_permission)", async () => {
      const keyId = await newKeyId();
      const p = await permission();
      await expectAuthFailures((c) => c.keys.addPermissions({ keyId, permissions: [p.slug] }));
      const noCreate = await w.client([`apis.${apiId}.update_key`, "rbac.*.add_permission_to_key"]);
      await expectSdkError(
        h,
        noCreate.keys.addPermissions({ keyId, permissions: [uid("new")] }),
        ForbiddenErrorResponse,
        403,
        "err:svc:authorization:insufficient_permissions",
      );
    });

    it("404: an unknown keyId", async () => {
      await expectSdkError(
        h,
        admin.keys.addPermissions({ keyId: "key_doesnotexist1", permissions: ["a.b"] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:key_not_found",
      );
    });
  });

  describe("removePermissions", () => {
    it("200: the direct permissions that remain", async () => {
      const a = await permission();
      const b = await permission();
      const keyId = await newKeyId({ permissions: [a.slug, b.slug] });
      const c = await w.client([`apis.${apiId}.update_key`, "rbac.*.remove_permission_from_key"]);
      expect((await ok(c.keys.removePermissions({ keyId, permissions: [a.slug] }))).data).toEqual([b]);
      expect((await ok(c.keys.removePermissions({ keyId, permissions: [b.slug] }))).data).toEqual([]);
    });

    it("400: an empty list names `permissions`", async () => {
      await expectBadRequest(h, admin.keys.removePermissions({ keyId: await newKeyId(), permissions: [] }), "permissions");
    });

    it("401 and 403", async () => {
      const a = await permission();
      const keyId = await newKeyId({ permissions: [a.slug] });
      await expectAuthFailures((c) => c.keys.removePermissions({ keyId, permissions: [a.slug] }));
    });

    it("404: unknown keyId (key_not_found) and a slug the workspace lacks (permission_not_found)", async () => {
      await expectSdkError(
        h,
        admin.keys.removePermissions({ keyId: "key_doesnotexist1", permissions: ["a.b"] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:key_not_found",
      );
      await expectSdkError(
        h,
        admin.keys.removePermissions({ keyId: await newKeyId(), permissions: [uid("nope")] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:permission_not_found",
      );
    });
  });

  describe("setPermissions", () => {
    it("200: exactly the requested set; [] removes all", async () => {
      const a = await permission();
      const b = await permission();
      const keyId = await newKeyId({ permissions: [a.slug] });
      const c = await w.client([`apis.${apiId}.update_key`, "rbac.*.add_permission_to_key", "rbac.*.remove_permission_from_key"]);
      expect((await ok(c.keys.setPermissions({ keyId, permissions: [b.slug] }))).data).toEqual([b]);
      expect((await admin.keys.getKey({ keyId })).data.permissions).toEqual([b.slug]);
      expect((await ok(c.keys.setPermissions({ keyId, permissions: [] }))).data).toEqual([]);
      expect((await admin.keys.getKey({ keyId })).data.permissions).toBeUndefined();
    });

    it("400: a slug longer than 100 characters names `permissions[0]`", async () => {
      await expectBadRequest(h, admin.keys.setPermissions({ keyId: await newKeyId(), permissions: ["p".repeat(200)] }), "permissions[0]");
    });

    it("401 and 403", async () => {
      const keyId = await newKeyId();
      await expectAuthFailures((c) => c.keys.setPermissions({ keyId, permissions: [] }));
    });

    it("404: an unknown keyId", async () => {
      await expectSdkError(
        h,
        admin.keys.setPermissions({ keyId: "key_doesnotexist1", permissions: [] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:key_not_found",
      );
    });
  });

  describe("addRoles", () => {
    it("200: every role of the key after the add, each with its permissions", async () => {
      const p = await permission();
      const r1 = await role();
      const r2 = await role([p.slug]);
      const keyId = await newKeyId({ roles: [r1.name] });
      const c = await w.client([`apis.${apiId}.update_key`, "rbac.*.add_role_to_key"]);
      const res = await ok(c.keys.addRoles({ keyId, roles: [r2.name, r1.name] }));
      expect(byId(res.data)).toEqual(
        byId([
          { ...r1, description: "a role" },
          { ...r2, description: "a role", permissions: [p] },
        ]),
      );
      expect((await admin.keys.getKey({ keyId })).data.roles?.sort()).toEqual([r1.name, r2.name].sort());
    });

    it("400: an empty list names `roles`", async () => {
      await expectBadRequest(h, admin.keys.addRoles({ keyId: await newKeyId(), roles: [] }), "roles");
    });

    it("401 and 403", async () => {
      const r = await role();
      const keyId = await newKeyId();
      await expectAuthFailures((c) => c.keys.addRoles({ keyId, roles: [r.name] }));
    });

    it("404: unknown keyId and unknown role", async () => {
      const r = await role();
      await expectSdkError(h, admin.keys.addRoles({ keyId: "key_doesnotexist1", roles: [r.name] }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
      await expectSdkError(
        h,
        admin.keys.addRoles({ keyId: await newKeyId(), roles: [uid("norole")] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:role_not_found",
      );
    });
  });

  describe("removeRoles", () => {
    it("200: the roles that remain", async () => {
      const r1 = await role();
      const r2 = await role();
      const keyId = await newKeyId({ roles: [r1.name, r2.name] });
      const c = await w.client([`apis.${apiId}.update_key`, "rbac.*.remove_role_from_key"]);
      expect((await ok(c.keys.removeRoles({ keyId, roles: [r1.name] }))).data).toEqual([{ ...r2, description: "a role" }]);
      expect((await ok(c.keys.removeRoles({ keyId, roles: [r2.name] }))).data).toEqual([]);
    });

    it("400: an empty list names `roles`", async () => {
      await expectBadRequest(h, admin.keys.removeRoles({ keyId: await newKeyId(), roles: [] }), "roles");
    });

    it("401 and 403", async () => {
      const r = await role();
      const keyId = await newKeyId({ roles: [r.name] });
      await expectAuthFailures((c) => c.keys.removeRoles({ keyId, roles: [r.name] }));
    });

    it("404: unknown keyId and unknown role", async () => {
      await expectSdkError(
        h,
        admin.keys.removeRoles({ keyId: "key_doesnotexist1", roles: ["x_role"] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:key_not_found",
      );
      await expectSdkError(
        h,
        admin.keys.removeRoles({ keyId: await newKeyId(), roles: [uid("norole")] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:role_not_found",
      );
    });
  });

  describe("setRoles", () => {
    it("200: the final set; [] removes all", async () => {
      const r1 = await role();
      const r2 = await role();
      const keyId = await newKeyId({ roles: [r1.name] });
      const c = await w.client([`apis.${apiId}.update_key`, "rbac.*.add_role_to_key", "rbac.*.remove_role_from_key"]);
      expect((await ok(c.keys.setRoles({ keyId, roles: [r2.name] }))).data).toEqual([{ ...r2, description: "a role" }]);
      expect((await admin.keys.getKey({ keyId })).data.roles).toEqual([r2.name]);
      expect((await ok(c.keys.setRoles({ keyId, roles: [] }))).data).toEqual([]);
    });

    it("400: an empty role name names `roles[0]`", async () => {
      await expectBadRequest(h, admin.keys.setRoles({ keyId: await newKeyId(), roles: [""] }), "roles[0]");
    });

    it("401 and 403", async () => {
      const keyId = await newKeyId();
      await expectAuthFailures((c) => c.keys.setRoles({ keyId, roles: [] }));
    });

    it("404: unknown keyId and unknown role", async () => {
      await expectSdkError(h, admin.keys.setRoles({ keyId: "key_doesnotexist1", roles: [] }), NotFoundErrorResponse, 404, "err:svc:data:key_not_found");
      await expectSdkError(
        h,
        admin.keys.setRoles({ keyId: await newKeyId(), roles: [uid("norole")] }),
        NotFoundErrorResponse,
        404,
        "err:svc:data:role_not_found",
      );
    });
  });
});
