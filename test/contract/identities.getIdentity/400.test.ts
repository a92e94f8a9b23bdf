import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("identities.getIdentity 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["identity missing", {}, "identity"],
    ["identity empty", { identity: "" }, "identity"],
    ["identity not a string", { identity: 1 }, "identity"],
    ["identity null", { identity: null }, "identity"],
    ["an unknown field", { identity: "x", externalId: "x" }, "externalId"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/identities.getIdentity", body, await admin(h)), field);
  });
});
