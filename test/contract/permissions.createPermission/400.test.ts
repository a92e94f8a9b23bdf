import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid, expectOk } from "../shared/helpers.js";

describe("permissions.createPermission 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["name missing", { slug: "a.b" }, "name"],
    ["name empty", { name: "", slug: "a.b" }, "name"],
    ["name of 513 characters", { name: "n".repeat(513), slug: "a.b" }, "name"],
    ["name not a string", { name: 5, slug: "a.b" }, "name"],
    ["name null", { name: null, slug: "a.b" }, "name"],
    ["slug missing", { name: "n" }, "slug"],
    ["slug empty", { name: "n", slug: "" }, "slug"],
    ["slug of 129 characters", { name: "n", slug: "s".repeat(129) }, "slug"],
    ["slug with a space", { name: "n", slug: "a b" }, "slug"],
    ["slug with a trailing space", { name: "n", slug: "a.b " }, "slug"],
    ["slug with a slash", { name: "n", slug: "a/b" }, "slug"],
    ["slug with a percent sign", { name: "n", slug: "a%b" }, "slug"],
    ["slug with a non-ASCII letter", { name: "n", slug: "café.read" }, "slug"],
    ["slug with a line break", { name: "n", slug: "a.b\n" }, "slug"],
    ["slug not a string", { name: "n", slug: ["a.b"] }, "slug"],
    ["description of 513 characters", { name: "n", slug: "a.b", description: "d".repeat(513) }, "description"],
    ["description not a string", { name: "n", slug: "a.b", description: 1 }, "description"],
    ["description null", { name: "n", slug: "a.b", description: null }, "description"],
    ["an unknown field", { name: "n", slug: "a.b", permissionId: "perm_x" }, "permissionId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.createPermission", body, await admin(h)), field);
  });

  it("names every offending field at once", async () => {
    const res = await h.post("/v2/permissions.createPermission", { name: "", slug: "a b", description: "d".repeat(513) }, await admin(h));
    for (const field of ["name", "slug", "description"]) expectInvalid(h, res, field);
  });

  it("validates before it checks the permission, and creates nothing", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expect((await h.post("/v2/permissions.createPermission", { name: "n", slug: "bad slug" }, rk)).status).toBe(400);
    const list = expectOk(await h.post("/v2/permissions.listPermissions", {}, await admin(h)), { pagination: true });
    expect(list).toEqual([]);
  });
});
