import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("ratelimit.listOverrides 400", () => {
  const h = useHarness();

  it.each<[string, Record<string, unknown>, string]>([
    ["no namespace field at all", {}, "namespace"],
    ["namespace empty", { namespaceId: "" }, "namespace"],
    ["namespace of 513 characters", { namespaceId: "n".repeat(513) }, "namespace"],
    ["limit 0", { namespaceId: "ns", limit: 0 }, "limit"],
    ["limit 101", { namespaceId: "ns", limit: 101 }, "limit"],
    ["limit as a string", { namespaceId: "ns", limit: "5" }, "limit"],
    ["cursor empty", { namespaceId: "ns", cursor: "" }, "cursor"],
    ["cursor of 1025 characters", { namespaceId: "ns", cursor: "c".repeat(1025) }, "cursor"],
    ["an unknown field", { namespaceId: "ns", identifier: "x" }, "identifier"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/ratelimit.listOverrides", body, await admin(h)), field);
  });
});
