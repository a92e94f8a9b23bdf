import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("permissions.deletePermission 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["permission missing", {}, "permission"],
    ["permission empty", { permission: "" }, "permission"],
    ["permission of 129 characters", { permission: "p".repeat(129) }, "permission"],
    ["permission with a space", { permission: "a b" }, "permission"],
    ["permission with a slash", { permission: "a/b" }, "permission"],
    ["permission not a string", { permission: true }, "permission"],
    ["permission null", { permission: null }, "permission"],
    ["an unknown field", { permission: "a.b", cascade: true }, "cascade"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.deletePermission", body, await admin(h)), field);
  });

  it("validates before it checks the permission", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expect((await h.post("/v2/permissions.deletePermission", { permission: "a b" }, rk)).status).toBe(400);
  });
});
