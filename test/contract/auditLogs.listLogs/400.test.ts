import { describe, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectInvalid } from "../shared/helpers.js";

describe("auditLogs.listLogs 400", () => {
  const h = useHarness();

  it.each<[string, unknown, string]>([
    ["limit 0", { limit: 0 }, "body.limit"],
    ["limit 101", { limit: 101 }, "body.limit"],
    ["limit as a string", { limit: "10" }, "body.limit"],
    ["limit not an integer", { limit: 1.5 }, "body.limit"],
    ["cursor empty", { cursor: "" }, "body.cursor"],
    ["cursor of 1,025 characters", { cursor: "c".repeat(1025) }, "body.cursor"],
    ["a cursor this operation never returned", { cursor: "not-a-cursor" }, "body.cursor"],
    ["a cursor that is base64 of something else", { cursor: Buffer.from("hello.world").toString("base64url") }, "body.cursor"],
    ["cursor not a string", { cursor: 12 }, "body.cursor"],
    ["start negative", { start: -1 }, "body.start"],
    ["start as a string", { start: "1700000000000" }, "body.start"],
    ["end negative", { end: -5 }, "body.end"],
    ["end not an integer", { end: 1.25 }, "body.end"],
    ["start after end", { start: 2_000, end: 1_000 }, "body.start"],
    ["actorId empty", { actorId: "" }, "body.actorId"],
    ["actorId of 65 characters", { actorId: "a".repeat(65) }, "body.actorId"],
    ["resourceId empty", { resourceId: "" }, "body.resourceId"],
    ["resourceId of 257 characters", { resourceId: "r".repeat(257) }, "body.resourceId"],
    ["actions not an array", { actions: "api.create" }, "body.actions"],
    ["51 actions", { actions: Array.from({ length: 51 }, () => "api.create") }, "body.actions"],
    ["an action that is not `group.verb`", { actions: ["Api.Create"] }, "body.actions[0]"],
    ["an empty action", { actions: ["api.create", ""] }, "body.actions[1]"],
    ["an action that is not a string", { actions: [1] }, "body.actions[0]"],
    // Well-formed but not an action the log holds: refused rather than silently matching nothing.
    ["an unknown action", { actions: ["api.explode"] }, "body.actions[0]"],
    ["an unknown action after a known one", { actions: ["api.create", "key.teleport"] }, "body.actions[1]"],
    ["an unknown field", { workspaceId: "ws_other" }, "body.workspaceId"],
    ["a misspelt filter", { action: ["api.create"] }, "body.action"],
    ["a JSON array", [], "body"],
  ])("%s -> 400 naming the field", async (_label, body, field) => {
    expectInvalid(h, await h.post("/v2/auditLogs.listLogs", body, await admin(h)), field);
  });
});
