import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("rootKeys.deleteRootKey 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", {}, "body.keyId"],
    ["keyId empty", { keyId: "" }, "body.keyId"],
    ["keyId of 49 characters", { keyId: `key_${"x".repeat(45)}` }, "body.keyId"],
    ["keyId not a string", { keyId: 7 }, "body.keyId"],
    ["keyId null", { keyId: null }, "body.keyId"],
    ["an unknown field", { keyId: "key_doesnotexist0000", permanent: true }, "body.permanent"],
    ["a JSON array", ["key_doesnotexist0000"], "body"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/rootKeys.deleteRootKey", body, await admin(h)), field);
  });
});
