import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, listed } from "../rootKeys.createRootKey/support.js";
import { admin, expectInvalid } from "../shared/helpers.js";

const path = "/v2/rootKeys.updateRootKey";

describe("rootKeys.updateRootKey 400", () => {
  const h = useHarness();

  it.each<[string, Record<string, unknown>, string]>([
    ["keyId missing", { keyId: undefined }, "body.keyId"],
    ["keyId empty", { keyId: "" }, "body.keyId"],
    ["keyId of 49 characters", { keyId: `key_${"x".repeat(45)}` }, "body.keyId"],
    ["keyId not a string", { keyId: 42 }, "body.keyId"],
    ["name of 257 characters", { name: "n".repeat(257) }, "body.name"],
    ["name not a string", { name: false }, "body.name"],
    ["permissions empty (a root key always holds a grant)", { permissions: [] }, "body.permissions"],
    ["permissions not an array", { permissions: "apis.*.read_api" }, "body.permissions"],
    ["permissions null", { permissions: null }, "body.permissions"],
    ["1,001 permissions", { permissions: Array.from({ length: 1001 }, (_, i) => `apis.api_${i}.read_api`) }, "body.permissions"],
    ["a grant with a space", { permissions: ["apis.*.read_api", "apis.*.read key"] }, "body.permissions[1]"],
    ["an empty grant", { permissions: [""] }, "body.permissions[0]"],
    ["a grant of 257 characters", { permissions: [`apis.*.${"r".repeat(250)}`] }, "body.permissions[0]"],
    ["enabled not a boolean", { enabled: "false" }, "body.enabled"],
    ["enabled null", { enabled: null }, "body.enabled"],
    ["expires in the past", { expires: Date.now() - 60_000 }, "body.expires"],
    ["expires negative", { expires: -1 }, "body.expires"],
    ["expires as a string", { expires: "0" }, "body.expires"],
    ["an unknown field", { keyId: "key_x", roles: [] }, "body.roles"],
  ])("%s -> 400 naming the field, and the root key is unchanged", async (_label, fields, field) => {
    const { keyId } = await createRootKey(h, { name: "unchanged", permissions: ["apis.*.read_api"] });
    const before = await listed(h, keyId);
    const body = JSON.parse(JSON.stringify({ keyId, ...fields }));
    expectInvalid(h, await h.post(path, body, await admin(h)), field);
    expect(await listed(h, keyId)).toEqual(before);
  });
});
