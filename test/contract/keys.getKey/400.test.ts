import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("keys.getKey 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", {}, "keyId"],
    ["keyId empty", { keyId: "" }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke" }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256) }, "keyId"],
    ["keyId with a hyphen", { keyId: "key-123" }, "keyId"],
    ["keyId not a string", { keyId: 1 }, "keyId"],
    ["decrypt as a string", { keyId: "key_123", decrypt: "true" }, "decrypt"],
    ["an unknown field", { keyId: "key_123", apiId: "api_123" }, "apiId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/keys.getKey", body, await admin(h)), field);
  });
});
