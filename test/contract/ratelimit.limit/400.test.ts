import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("ratelimit.limit 400", () => {
  const h = useHarness();
  const ok = { namespace: "ns_400", identifier: "user", limit: 10, duration: 60_000 };

  it.each<[string, Record<string, unknown>, string]>([
    ["namespace missing", { namespace: undefined }, "namespace"],
    ["namespace empty", { namespace: "" }, "namespace"],
    ["namespace of 513 characters", { namespace: "n".repeat(513) }, "namespace"],
    ["identifier missing", { identifier: undefined }, "identifier"],
    ["identifier empty", { identifier: "" }, "identifier"],
    ["identifier of 513 characters", { identifier: "i".repeat(513) }, "identifier"],
    ["identifier not a string", { identifier: 7 }, "identifier"],
    ["limit missing", { limit: undefined }, "limit"],
    ["limit 0", { limit: 0 }, "limit"],
    ["limit negative", { limit: -1 }, "limit"],
    ["limit as a string", { limit: "10" }, "limit"],
    ["limit fractional", { limit: 1.5 }, "limit"],
    ["limit beyond 2^53", { limit: 2 ** 60 }, "limit"],
    ["duration missing", { duration: undefined }, "duration"],
    ["duration 999", { duration: 999 }, "duration"],
    ["duration over 30 days", { duration: 2_592_000_001 }, "duration"],
    ["cost negative", { cost: -1 }, "cost"],
    ["cost null", { cost: null }, "cost"],
    ["an unknown field", { window: 5 }, "window"],
  ])("%s -> 400 naming the field", async (_label, fields, field) => {
    expectInvalid(h, await h.post("/v2/ratelimit.limit", { ...ok, ...fields }, await admin(h)), field);
  });
});
