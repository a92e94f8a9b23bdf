import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("keys.deleteKey 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", {}, "keyId"],
    ["keyId empty", { keyId: "" }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke" }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256) }, "keyId"],
    ["keyId with a slash", { keyId: "key/1" }, "keyId"],
    ["permanent as a string", { keyId: "key_123", permanent: "yes" }, "permanent"],
    ["permanent null", { keyId: "key_123", permanent: null }, "permanent"],
    ["an unknown field", { keyId: "key_123", force: true }, "force"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/keys.deleteKey", body, await admin(h)), field);
  });
});
