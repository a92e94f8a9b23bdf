import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("permissions.listRoles 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["limit 0", { limit: 0 }, "limit"],
    ["limit 101", { limit: 101 }, "limit"],
    ["limit negative", { limit: -1 }, "limit"],
    ["limit as a string", { limit: "10" }, "limit"],
    ["limit fractional", { limit: 2.5 }, "limit"],
    ["limit null", { limit: null }, "limit"],
    ["cursor empty", { cursor: "" }, "cursor"],
    ["cursor of 1025 characters", { cursor: "c".repeat(1025) }, "cursor"],
    ["search of 257 characters", { search: "s".repeat(257) }, "search"],
    ["search not a string", { search: 1 }, "search"],
    ["an unknown field", { role: "x" }, "role"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.listRoles", body, await admin(h)), field);
  });
});
