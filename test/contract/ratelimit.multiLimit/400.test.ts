import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("ratelimit.multiLimit 400", () => {
  const h = useHarness();
  const ok = { namespace: "ns_400", identifier: "user", limit: 10, duration: 60_000 };

  it.each<[string, unknown, string]>([
    ["an empty array", [], "limits"],
    ["101 checks", Array.from({ length: 101 }, () => ok), "limits"],
    ["an item that is not an object", [ok, 5], "limits[1]"],
    ["an item without identifier", [{ ...ok, identifier: undefined }], "limits[0].identifier"],
    ["an item with limit 0", [ok, { ...ok, limit: 0 }], "limits[1].limit"],
    ["an item with duration 999", [{ ...ok, duration: 999 }], "limits[0].duration"],
    ["an item with a negative cost", [{ ...ok, cost: -2 }], "limits[0].cost"],
    ["an item with an empty namespace", [{ ...ok, namespace: "" }], "limits[0].namespace"],
    ["an item with an unknown field", [{ ...ok, extra: 1 }], "extra"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/ratelimit.multiLimit", body, await admin(h)), field);
  });
});
