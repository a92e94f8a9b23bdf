// keys.addRoles request rules: keyId as everywhere; roles
// [1..100] names, each [1..128] characters. The body is checked before the key
// is looked up, so these keyIds need not exist.
import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

const PATH = "/v2/keys.addRoles";
const KEY = "key_doesnotexist0000";

describe("keys.addRoles 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", { roles: ["admin"] }, "keyId"],
    ["keyId empty", { keyId: "", roles: ["admin"] }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke", roles: ["admin"] }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256), roles: ["admin"] }, "keyId"],
    ["keyId with a slash", { keyId: "key/1", roles: ["admin"] }, "keyId"],
    ["roles missing", { keyId: KEY }, "roles"],
    ["roles empty", { keyId: KEY, roles: [] }, "roles"],
    ["roles null", { keyId: KEY, roles: null }, "roles"],
    ["roles a string", { keyId: KEY, roles: "admin" }, "roles"],
    ["101 roles", { keyId: KEY, roles: Array.from({ length: 101 }, (_, i) => `role_${i}`) }, "roles"],
    ["an empty name", { keyId: KEY, roles: ["admin", ""] }, "roles[1]"],
    ["a name of 129 characters", { keyId: KEY, roles: ["r".repeat(129)] }, "roles[0]"],
    ["a name that is a number", { keyId: KEY, roles: [7] }, "roles[0]"],
    ["a name that is an object", { keyId: KEY, roles: [{ name: "admin" }] }, "roles[0]"],
    ["an unknown field", { keyId: KEY, roles: ["admin"], permissions: ["a"] }, "permissions"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(PATH, body, await admin(h)), field);
  });
});
