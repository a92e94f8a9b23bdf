import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("apis.createApi 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["name missing", {}, "name"],
    ["name empty", { name: "" }, "name"],
    ["name of 2 characters", { name: "ab" }, "name"],
    ["name of 257 characters", { name: "n".repeat(257) }, "name"],
    ["name not a string", { name: 12345 }, "name"],
    ["name null", { name: null }, "name"],
    ["an unknown field", { name: "valid-name", color: "blue" }, "color"],
    ["a body that is an array", [{ name: "valid-name" }], "body"],
  ])("%s -> 400 invalid_input naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/apis.createApi", body, await admin(h)), field);
  });

  it("invalid JSON -> 400 invalid_input", async () => {
    expectInvalid(h, await h.post("/v2/apis.createApi", '{"name": ', await admin(h)), "body");
  });
});
