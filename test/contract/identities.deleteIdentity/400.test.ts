import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("identities.deleteIdentity 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["identity missing", {}, "identity"],
    ["identity empty", { identity: "" }, "identity"],
    ["identity not a string", { identity: { id: "x" } }, "identity"],
    ["an unknown field", { identity: "x", permanent: true }, "permanent"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/identities.deleteIdentity", body, await admin(h)), field);
  });
});
