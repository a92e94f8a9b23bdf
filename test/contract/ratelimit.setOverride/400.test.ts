import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("ratelimit.setOverride 400", () => {
  const h = useHarness();
  const ok = { namespaceId: "ns_400", identifier: "user", limit: 10, duration: 60_000 };

  it.each<[string, Record<string, unknown>, string]>([
    ["no namespace field at all", { namespaceId: undefined }, "namespace"],
    ["namespace empty", { namespaceId: "" }, "namespace"],
    ["namespace of 513 characters", { namespaceId: "n".repeat(513) }, "namespace"],
    ["two namespace spellings at once", { namespace: "ns_400" }, "namespace"],
    ["namespace not a string", { namespaceId: 5 }, "namespace"],
    ["identifier empty", { identifier: "" }, "identifier"],
    ["identifier missing", { identifier: undefined }, "identifier"],
    ["identifier of 513 characters", { identifier: "i".repeat(513) }, "identifier"],
    ["negative limit", { limit: -1 }, "limit"],
    ["limit as a string", { limit: "1" }, "limit"],
    ["limit beyond 2^53", { limit: 2 ** 60 }, "limit"],
    ["duration below 1000 ms", { duration: 999 }, "duration"],
    ["duration missing", { duration: undefined }, "duration"],
    ["duration null", { duration: null }, "duration"],
    ["an unknown field", { cost: 1 }, "cost"],
  ])("%s -> 400 naming the field", async (_label, fields, field) => {
    expectInvalid(h, await h.post("/v2/ratelimit.setOverride", { ...ok, ...fields }, await admin(h)), field);
  });
});
