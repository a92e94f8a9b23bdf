import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("permissions.deleteRole 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["role missing", {}, "role"],
    ["role empty", { role: "" }, "role"],
    ["role of 129 characters", { role: "r".repeat(129) }, "role"],
    ["role not a string", { role: false }, "role"],
    ["role null", { role: null }, "role"],
    ["an unknown field", { role: "admin", force: true }, "force"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.deleteRole", body, await admin(h)), field);
  });

  it("validates before it checks the permission", async () => {
    const rk = await h.rootKey(["rbac.*.read_role"]);
    expect((await h.post("/v2/permissions.deleteRole", { role: "" }, rk)).status).toBe(400);
  });
});
