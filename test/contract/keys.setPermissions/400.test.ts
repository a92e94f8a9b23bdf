// keys.setPermissions request rules: keyId as everywhere;
// permissions required, `[]` allowed; each slug [1..128] with the slug pattern.
// Unkey sets no item limit here; keyhold keeps addPermissions' 1000.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectInvalid, expectOk, getKey } from "../shared/helpers.js";

const PATH = "/v2/keys.setPermissions";
const KEY = "key_doesnotexist0000";

describe("keys.setPermissions 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", { permissions: ["a.b"] }, "keyId"],
    ["keyId empty", { keyId: "", permissions: [] }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke", permissions: [] }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256), permissions: [] }, "keyId"],
    ["keyId with a dot", { keyId: "key.1", permissions: [] }, "keyId"],
    ["permissions null", { keyId: KEY, permissions: null }, "permissions"],
    ["permissions a string", { keyId: KEY, permissions: "a.b" }, "permissions"],
    ["permissions an object", { keyId: KEY, permissions: {} }, "permissions"],
    ["1001 permissions", { keyId: KEY, permissions: Array.from({ length: 1001 }, (_, i) => `p.${i}`) }, "permissions"],
    ["an empty slug", { keyId: KEY, permissions: [""] }, "permissions[0]"],
    ["a slug of 129 characters", { keyId: KEY, permissions: ["p".repeat(129)] }, "permissions[0]"],
    ["a slug with a space", { keyId: KEY, permissions: ["ok", "not ok"] }, "permissions[1]"],
    ["a slug with a slash", { keyId: KEY, permissions: ["a/b"] }, "permissions[0]"],
    ["a slug that is a number", { keyId: KEY, permissions: [1] }, "permissions[0]"],
    ["an unknown field", { keyId: KEY, permissions: [], replace: true }, "replace"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(PATH, body, await admin(h)), field);
  });

  it("a bad item rejects the whole request: the key keeps its permissions", async () => {
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["keep.me"] });
    expectInvalid(h, await h.post(PATH, { keyId, permissions: ["other", "bad slug"] }, await admin(h)), "permissions[1]");
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual(["keep.me"]);
  });
});
