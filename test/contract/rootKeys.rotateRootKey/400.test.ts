import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, listRootKeys, withoutLastUse } from "../rootKeys.createRootKey/support.js";
import { admin, expectInvalid } from "../shared/helpers.js";

const path = "/v2/rootKeys.rotateRootKey";

describe("rootKeys.rotateRootKey 400", () => {
  const h = useHarness();

  it.each<[string, Record<string, unknown>, string]>([
    ["keyId missing", { keyId: undefined }, "body.keyId"],
    ["keyId empty", { keyId: "" }, "body.keyId"],
    ["keyId of 49 characters", { keyId: `key_${"x".repeat(45)}` }, "body.keyId"],
    ["keyId not a string", { keyId: ["key_1"] }, "body.keyId"],
    ["gracePeriodMs missing", { gracePeriodMs: undefined }, "body.gracePeriodMs"],
    ["gracePeriodMs negative", { gracePeriodMs: -1 }, "body.gracePeriodMs"],
    ["gracePeriodMs over 30 days", { gracePeriodMs: 2_592_000_001 }, "body.gracePeriodMs"],
    ["gracePeriodMs as a string", { gracePeriodMs: "1000" }, "body.gracePeriodMs"],
    ["gracePeriodMs not an integer", { gracePeriodMs: 1.5 }, "body.gracePeriodMs"],
    ["gracePeriodMs null", { gracePeriodMs: null }, "body.gracePeriodMs"],
    ["an unknown field", { name: "new name" }, "body.name"],
  ])("%s -> 400 naming the field, and nothing is rotated", async (_label, fields, field) => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const before = withoutLastUse(await listRootKeys(h));
    const body = JSON.parse(JSON.stringify({ keyId, gracePeriodMs: 1000, ...fields }));
    expectInvalid(h, await h.post(path, body, await admin(h)), field);
    expect(withoutLastUse(await listRootKeys(h))).toEqual(before);
  });
});
