import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, type Json, namespace } from "../shared/helpers.js";

const MINUTE = 60_000;

describe("ratelimit.listOverrides 200", () => {
  const h = useHarness();

  const set = async (namespaceId: string, identifier: string, limit = 1) =>
    expectOk(await h.post("/v2/ratelimit.setOverride", { namespaceId, identifier, limit, duration: MINUTE }, await admin(h))).overrideId as string;
  const list = async (body: Record<string, unknown>, rootKey?: string) => {
    const res = await h.post("/v2/ratelimit.listOverrides", body, rootKey ?? (await h.rootKey(["ratelimit.*.read_override"])));
    return { data: expectOk(res, { pagination: true }) as Json[], pagination: res.body.pagination };
  };

  it("lists the namespace's live overrides in id order, with pagination", async () => {
    const ns = await namespace(h);
    const a = await set(ns.name, "alpha", 1);
    const b = await set(ns.name, "beta", 2);
    const gone = await set(ns.name, "gamma", 3);
    expectOk(await h.post("/v2/ratelimit.deleteOverride", { namespaceId: ns.name, identifier: "gamma" }, await admin(h)));
    const other = await namespace(h);
    await set(other.name, "elsewhere");
    const { data, pagination } = await list({ namespaceId: ns.name });
    expect(pagination).toEqual({ hasMore: false });
    expect(data).toEqual(
      [
        { overrideId: a, identifier: "alpha", limit: 1, duration: MINUTE, namespaceId: ns.id },
        { overrideId: b, identifier: "beta", limit: 2, duration: MINUTE, namespaceId: ns.id },
      ].sort((x, y) => (x.overrideId < y.overrideId ? -1 : 1)),
    );
    expect(data.map((o) => o.overrideId)).not.toContain(gone);
  });

  it("an empty namespace lists [] with hasMore false", async () => {
    const ns = await namespace(h);
    const { data, pagination } = await list({ namespace: ns.id });
    expect(data).toEqual([]);
    expect(pagination).toEqual({ hasMore: false });
  });

  it("defaults to 10 per page and pages with an inclusive cursor", async () => {
    const ns = await namespace(h);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push(await set(ns.name, `user_${i}`));
    ids.sort();
    const first = await list({ namespaceId: ns.name });
    expect(first.data.map((o) => o.overrideId)).toEqual(ids.slice(0, 10));
    expect(first.pagination).toEqual({ hasMore: true, cursor: ids[10] });
    const second = await list({ namespaceId: ns.name, cursor: first.pagination.cursor });
    expect(second.data.map((o) => o.overrideId)).toEqual(ids.slice(10));
    expect(second.pagination).toEqual({ hasMore: false });
    const small = await list({ namespaceName: ns.name, limit: 5 });
    expect(small.data).toHaveLength(5);
    expect(small.pagination.hasMore).toBe(true);
  });

  it("a read_override grant on the namespace id is enough", async () => {
    const ns = await namespace(h);
    await set(ns.name, "scoped");
    const { data } = await list({ namespaceId: ns.name }, await h.rootKey([`ratelimit.${ns.id}.read_override`]));
    expect(data).toHaveLength(1);
  });
});
