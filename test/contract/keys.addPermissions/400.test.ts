// keys.addPermissions request rules: keyId [3..255] `^[a-zA-Z0-9_]+$`;
// permissions [1..1000] items, each [1..128] matching `^[a-zA-Z0-9_:\-\.\*]+$`.
// The body is checked before the key is looked up, so these keyIds need not exist.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectInvalid, expectOk, getKey } from "../shared/helpers.js";

const PATH = "/v2/keys.addPermissions";
const KEY = "key_doesnotexist0000";

describe("keys.addPermissions 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", { permissions: ["a.b"] }, "keyId"],
    ["keyId empty", { keyId: "", permissions: ["a.b"] }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke", permissions: ["a.b"] }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256), permissions: ["a.b"] }, "keyId"],
    ["keyId with a dash", { keyId: "key-1", permissions: ["a.b"] }, "keyId"],
    ["keyId a number", { keyId: 123, permissions: ["a.b"] }, "keyId"],
    ["permissions missing", { keyId: KEY }, "permissions"],
    ["permissions empty", { keyId: KEY, permissions: [] }, "permissions"],
    ["permissions null", { keyId: KEY, permissions: null }, "permissions"],
    ["permissions a string", { keyId: KEY, permissions: "a.b" }, "permissions"],
    ["permissions an object", { keyId: KEY, permissions: { slug: "a.b" } }, "permissions"],
    ["1001 permissions", { keyId: KEY, permissions: Array.from({ length: 1001 }, (_, i) => `p.${i}`) }, "permissions"],
    ["an empty slug", { keyId: KEY, permissions: ["a.b", ""] }, "permissions[1]"],
    ["a slug of 129 characters", { keyId: KEY, permissions: ["p".repeat(129)] }, "permissions[0]"],
    ["a slug with a space", { keyId: KEY, permissions: ["a b"] }, "permissions[0]"],
    ["a slug with a slash", { keyId: KEY, permissions: ["a/b"] }, "permissions[0]"],
    ["a slug with a non-ASCII letter", { keyId: KEY, permissions: ["café.read"] }, "permissions[0]"],
    ["a slug that is a number", { keyId: KEY, permissions: [42] }, "permissions[0]"],
    ["a slug that is null", { keyId: KEY, permissions: [null] }, "permissions[0]"],
    ["an unknown field", { keyId: KEY, permissions: ["a.b"], roles: ["x"] }, "roles"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(PATH, body, await admin(h)), field);
  });

  it("a bad item anywhere rejects the whole request: nothing is attached or created", async () => {
    const apiId = await createApi(h);
    const { keyId } = await createKey(h, apiId);
    const good = "only.if.valid";
    expectInvalid(h, await h.post(PATH, { keyId, permissions: [good, "bad slug"] }, await admin(h)), "permissions[1]");
    expect(expectOk(await getKey(h, keyId)).permissions).toBeUndefined();
    const [rows] = await h.db.pool.query("SELECT id FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, good]);
    expect(rows).toEqual([]);
  });
});
