import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { allLogs, createRootKey, GRANT, listLogs, seededRootKey } from "../rootKeys.createRootKey/support.js";
import { admin, createApi, expectOk, type Json, uid } from "../shared/helpers.js";

const path = "/v2/auditLogs.listLogs";
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("auditLogs.listLogs 200", () => {
  const h = useHarness();

  /** A root key with `*` in a workspace of its own: a log that holds only what the test writes. */
  async function freshWorkspace(): Promise<{ key: string; keyId: string; ws: string }> {
    const ws = uid("audit_ws");
    return { ...(await seededRootKey(h, ["*"], ws)), ws };
  }

  /** n APIs made one after the other (apis.createApi writes api.create), in order. */
  async function apis(rk: string, n: number, gapMs = 0): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      if (i > 0 && gapMs > 0) await pause(gapMs);
      ids.push(await createApi(h, uid("api"), rk));
    }
    return ids;
  }

  const ids = (logs: Json[]): string[] => logs.map((l) => l.id as string);
  const resourceIds = (logs: Json[]): string[] => logs.map((l) => (l.resources as Json[])[0]?.id as string);

  it("data is the records, each exactly {id, time, actor, action, resources, description, requestId, remoteAddress, userAgent}; pagination beside it", async () => {
    const w = await freshWorkspace();
    const before = Date.now();
    const made = await h.post("/v2/apis.createApi", { name: "audited" }, w.key, { "user-agent": "contract-tests/1.0" });
    const apiId = expectOk(made).apiId;
    const res = await h.post(path, {}, w.key);
    const data = expectOk(res, { pagination: true });
    expect(res.body.pagination).toEqual({ hasMore: false });
    expect(data).toEqual([
      {
        id: expect.stringMatching(/^log_/),
        time: expect.any(Number),
        actor: { type: "root_key", id: w.keyId },
        action: "api.create",
        resources: [{ type: "api", id: apiId }],
        description: expect.any(String),
        requestId: made.body.meta.requestId,
        remoteAddress: expect.any(String),
        userAgent: "contract-tests/1.0",
      },
    ]);
    expect(data[0].time).toBeGreaterThanOrEqual(before - 1000);
    expect(data[0].time).toBeLessThanOrEqual(Date.now() + 1000);
    // Never the root key's secret.
    expect(res.text.includes(w.key)).toBe(false);
  });

  it("a workspace without records -> [] and hasMore false", async () => {
    const w = await freshWorkspace();
    const res = await h.post(path, {}, w.key);
    expect(expectOk(res, { pagination: true })).toEqual([]);
    expect(res.body.pagination).toEqual({ hasMore: false });
  });

  it("workspace.*.read_audit_log alone is enough", async () => {
    const rk = await h.rootKey([GRANT.readAudit]);
    await createApi(h);
    expect((await listLogs(h, {}, rk)).logs.length).toBeGreaterThan(0);
  });

  it("newest first", async () => {
    const w = await freshWorkspace();
    const made = await apis(w.key, 4);
    const { logs } = await listLogs(h, {}, w.key);
    expect(resourceIds(logs)).toEqual([...made].reverse());
    const times = logs.map((l) => l.time as number);
    expect(times).toEqual([...times].sort((a, b) => b - a));
  });

  it("start and end narrow to the records in [start, end], both bounds included", async () => {
    const w = await freshWorkspace();
    const [a, b, c] = await apis(w.key, 3, 25);
    const all = await allLogs(h, {}, w.key);
    const time = (apiId: string | undefined) => all.find((l) => l.resources[0].id === apiId)?.time as number;
    const [ta, tb, tc] = [time(a), time(b), time(c)];
    expect(ta).toBeLessThan(tb);
    expect(tb).toBeLessThan(tc);
    expect(resourceIds(await allLogs(h, { start: tb, end: tb }, w.key))).toEqual([b]);
    expect(resourceIds(await allLogs(h, { start: tb }, w.key))).toEqual([c, b]);
    expect(resourceIds(await allLogs(h, { end: tb }, w.key))).toEqual([b, a]);
    expect(resourceIds(await allLogs(h, { start: ta + 1, end: tc - 1 }, w.key))).toEqual([b]);
    expect(await allLogs(h, { start: tc + 1 }, w.key)).toEqual([]);
    expect(resourceIds(await allLogs(h, { start: 0, end: tc }, w.key))).toEqual([c, b, a]);
  });

  it("actorId narrows to one root key's changes", async () => {
    const w = await freshWorkspace();
    const other = await seededRootKey(h, ["*"], w.ws);
    const mine = await apis(w.key, 2);
    const theirs = await apis(other.key, 2);
    const all = await allLogs(h, {}, w.key);
    expect(all).toHaveLength(4);
    const byOther = await allLogs(h, { actorId: other.keyId }, w.key);
    expect(resourceIds(byOther)).toEqual([...theirs].reverse());
    expect(byOther.every((l) => l.actor.id === other.keyId)).toBe(true);
    expect(resourceIds(await allLogs(h, { actorId: w.keyId }, w.key))).toEqual([...mine].reverse());
    expect(await allLogs(h, { actorId: "key_nobody" }, w.key)).toEqual([]);
  });

  it("actions narrows to any of the actions named", async () => {
    const w = await freshWorkspace();
    const [kept, gone] = await apis(w.key, 2);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: gone }, w.key));
    const rootKey = await createRootKey(h, { permissions: ["apis.*.read_api"] }, w.key);
    const all = await allLogs(h, {}, w.key);
    expect(all.map((l) => l.action)).toEqual(["root_key.create", "api.delete", "api.create", "api.create"]);
    expect(resourceIds(await allLogs(h, { actions: ["api.create"] }, w.key))).toEqual([gone, kept]);
    const two = await allLogs(h, { actions: ["api.delete", "root_key.create"] }, w.key);
    expect(two.map((l) => [l.action, l.resources[0].id])).toEqual([
      ["root_key.create", rootKey.keyId],
      ["api.delete", gone],
    ]);
    expect(await allLogs(h, { actions: ["key.create"] }, w.key)).toEqual([]);
    expect(await allLogs(h, { actions: [] }, w.key)).toEqual(all);
  });

  it("resourceId narrows to the changes that touched that resource", async () => {
    const w = await freshWorkspace();
    const [target, other] = await apis(w.key, 2);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: target }, w.key));
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: other }, w.key));
    const all = await allLogs(h, {}, w.key);
    const touching = await allLogs(h, { resourceId: target }, w.key);
    expect(touching.map((l) => l.action)).toEqual(["api.delete", "api.create"]);
    expect(ids(touching)).toEqual(ids(all.filter((l) => (l.resources as Json[]).some((r) => r.id === target))));
    expect(await allLogs(h, { resourceId: "api_never_existed" }, w.key)).toEqual([]);
  });

  it("filters combine: every filter given must hold", async () => {
    const w = await freshWorkspace();
    const other = await seededRootKey(h, ["*"], w.ws);
    const [a] = await apis(w.key, 1);
    const [b] = await apis(other.key, 1);
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: a }, other.key));
    expectOk(await h.post("/v2/apis.deleteApi", { apiId: b }, w.key));
    const hit = await allLogs(h, { actorId: other.keyId, actions: ["api.delete"] }, w.key);
    expect(hit.map((l) => [l.action, l.resources[0].id])).toEqual([["api.delete", a]]);
    expect(await allLogs(h, { actorId: other.keyId, resourceId: b, actions: ["api.delete"] }, w.key)).toEqual([]);
  });

  it("limit 2 walks every record once, newest first, with a cursor only while hasMore", async () => {
    const w = await freshWorkspace();
    const made = await apis(w.key, 5);
    const whole = await listLogs(h, { limit: 100 }, w.key);
    expect(whole.pagination).toEqual({ hasMore: false });
    const seen: Json[] = [];
    const pages: number[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const { logs, pagination } = await listLogs(h, { limit: 2, ...(cursor === undefined ? {} : { cursor }) }, w.key);
      pages.push(logs.length);
      seen.push(...logs);
      if (!pagination.hasMore) {
        expect(pagination).toEqual({ hasMore: false });
        break;
      }
      expect(pagination).toEqual({ hasMore: true, cursor: expect.any(String) });
      cursor = pagination.cursor;
    }
    expect(pages).toEqual([2, 2, 1]);
    expect(new Set(ids(seen)).size).toBe(5);
    expect(ids(seen)).toEqual(ids(whole.logs));
    expect(resourceIds(seen)).toEqual([...made].reverse());
  });

  it("pages of records written in the same millisecond neither repeat nor skip one", async () => {
    const w = await freshWorkspace();
    const frozen = Date.now();
    const clock = h.deps.clock;
    (h.deps as { clock: { now(): number } }).clock = { now: () => frozen };
    let made: string[];
    try {
      made = await apis(w.key, 5);
    } finally {
      (h.deps as { clock: unknown }).clock = clock;
    }
    const walked = await allLogs(h, {}, w.key, 2);
    expect(walked.every((l) => l.time === frozen)).toBe(true);
    expect(resourceIds(walked)).toEqual([...made].reverse());
  });

  it("limit defaults to 100; limit 1 and limit 100 are accepted", async () => {
    const w = await freshWorkspace();
    await apis(w.key, 101);
    const byDefault = await listLogs(h, {}, w.key);
    expect(byDefault.logs).toHaveLength(100);
    expect(byDefault.pagination).toEqual({ hasMore: true, cursor: expect.any(String) });
    const rest = await listLogs(h, { cursor: byDefault.pagination.cursor }, w.key);
    expect(rest.logs).toHaveLength(1);
    expect(rest.pagination).toEqual({ hasMore: false });
    expect((await listLogs(h, { limit: 100 }, w.key)).logs).toHaveLength(100);
    const one = await listLogs(h, { limit: 1 }, w.key);
    expect(one.logs).toHaveLength(1);
    expect(one.logs[0].id).toBe(byDefault.logs[0].id);
  });

  it("paging works under a filter", async () => {
    const w = await freshWorkspace();
    const made = await apis(w.key, 3);
    for (const apiId of made) expectOk(await h.post("/v2/apis.deleteApi", { apiId }, w.key));
    const deletes = await allLogs(h, { actions: ["api.delete"] }, w.key, 1);
    expect(resourceIds(deletes)).toEqual([...made].reverse());
  });

  it("another workspace's records never appear: each workspace's root key sees only its own", async () => {
    const home = await seededRootKey(h, ["*"]);
    const homeApi = await createApi(h, uid("api"), home.key);
    const w = await freshWorkspace();
    const foreignApis = await apis(w.key, 2);
    const foreignAll = await allLogs(h, {}, w.key);
    expect(resourceIds(foreignAll)).toEqual([...foreignApis].reverse());
    expect(foreignAll.every((l) => l.actor.id === w.keyId)).toBe(true);
    expect(await allLogs(h, { resourceId: homeApi }, w.key)).toEqual([]);
    expect(await allLogs(h, { actorId: home.keyId }, w.key)).toEqual([]);
    // And the other way round.
    const homeAll = await allLogs(h, {}, await admin(h));
    expect(homeAll.some((l) => l.resources[0]?.id === homeApi)).toBe(true);
    for (const apiId of foreignApis) expect(homeAll.some((l) => (l.resources as Json[]).some((r) => r.id === apiId))).toBe(false);
    expect(await allLogs(h, { actorId: w.keyId }, await admin(h))).toEqual([]);
  });
});
