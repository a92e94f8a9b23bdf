import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("apis.getApi 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["apiId missing", {}, "apiId"],
    ["apiId empty", { apiId: "" }, "apiId"],
    ["apiId of 2 characters", { apiId: "ab" }, "apiId"],
    ["apiId with a hyphen", { apiId: "api-123" }, "apiId"],
    ["apiId not a string", { apiId: 123 }, "apiId"],
    ["an unknown field", { apiId: "api_123", name: "x" }, "name"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/apis.getApi", body, await admin(h)), field);
  });
});
