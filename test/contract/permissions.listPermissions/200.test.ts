import { beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, foreignAdmin, type Json } from "../shared/helpers.js";

describe("permissions.listPermissions 200", () => {
  const h = useHarness();
  const ids: string[] = [];

  beforeAll(async () => {
    const rk = await admin(h);
    for (const body of [
      { name: "Read documents", slug: "documents.read", description: "View any DOCUMENT" },
      { name: "Write documents", slug: "documents.write" },
      { name: "Billing plan a", slug: "billing.manage", description: "100% of invoices" },
      { name: "Admin", slug: "admin_all" },
      { name: "Everything", slug: "*" },
    ]) {
      ids.push(expectOk(await h.post("/v2/permissions.createPermission", body, rk)).permissionId);
    }
    // A deleted permission is never listed, nor is another workspace's.
    const gone = expectOk(await h.post("/v2/permissions.createPermission", { name: "gone", slug: "gone.perm" }, rk)).permissionId;
    expectOk(await h.post("/v2/permissions.deletePermission", { permission: gone }, rk));
    expectOk(await h.post("/v2/permissions.createPermission", { name: "Read documents", slug: "documents.read" }, await foreignAdmin(h)));
  });

  const list = async (body: Record<string, unknown> = {}) => {
    const res = await h.post("/v2/permissions.listPermissions", body, await h.rootKey(["rbac.*.read_permission"]));
    return { data: expectOk(res, { pagination: true }) as Json[], pagination: res.body.pagination };
  };

  it("lists the workspace's permissions in id order, data an array, pagination.hasMore false", async () => {
    const { data, pagination } = await list();
    expect(data.map((p) => p.id)).toEqual([...ids].sort());
    expect(pagination).toEqual({ hasMore: false });
    expect(data.find((p) => p.slug === "documents.read")).toEqual({
      id: ids[0],
      name: "Read documents",
      slug: "documents.read",
      description: "View any DOCUMENT",
    });
    expect(data.find((p) => p.slug === "documents.write")).toEqual({ id: ids[1], name: "Write documents", slug: "documents.write" });
  });

  it("pages with an inclusive cursor until hasMore is false", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const { data, pagination } = await list({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(data.length).toBeLessThanOrEqual(2);
      seen.push(...data.map((p) => p.id));
      if (!pagination.hasMore) {
        expect(pagination.cursor).toBeUndefined();
        break;
      }
      expect(pagination.cursor).toBe([...ids].sort()[seen.length]);
      cursor = pagination.cursor;
    }
    expect(seen).toEqual([...ids].sort());
  });

  it("limit 1 and limit 100 are accepted", async () => {
    const one = await list({ limit: 1 });
    expect(one.data).toHaveLength(1);
    expect(one.pagination).toEqual({ hasMore: true, cursor: expect.any(String) });
    expect((await list({ limit: 100 })).data).toHaveLength(ids.length);
  });

  it("search is a case-insensitive substring of the name, slug, description or id", async () => {
    const slugs = async (search: string) => (await list({ search })).data.map((p) => p.slug).sort();
    expect(await slugs("DOCUMENTS")).toEqual(["documents.read", "documents.write"]); // slug and name
    expect(await slugs("any document")).toEqual(["documents.read"]); // description
    expect(await slugs("everything")).toEqual(["*"]); // name
    expect(await slugs("manage")).toEqual(["billing.manage"]);
    const target = ids[3] as string;
    expect(await slugs(target.slice(5).toLowerCase())).toEqual(["admin_all"]); // id
  });

  it("search treats %, _, * and escape characters literally", async () => {
    const slugs = async (search: string) => (await list({ search })).data.map((p) => p.slug).sort();
    expect(await slugs("%")).toEqual(["billing.manage"]); // only the description has a %
    // Every id has an underscore (`perm_…`), so `_` matches them all; `n_a` only the literal text.
    expect(await slugs("_")).toHaveLength(ids.length);
    expect(await slugs("n_a")).toEqual(["admin_all"]); // not "Billing plan a"
    expect(await slugs("*")).toEqual(["*"]);
    expect(await slugs("\\")).toEqual([]);
    expect(await slugs("!%")).toEqual([]);
    expect(await slugs("'")).toEqual([]);
  });

  it("an empty search lists everything; a search without hits lists nothing", async () => {
    expect((await list({ search: "" })).data).toHaveLength(ids.length);
    expect(await list({ search: "zzz_no_match" })).toEqual({ data: [], pagination: { hasMore: false } });
  });

  it("a cursor past the last id lists nothing", async () => {
    expect(await list({ cursor: "perm_zzzzzzzzzzzzzzzzzzzzzzzz" })).toEqual({ data: [], pagination: { hasMore: false } });
  });
});

describe("permissions.listPermissions 200 (empty workspace)", () => {
  const h = useHarness();

  it("a workspace without permissions answers data [] and hasMore false", async () => {
    const res = await h.post("/v2/permissions.listPermissions", {}, await admin(h));
    expect(expectOk(res, { pagination: true })).toEqual([]);
    expect(res.body.pagination).toEqual({ hasMore: false });
  });
});
