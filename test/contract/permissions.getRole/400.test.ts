import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("permissions.getRole 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["role missing", {}, "role"],
    ["role empty", { role: "" }, "role"],
    ["role of 129 characters", { role: "r".repeat(129) }, "role"],
    ["role not a string", { role: 12 }, "role"],
    ["role null", { role: null }, "role"],
    ["role an array", { role: ["admin"] }, "role"],
    ["an unknown field", { role: "admin", name: "admin" }, "name"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.getRole", body, await admin(h)), field);
  });

  it("validates before it checks the permission", async () => {
    const rk = await h.rootKey(["rbac.*.read_permission"]);
    expect((await h.post("/v2/permissions.getRole", { role: "" }, rk)).status).toBe(400);
  });
});
