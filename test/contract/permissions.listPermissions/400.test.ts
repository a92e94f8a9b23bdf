import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("permissions.listPermissions 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["limit 0", { limit: 0 }, "limit"],
    ["limit 101", { limit: 101 }, "limit"],
    ["limit negative", { limit: -5 }, "limit"],
    ["limit as a string", { limit: "10" }, "limit"],
    ["limit fractional", { limit: 1.5 }, "limit"],
    ["limit beyond int32", { limit: 2 ** 40 }, "limit"],
    ["cursor empty", { cursor: "" }, "cursor"],
    ["cursor of 1025 characters", { cursor: "c".repeat(1025) }, "cursor"],
    ["cursor not a string", { cursor: 5 }, "cursor"],
    ["search of 257 characters", { search: "s".repeat(257) }, "search"],
    ["search not a string", { search: ["a"] }, "search"],
    ["an unknown field", { permission: "x" }, "permission"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/permissions.listPermissions", body, await admin(h)), field);
  });
});
