import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, send } from "../shared/helpers.js";

const ROUTE = "err:svc:data:route_not_found";

describe("unknown routes -> 404 envelope", () => {
  const h = useHarness();

  it.each([
    ["an unknown operation of a known group", "/v2/keys.doesNotExist"],
    ["an unknown group", "/v2/widgets.createWidget"],
    ["another version", "/v1/keys.createKey"],
    ["the wrong case", "/v2/keys.createkey"],
    ["a trailing slash", "/v2/keys.createKey/"],
    ["the root", "/"],
  ])("POST %s (%s) -> 404 route_not_found, with or without a root key", async (_label, url) => {
    const withKey = await h.post(url, {}, await admin(h));
    expectError(h, withKey, 404, ROUTE);
    expect(withKey.body.error.title).toBe("Not Found");
    expectError(h, await h.post(url, {}), 404, ROUTE);
  });

  it("GET on an unknown path -> 404 envelope", async () => {
    expectError(h, await send(h, { method: "GET", url: "/v2/nothing/here?x=1" }), 404, ROUTE);
  });
});
