import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("keys.whoami 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["key missing", {}, "key"],
    ["key empty", { key: "" }, "key"],
    ["key of 513 characters", { key: "k".repeat(513) }, "key"],
    ["key not a string", { key: 7 }, "key"],
    ["an unknown field", { key: "sk_123", keyId: "key_123" }, "keyId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/keys.whoami", body, await admin(h)), field);
  });
});
