import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectError, expectOk } from "../shared/helpers.js";

const EXISTS = "err:svc:data:permission_already_exists";

describe("permissions.createPermission 409", () => {
  const h = useHarness();

  it("a slug the workspace already has -> 409 permission_already_exists, whatever the name", async () => {
    const rk = await admin(h);
    expectOk(await h.post("/v2/permissions.createPermission", { name: "Read", slug: "dup.read" }, rk));
    const res = await h.post("/v2/permissions.createPermission", { name: "Another name", slug: "dup.read" }, rk);
    expectError(h, res, 409, EXISTS, "A permission with slug 'dup.read' already exists in this workspace");
    expect(res.body.error.title).toBe("Conflict");
  });

  it("a slug auto-created by keys.createKey counts too", async () => {
    await createKey(h, await createApi(h), { permissions: ["auto.created"] });
    expectError(h, await h.post("/v2/permissions.createPermission", { name: "x", slug: "auto.created" }, await admin(h)), 409, EXISTS);
  });

  it("a slug auto-created by permissions.createRole counts too", async () => {
    expectOk(await h.post("/v2/permissions.createRole", { name: "from_role", permissions: ["role.created"] }, await admin(h)));
    expectError(h, await h.post("/v2/permissions.createPermission", { name: "x", slug: "role.created" }, await admin(h)), 409, EXISTS);
  });

  it("concurrent creates of one slug: exactly one wins, the others get 409", async () => {
    const rk = await admin(h);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) => h.post("/v2/permissions.createPermission", { name: `racer ${i}`, slug: "race.slug" }, rk)),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expectError(h, r, 409, EXISTS);
  });

  it("the 409 is checked after the permission: without the grant it is a 403", async () => {
    expectOk(await h.post("/v2/permissions.createPermission", { name: "x", slug: "taken.slug" }, await admin(h)));
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expectError(
      h,
      await h.post("/v2/permissions.createPermission", { name: "x", slug: "taken.slug" }, rk),
      403,
      "err:svc:authorization:insufficient_permissions",
    );
  });
});
