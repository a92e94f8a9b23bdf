import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";
import { GRANT, listRootKeys } from "./support.js";

const ok = ["apis.*.read_api"];

describe("rootKeys.createRootKey 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["permissions missing", {}, "body.permissions"],
    ["permissions empty", { permissions: [] }, "body.permissions"],
    ["permissions not an array", { permissions: "apis.*.read_api" }, "body.permissions"],
    ["permissions null", { permissions: null }, "body.permissions"],
    ["1,001 permissions", { permissions: Array.from({ length: 1001 }, (_, i) => `apis.api_${i}.read_api`) }, "body.permissions"],
    ["a grant with a space", { permissions: ["apis.* .read_api"] }, "body.permissions[0]"],
    ["a grant with a slash, second in the list", { permissions: ["apis.*.read_api", "apis/*/read_api"] }, "body.permissions[1]"],
    ["an empty grant", { permissions: [""] }, "body.permissions[0]"],
    ["a grant of 257 characters", { permissions: [`apis.*.${"r".repeat(250)}`] }, "body.permissions[0]"],
    ["a grant that is a number", { permissions: [42] }, "body.permissions[0]"],
    ["name of 257 characters", { permissions: ok, name: "n".repeat(257) }, "body.name"],
    ["name not a string", { permissions: ok, name: 7 }, "body.name"],
    ["name null", { permissions: ok, name: null }, "body.name"],
    ["expires in the past", { permissions: ok, expires: Date.now() - 60_000 }, "body.expires"],
    ["expires 0", { permissions: ok, expires: 0 }, "body.expires"],
    ["expires negative", { permissions: ok, expires: -1 }, "body.expires"],
    ["expires as a string", { permissions: ok, expires: String(Date.now() + 60_000) }, "body.expires"],
    ["expires not an integer", { permissions: ok, expires: Date.now() + 60_000.5 }, "body.expires"],
    ["expires null", { permissions: ok, expires: null }, "body.expires"],
    ["an unknown field", { permissions: ok, roles: ["admin"] }, "body.roles"],
    ["a misspelt field", { permisions: ok }, "body.permisions"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/rootKeys.createRootKey", body, await admin(h)), field);
  });

  it("a body that is not an object -> 400", async () => {
    expectInvalid(h, await h.post("/v2/rootKeys.createRootKey", [GRANT.create], await admin(h)), "body");
  });

  it("names every offending field at once, and creates nothing", async () => {
    const before = (await listRootKeys(h)).length;
    const res = await h.post("/v2/rootKeys.createRootKey", { name: "n".repeat(257), permissions: ["ok.grant", "not ok"] }, await admin(h));
    expectInvalid(h, res, "body.name");
    expectInvalid(h, res, "body.permissions[1]");
    expect((await listRootKeys(h)).length).toBe(before);
  });
});
