import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectInvalid } from "../shared/helpers.js";

describe("permissions.createRole 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["name missing", {}, "name"],
    ["name empty", { name: "" }, "name"],
    ["name of 129 characters", { name: "n".repeat(129) }, "name"],
    ["name of 129 emoji", { name: "🔑".repeat(129) }, "name"],
    // The collation ignores trailing spaces, so `admin ` would be the role `admin`.
    ["name with a trailing space", { name: "admin " }, "name"],
    ["name of one space", { name: " " }, "name"],
    ["name not a string", { name: 7 }, "name"],
    ["name null", { name: null }, "name"],
    ["description of 513 characters", { name: "r", description: "d".repeat(513) }, "description"],
    ["description not a string", { name: "r", description: {} }, "description"],
    ["description null", { name: "r", description: null }, "description"],
    ["permissions not an array", { name: "r", permissions: "docs.read" }, "permissions"],
    ["permissions null", { name: "r", permissions: null }, "permissions"],
    ["a permission that is empty", { name: "r", permissions: ["docs.read", ""] }, "permissions[1]"],
    ["a permission of 129 characters", { name: "r", permissions: ["p".repeat(129)] }, "permissions[0]"],
    ["a permission with a space", { name: "r", permissions: ["docs read"] }, "permissions[0]"],
    ["a permission with a trailing space", { name: "r", permissions: ["docs.read "] }, "permissions[0]"],
    ["a permission with a slash", { name: "r", permissions: ["ok.one", "docs/read"] }, "permissions[1]"],
    ["a permission not a string", { name: "r", permissions: [1] }, "permissions"],
    ["1001 permissions", { name: "r", permissions: Array.from({ length: 1001 }, (_, i) => `p.${i}`) }, "permissions"],
    ["an unknown field", { name: "r", roleId: "role_x" }, "roleId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.createRole", body, await admin(h)), field);
  });

  it("names every offending field at once", async () => {
    const res = await h.post("/v2/permissions.createRole", { name: "x ", description: "d".repeat(513), permissions: ["a b"] }, await admin(h));
    for (const field of ["name", "description", "permissions[0]"]) expectInvalid(h, res, field);
  });

  it("validates before it checks the permission, and creates nothing", async () => {
    const rk = await h.rootKey(["rbac.*.read_role"]);
    expect((await h.post("/v2/permissions.createRole", { name: "ok", permissions: ["fine.slug", "bad slug"] }, rk)).status).toBe(400);
    const res = await h.post("/v2/permissions.getPermission", { permission: "fine.slug" }, await admin(h));
    expectError(h, res, 404, "err:svc:data:permission_not_found");
  });
});
