// keys.removePermissions request rules: keyId as everywhere;
// permissions [1..1000] items, each [1..128] with the slug pattern. The body is
// checked before the key is looked up, so these keyIds need not exist.
import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectInvalid, expectOk, getKey } from "../shared/helpers.js";

const PATH = "/v2/keys.removePermissions";
const KEY = "key_doesnotexist0000";

describe("keys.removePermissions 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["keyId missing", { permissions: ["a.b"] }, "keyId"],
    ["keyId empty", { keyId: "", permissions: ["a.b"] }, "keyId"],
    ["keyId of 2 characters", { keyId: "ke", permissions: ["a.b"] }, "keyId"],
    ["keyId of 256 characters", { keyId: "k".repeat(256), permissions: ["a.b"] }, "keyId"],
    ["keyId with a space", { keyId: "key 1", permissions: ["a.b"] }, "keyId"],
    ["permissions missing", { keyId: KEY }, "permissions"],
    ["permissions empty", { keyId: KEY, permissions: [] }, "permissions"],
    ["permissions null", { keyId: KEY, permissions: null }, "permissions"],
    ["permissions a string", { keyId: KEY, permissions: "a.b" }, "permissions"],
    ["1001 permissions", { keyId: KEY, permissions: Array.from({ length: 1001 }, (_, i) => `p.${i}`) }, "permissions"],
    ["an empty slug", { keyId: KEY, permissions: [""] }, "permissions[0]"],
    ["a slug of 129 characters", { keyId: KEY, permissions: ["a.b", "p".repeat(129)] }, "permissions[1]"],
    ["a slug with a space", { keyId: KEY, permissions: ["a b"] }, "permissions[0]"],
    ["a slug with a quote", { keyId: KEY, permissions: ["a'b"] }, "permissions[0]"],
    ["a slug that is a boolean", { keyId: KEY, permissions: [true] }, "permissions[0]"],
    ["an unknown field", { keyId: KEY, permissions: ["a.b"], permanent: true }, "permanent"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post(PATH, body, await admin(h)), field);
  });

  it("a bad item rejects the whole request: nothing is removed", async () => {
    const { keyId } = await createKey(h, await createApi(h), { permissions: ["keep.me"] });
    expectInvalid(h, await h.post(PATH, { keyId, permissions: ["keep.me", "bad slug"] }, await admin(h)), "permissions[1]");
    expect(expectOk(await getKey(h, keyId)).permissions).toEqual(["keep.me"]);
  });
});
