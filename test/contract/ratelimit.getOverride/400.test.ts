import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("ratelimit.getOverride 400", () => {
  const h = useHarness();
  const ok = { namespaceId: "ns_400", identifier: "user" };

  it.each<[string, Record<string, unknown>, string]>([
    ["no namespace field at all", { namespaceId: undefined }, "namespace"],
    ["namespace empty", { namespaceId: "" }, "namespace"],
    ["namespace of 513 characters", { namespaceId: "n".repeat(513) }, "namespace"],
    ["namespaceId and namespaceName together", { namespaceName: "other" }, "namespace"],
    ["identifier missing", { identifier: undefined }, "identifier"],
    ["identifier empty", { identifier: "" }, "identifier"],
    ["identifier of 513 characters", { identifier: "i".repeat(513) }, "identifier"],
    ["identifier not a string", { identifier: ["a"] }, "identifier"],
    ["an unknown field", { limit: 1 }, "limit"],
  ])("%s -> 400 naming the field", async (_label, fields, field) => {
    expectInvalid(h, await h.post("/v2/ratelimit.getOverride", { ...ok, ...fields }, await admin(h)), field);
  });
});
