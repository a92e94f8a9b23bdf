// keys.setRoles request rules: keyId as everywhere; roles
// required, [0..100] names (`[]` allowed), each [1..128] characters.
import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

const PATH = "/v2/keys.setRoles";
const KEY = "key_doesnotexist0000";

describe("keys.setRoles 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", { roles: [] }, "keyId"],
    ["keyId empty", { keyId: "", roles: [] }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke", roles: [] }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256), roles: [] }, "keyId"],
    ["keyId with a slash", { keyId: "key/1", roles: [] }, "keyId"],
    ["roles null", { keyId: KEY, roles: null }, "roles"],
    ["roles a string", { keyId: KEY, roles: "admin" }, "roles"],
    ["101 roles", { keyId: KEY, roles: Array.from({ length: 101 }, (_, i) => `role_${i}`) }, "roles"],
    ["an empty name", { keyId: KEY, roles: ["admin", ""] }, "roles[1]"],
    ["a name of 129 characters", { keyId: KEY, roles: ["r".repeat(129)] }, "roles[0]"],
    ["a name that is a number", { keyId: KEY, roles: [1] }, "roles[0]"],
    ["an unknown field", { keyId: KEY, roles: [], permissions: [] }, "permissions"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(PATH, body, await admin(h)), field);
  });
});
