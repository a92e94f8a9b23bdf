import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("apis.deleteApi 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["apiId missing", {}, "apiId"],
    ["apiId of 2 characters", { apiId: "ab" }, "apiId"],
    ["apiId with a space", { apiId: "api 1" }, "apiId"],
    ["apiId not a string", { apiId: ["api_1"] }, "apiId"],
    ["an unknown field", { apiId: "api_123", permanent: true }, "permanent"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/apis.deleteApi", body, await admin(h)), field);
  });
});
