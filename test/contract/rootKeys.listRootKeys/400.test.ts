import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("rootKeys.listRootKeys 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["an unknown field", { limit: 10 }, "body.limit"],
    ["a workspaceId (the workspace is the caller's)", { workspaceId: "ws_x" }, "body.workspaceId"],
    ["a JSON array", [], "body"],
    ["a JSON string", '"list"', "body"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/rootKeys.listRootKeys", body, await admin(h)), field);
  });
});
