// keyhold.dashboard.v1.DashboardService through the generated Connect client,
// with an operator's session: workspaces, root keys (created, used, listed with
// last use, revoked), APIs, usage and rate-limit namespaces. Security refusals are in test/security/dashboard.test.ts.
import type { AddressInfo } from "node:net";
import { type Client, Code, ConnectError } from "@connectrpc/connect";
import { beforeAll, describe, expect, it } from "vitest";
import { type DashboardService, Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { hashPassword } from "../../src/domain/operators/password.js";
import { insertOperator, linkWorkspace } from "../../src/storage/operators.js";
import { signedInDashboard } from "../connect-clients.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";

const PASSWORD = "dashboard service password";

async function refusal(p: Promise<unknown>): Promise<{ code: Code; detail: string | undefined; message: string }> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectError);
    const e = err as ConnectError;
    return { code: e.code, detail: e.findDetails(ErrorDetailSchema)[0]?.code, message: e.rawMessage };
  }
  throw new Error("expected the call to fail");
}

describe("DashboardService with an operator session", () => {
  const h = useHarness();
  let dash: Client<typeof DashboardService>;
  let base: string;
  let operatorId: string;

  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    const email = `${uid("op")}@example.test`;
    operatorId = await insertOperator(h.db.pool, { email, passwordHash: await hashPassword(PASSWORD), now: Date.now() });
    await linkWorkspace(h.db.pool, operatorId, h.workspaceId, Date.now());
    dash = await signedInDashboard(base, email, PASSWORD);
  });

  it("lists the operator's workspaces and creates one the operator then belongs to", async () => {
    const before = await dash.listWorkspaces({});
    expect(before.workspaces.map((w) => w.id)).toEqual([h.workspaceId]);
    const name = uid("created");
    const { workspace } = await dash.createWorkspace({ name });
    expect(workspace).toMatchObject({ id: expect.stringMatching(/^ws_/), name });
    const after = await dash.listWorkspaces({});
    expect(after.workspaces.map((w) => w.id).sort()).toEqual([h.workspaceId, workspace?.id].sort());
    // Its root keys and APIs are reachable at once.
    expect((await dash.listApis({ workspaceId: workspace?.id as string })).apis).toEqual([]);
  });

  it("refuses a workspace name already taken (never joins it) and a bad name", async () => {
    const taken = uid("taken");
    await h.rootKey(["*"], taken); // makes the workspace, without this operator
    const dup = await refusal(dash.createWorkspace({ name: taken }));
    expect(dup.code).toBe(Code.FailedPrecondition);
    expect((await dash.listWorkspaces({})).workspaces.map((w) => w.name)).not.toContain(taken);
    const empty = await refusal(dash.createWorkspace({ name: "" }));
    expect(empty.code).toBe(Code.InvalidArgument);
    expect(empty.message).toContain("name");
    expect((await refusal(dash.createWorkspace({ name: "x".repeat(257) }))).code).toBe(Code.InvalidArgument);
  });

  it("creates a root key shown once that works on the JSON API, lists it, and revokes it", async () => {
    const created = await dash.createRootKey({ workspaceId: h.workspaceId, name: "ci deploys", permissions: ["apis.*.create_api", "apis.*.read_api"] });
    expect(created.keyId).toMatch(/^key_/);
    expect(created.rootKey.length).toBeGreaterThan(20);

    const api = await h.post("/v2/apis.createApi", { name: "made-with-dashboard-key" }, created.rootKey);
    expect(api.status, api.text).toBe(200);
    const denied = await h.post("/v2/apis.deleteApi", { apiId: api.body.data.apiId }, created.rootKey);
    expect(denied.status).toBe(403);

    const listed = await dash.listRootKeys({ workspaceId: h.workspaceId });
    const mine = listed.rootKeys.find((k) => k.keyId === created.keyId);
    expect(mine).toMatchObject({ name: "ci deploys", start: created.rootKey.slice(0, 8), permissions: ["apis.*.create_api", "apis.*.read_api"] });
    expect(mine?.createdAt).toBeGreaterThan(0n);
    expect(JSON.stringify(listed.rootKeys, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain(created.rootKey);

    await dash.revokeRootKey({ workspaceId: h.workspaceId, keyId: created.keyId });
    const after = await h.post("/v2/apis.createApi", { name: "after-revoke" }, created.rootKey);
    expect(after.status).toBe(401);
    expect((await dash.listRootKeys({ workspaceId: h.workspaceId })).rootKeys.map((k) => k.keyId)).not.toContain(created.keyId);
    const again = await refusal(dash.revokeRootKey({ workspaceId: h.workspaceId, keyId: created.keyId }));
    expect(again.code).toBe(Code.NotFound);
  });

  it("lists a root key's last use: none before it authenticates, its time after the write-behind flushes", async () => {
    const created = await dash.createRootKey({ workspaceId: h.workspaceId, name: "last use", permissions: ["apis.*.read_api"] });
    const listed = async () => (await dash.listRootKeys({ workspaceId: h.workspaceId })).rootKeys.find((k) => k.keyId === created.keyId);
    expect((await listed())?.lastUsedAt).toBeUndefined();

    const before = Date.now();
    // A refused operation still authenticated the key: it counts as used.
    expect((await h.post("/v2/apis.listKeys", { apiId: "api_missing" }, created.rootKey)).status).not.toBe(401);
    await h.deps.rootKeyUsage.flush();
    const used = (await listed())?.lastUsedAt;
    expect(used).toBeDefined();
    expect(used as bigint).toBeGreaterThanOrEqual(BigInt(before));
    expect(used as bigint).toBeLessThanOrEqual(BigInt(Date.now()));

    // A later flush with an older time never moves it back.
    h.deps.rootKeyUsage.record(created.keyId, 1);
    await h.deps.rootKeyUsage.flush();
    expect((await listed())?.lastUsedAt).toBe(used);
  });

  it("validates root-key permissions like the CLI", async () => {
    const none = await refusal(dash.createRootKey({ workspaceId: h.workspaceId, permissions: [] }));
    expect(none.code).toBe(Code.InvalidArgument);
    expect(none.message).toContain("permissions");
    const bad = await refusal(dash.createRootKey({ workspaceId: h.workspaceId, permissions: ["apis.*.create_key", "no spaces allowed"] }));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.message).toContain("permissions[1]");
  });

  it("lists the workspace's live APIs", async () => {
    const admin = await h.rootKey(["*"]);
    const a = (await h.post("/v2/apis.createApi", { name: "listed-one" }, admin)).body.data.apiId as string;
    const b = (await h.post("/v2/apis.createApi", { name: "listed-two" }, admin)).body.data.apiId as string;
    await h.post("/v2/apis.deleteApi", { apiId: b }, admin);
    const { apis } = await dash.listApis({ workspaceId: h.workspaceId });
    expect(apis.find((x) => x.id === a)).toMatchObject({ name: "listed-one" });
    expect(apis.map((x) => x.id)).not.toContain(b);
  });

  it("returns verification counts by outcome for an API and for a key", async () => {
    const admin = await h.rootKey(["*"]);
    const apiId = (await h.post("/v2/apis.createApi", { name: "usage-api" }, admin)).body.data.apiId as string;
    const created = await h.post("/v2/keys.createKey", { apiId }, admin);
    const { key, keyId } = created.body.data as { key: string; keyId: string };
    const start = Date.now();
    for (let i = 0; i < 3; i++) expect((await h.post("/v2/keys.verifyKey", { key }, admin)).body.data.code).toBe("VALID");
    await h.post("/v2/keys.updateKey", { keyId, enabled: false }, admin);
    expect((await h.post("/v2/keys.verifyKey", { key }, admin)).body.data.code).toBe("DISABLED");
    await h.deps.analytics.flush();
    await h.deps.rootKeyUsage.flush();

    const range = { workspaceId: h.workspaceId, from: BigInt(start - 60_000), to: BigInt(Date.now() + 60_000), granularity: Granularity.HOUR };
    const total = (points: Array<{ outcome: string; count: bigint }>) => {
      const byOutcome: Record<string, number> = {};
      for (const p of points) byOutcome[p.outcome] = (byOutcome[p.outcome] ?? 0) + Number(p.count);
      return byOutcome;
    };
    expect(total((await dash.getUsage({ ...range, apiId })).points)).toEqual({ VALID: 3, DISABLED: 1 });
    expect(total((await dash.getUsage({ ...range, apiId, keyId })).points)).toEqual({ VALID: 3, DISABLED: 1 });

    const noGranularity = await refusal(dash.getUsage({ ...range, apiId, granularity: Granularity.UNSPECIFIED }));
    expect(noGranularity.code).toBe(Code.InvalidArgument);
    expect(noGranularity.message).toContain("granularity");
    const backwards = await refusal(dash.getUsage({ ...range, apiId, from: range.to, to: range.from }));
    expect(backwards.code).toBe(Code.InvalidArgument);
  });

  it("creates, lists and deletes rate-limit namespaces; a deleted one answers 410 at once", async () => {
    const admin = await h.rootKey(["*"]);
    const name = uid("ns");
    const { namespace } = await dash.createNamespace({ workspaceId: h.workspaceId, name });
    expect(namespace).toMatchObject({ id: expect.stringMatching(/^rlns_/), name });
    expect(namespace?.createdAt).toBeGreaterThan(0n);
    const id = namespace?.id as string;
    expect((await dash.listNamespaces({ workspaceId: h.workspaceId })).namespaces.find((n) => n.id === id)).toMatchObject({ name });

    // Used by ratelimit.limit (which caches it), and by name on the override operations.
    const limit = () => h.post("/v2/ratelimit.limit", { namespace: name, identifier: "u1", limit: 5, duration: 60_000 }, admin);
    expect((await limit()).body.data.success).toBe(true);
    expect((await h.post("/v2/ratelimit.setOverride", { namespace: id, identifier: "vip", limit: 50, duration: 60_000 }, admin)).status).toBe(200);

    const dup = await refusal(dash.createNamespace({ workspaceId: h.workspaceId, name }));
    expect(dup.code).toBe(Code.FailedPrecondition);

    await dash.deleteNamespace({ workspaceId: h.workspaceId, namespaceId: id });
    expect((await dash.listNamespaces({ workspaceId: h.workspaceId })).namespaces.map((n) => n.id)).not.toContain(id);
    // The cached namespace was evicted: the next limit sees the deletion.
    const gone = await limit();
    expect(gone.status).toBe(410);
    expect(gone.body.error.type).toContain("ratelimit_namespace_gone");
    // A deleted namespace keeps its name, as ratelimit.limit would not recreate it.
    expect((await refusal(dash.createNamespace({ workspaceId: h.workspaceId, name }))).code).toBe(Code.FailedPrecondition);
    expect((await refusal(dash.deleteNamespace({ workspaceId: h.workspaceId, namespaceId: id }))).code).toBe(Code.NotFound);
  });

  it("validates namespace names like ratelimit.limit and refuses a namespace of another workspace", async () => {
    for (const bad of ["", "x".repeat(513), "trailing "]) {
      const r = await refusal(dash.createNamespace({ workspaceId: h.workspaceId, name: bad }));
      expect(r.code, JSON.stringify(bad)).toBe(Code.InvalidArgument);
      expect(r.message).toContain("name");
    }
    expect((await dash.createNamespace({ workspaceId: h.workspaceId, name: "y".repeat(512) })).namespace?.name).toHaveLength(512);

    // A namespace in a workspace this operator does not belong to: not found through this workspace.
    const otherWorkspace = uid("other-ns-ws");
    const other = await h.rootKey(["*"], otherWorkspace);
    const otherName = uid("theirs");
    expect((await h.post("/v2/ratelimit.limit", { namespace: otherName, identifier: "u", limit: 1, duration: 1000 }, other)).status).toBe(200);
    const [row] = (await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [otherName]))[0] as Array<{ id: string }>;
    const theirs = await refusal(dash.deleteNamespace({ workspaceId: h.workspaceId, namespaceId: row?.id as string }));
    expect(theirs.code).toBe(Code.NotFound);
    expect((await h.post("/v2/ratelimit.limit", { namespace: otherName, identifier: "u", limit: 1, duration: 1000 }, other)).status).toBe(200);
    expect((await refusal(dash.deleteNamespace({ workspaceId: h.workspaceId, namespaceId: "" }))).code).toBe(Code.InvalidArgument);
  });

  describe("SearchKeys", () => {
    let admin: string;
    let apiId: string;
    /** Keys made in order: the last ones lie beyond the first page of apis.listKeys (100). */
    const made: Array<{ keyId: string; key: string; name: string }> = [];

    beforeAll(async () => {
      admin = await h.rootKey(["*"]);
      apiId = (await h.post("/v2/apis.createApi", { name: "searched" }, admin)).body.data.apiId as string;
      for (let i = 0; i < 105; i++) {
        const name = i === 104 ? "Checkout Service" : i === 103 ? "100%_off!" : i === 100 ? "ΟΔΟΣ İstanbul" : `filler-${i}`;
        const body: Record<string, unknown> = { apiId, name, prefix: i === 102 ? "zz" : "sk" };
        if (i === 101) body.externalId = "Org_Acme";
        const res = await h.post("/v2/keys.createKey", body, admin);
        expect(res.status).toBe(200);
        made.push({ keyId: res.body.data.keyId, key: res.body.data.key, name });
      }
      // A deleted key never matches.
      const gone = await h.post("/v2/keys.createKey", { apiId, name: "checkout deleted" }, admin);
      await h.post("/v2/keys.deleteKey", { keyId: gone.body.data.keyId }, admin);
    });

    const search = (query: string, limit = 0) => dash.searchKeys({ workspaceId: h.workspaceId, apiId, query, limit });
    const ids = async (query: string) => (await search(query)).keys.map((k) => k.keyId);

    it("finds a key beyond the first page by name, ignoring case, as keys.getKey describes it", async () => {
      const last = made[104];
      const found = await search("checkout");
      expect(found.hasMore).toBe(false);
      expect(found.keys.map((k) => k.keyId)).toEqual([last?.keyId]);
      const direct = (await h.post("/v2/keys.getKey", { keyId: last?.keyId }, admin)).body.data;
      expect(found.keys[0]).toMatchObject({ keyId: direct.keyId, start: direct.start, name: "Checkout Service", enabled: true });
      expect(found.keys[0]?.plaintext).toBeUndefined();
      const firstPage = (await h.post("/v2/apis.listKeys", { apiId, limit: 100 }, admin)).body.data as Array<{ keyId: string }>;
      expect(firstPage.map((k) => k.keyId)).not.toContain(last?.keyId);
    });

    it("finds keys by part of the id, by start, and by the identity's externalId in any case", async () => {
      const k = made[50] as { keyId: string; key: string };
      expect(await ids(k.keyId)).toEqual([k.keyId]);
      expect(await ids(k.keyId.slice(-8))).toEqual([k.keyId]);
      expect(await ids("zz_")).toEqual([made[102]?.keyId]);
      expect(await ids((made[102]?.key ?? "").slice(0, 6))).toEqual([made[102]?.keyId]);
      expect(await ids("org_acme")).toEqual([made[101]?.keyId]);
      const byExternal = (await search("ORG_ACME")).keys[0];
      expect(byExternal?.identity?.externalId).toBe("Org_Acme");
    });

    it("takes %, _ and the escape character literally, and answers an empty list when nothing matches", async () => {
      expect(await ids("100%_")).toEqual([made[103]?.keyId]);
      expect(await ids("%")).toEqual([made[103]?.keyId]);
      expect(await ids("off!")).toEqual([made[103]?.keyId]);
      expect(await ids("!")).toEqual([made[103]?.keyId]);
      expect(await ids("no such key anywhere")).toEqual([]);
    });

    it("matches names in any case by the database's own rules, beyond ASCII", async () => {
      // Lowered by JavaScript, "ΟΔΟΣ" ends in a final sigma the database would not match.
      for (const q of ["ΟΔΟΣ", "οδοσ", "İstanbul", "ΟΔΟΣ İSTANBUL"]) expect(await ids(q), q).toEqual([made[100]?.keyId]);
    });

    it("returns at most the limit, in id order, and says more match", async () => {
      const page = await search("filler-", 10);
      expect(page.keys).toHaveLength(10);
      expect(page.hasMore).toBe(true);
      // Ids begin with their millisecond: keys made in the same one are in id order, not necessarily in the order made.
      const fillers = made.filter((m) => m.name.startsWith("filler-")).map((m) => m.keyId);
      expect(page.keys.map((k) => k.keyId)).toEqual(fillers.sort().slice(0, 10));
      const all = await search("filler-");
      expect(all.keys).toHaveLength(50);
      expect(all.hasMore).toBe(true);
    });

    it("refuses a bad query, limit or API, and an API of another workspace", async () => {
      for (const [query, limit, field] of [
        ["", 0, "query"],
        ["   ", 0, "query"],
        ["x".repeat(257), 0, "query"],
        ["x", 101, "limit"],
      ] as const) {
        const r = await refusal(search(query, limit));
        expect(r.code).toBe(Code.InvalidArgument);
        expect(r.message).toContain(field);
      }
      const noApi = await refusal(dash.searchKeys({ workspaceId: h.workspaceId, apiId: "", query: "x" }));
      expect(noApi.code).toBe(Code.InvalidArgument);
      expect(noApi.message).toContain("apiId");
      expect((await refusal(dash.searchKeys({ workspaceId: h.workspaceId, apiId: "api_missing", query: "x" }))).code).toBe(Code.NotFound);
      const otherName = uid("search-other");
      const other = await h.rootKey(["*"], otherName);
      const theirApi = (await h.post("/v2/apis.createApi", { name: "theirs" }, other)).body.data.apiId as string;
      expect((await h.post("/v2/keys.createKey", { apiId: theirApi, name: "checkout" }, other)).status).toBe(200);
      // Their API through this operator's workspace: not found; their workspace itself: forbidden.
      expect((await refusal(dash.searchKeys({ workspaceId: h.workspaceId, apiId: theirApi, query: "checkout" }))).code).toBe(Code.NotFound);
      const [ws] = (await h.db.pool.query("SELECT id FROM workspaces WHERE name = ?", [otherName]))[0] as Array<{ id: string }>;
      const theirs = await refusal(dash.searchKeys({ workspaceId: ws?.id as string, apiId: theirApi, query: "checkout" }));
      expect(theirs.code).toBe(Code.PermissionDenied);
    });
  });
});
