// Which @unkey/api operations keyhold serves, and what the others get.
// The SDK's operations are read from its generated functions (one file per
// operation, each naming its path); keyhold's from its own route table.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { routeTable } from "../../src/gateway/plugin.js";
import { projectDir } from "../../src/paths.js";
import { services } from "../../src/server/registry.js";
import { expectUntypedError, useSdk } from "./support.js";

/** Every operation path of the installed SDK, e.g. "keys.verifyKey". */
function sdkOperations(): string[] {
  const dir = join(projectDir, "node_modules/@unkey/api/src/funcs");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".ts"))
    .map((f) => {
      const m = /pathToFunc\("\/v2\/([^"]+)"\)/.exec(readFileSync(join(dir, f), "utf8"));
      if (m?.[1] === undefined) throw new Error(`no path in ${f}`);
      return m[1];
    })
    .sort();
}

/** The SDK's operations in keyhold's groups (and analytics) that keyhold does not serve. */
// biome-ignore format: one operation per line, so serving one more is a one-line change
const UNSERVED_IN_SERVED_GROUPS = [
  "analytics.getGatewayRequests",
  "analytics.getRuntimeLogs",
];

/** Whole SDK groups outside keyhold's scope (Unkey's deploy platform, portal and gateway). */
const UNSERVED_GROUPS = ["apps", "deploy", "deployments", "domains", "environments", "gateway", "github", "portal", "projects"];

describe("@unkey/api operations keyhold does not serve", () => {
  const w = useSdk();
  const { h } = w;

  it("the SDK operations of keyhold's groups are all served except the listed ones", () => {
    const served = new Set(routeTable(services(h.deps)).map((r) => r.path));
    const sdk = sdkOperations();
    const unserved = sdk.filter((op) => !served.has(op));
    const groupOf = (op: string) => op.split(".")[0] ?? "";
    expect(unserved.filter((op) => !UNSERVED_GROUPS.includes(groupOf(op)))).toEqual(UNSERVED_IN_SERVED_GROUPS);
    expect([...new Set(unserved.map(groupOf))].filter((g) => g !== "analytics").sort()).toEqual([...UNSERVED_GROUPS].sort());
    // And the other way round: keyhold's JSON operations the SDK lacks are its own keys.listKeys
    // and the groups keyhold adds (root keys and the audit log).
    expect([...served].filter((op) => !sdk.includes(op)).sort()).toEqual([
      "auditLogs.listLogs",
      "keys.listKeys",
      "rootKeys.createRootKey",
      "rootKeys.deleteRootKey",
      "rootKeys.listRootKeys",
      "rootKeys.rotateRootKey",
      "rootKeys.updateRootKey",
    ]);
  });

  it("every unserved path answers a clean 404 route_not_found envelope", async () => {
    const served = new Set(routeTable(services(h.deps)).map((r) => r.path));
    const rootKey = await h.rootKey(["*"]);
    for (const op of sdkOperations().filter((o) => !served.has(o))) {
      const res = await fetch(`${w.url}/v2/${op}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
        body: "{}",
      });
      expect(res.status, op).toBe(404);
      expect(res.headers.get("content-type"), op).toMatch(/^application\/json\b/);
      expect(await res.json(), op).toEqual({
        meta: { requestId: res.headers.get("x-request-id") },
        error: {
          title: "Not Found",
          status: 404,
          // Unauthenticated answers cut every long token (src/errors/redact.ts), the path included.
          detail: expect.stringMatching(/^No operation exists at POST \/v2\//),
          type: `${h.docsBase}/api-reference/errors-v2/svc/data/route_not_found`,
        },
      });
    }
  });

  it("analytics of Unkey's deploy platform (runtime logs, gateway requests): the SDK declares no 404 for them, so keyhold's 404 surfaces as APIError", async () => {
    const c = await w.admin();
    const query = "SELECT count(*) FROM key_verifications_v1";
    for (const call of [c.analytics.getRuntimeLogs({ query }), c.analytics.getGatewayRequests({ query })]) {
      await expectUntypedError(h, call, 404, "err:svc:data:route_not_found");
    }
  });

  it("an operation of an unserved group through the SDK (projects.listProjects, no 404 declared): APIError", async () => {
    await expectUntypedError(h, (await w.admin()).projects.listProjects({}), 404, "err:svc:data:route_not_found");
  });
});
