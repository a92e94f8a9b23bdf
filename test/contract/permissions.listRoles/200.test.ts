import { beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, foreignAdmin, type Json } from "../shared/helpers.js";

describe("permissions.listRoles 200", () => {
  const h = useHarness();
  const ids: string[] = [];

  beforeAll(async () => {
    const rk = await admin(h);
    for (const body of [
      { name: "Admin", description: "Can do ANYTHING", permissions: ["*"] },
      { name: "editor", permissions: ["docs.write", "docs.read"] },
      { name: "viewer", description: "50% read-only", permissions: ["docs.read"] },
      { name: "billing_team" },
      { name: "Ops team" },
    ]) {
      ids.push(expectOk(await h.post("/v2/permissions.createRole", body, rk)).roleId);
    }
    // A deleted role is never listed, nor is another workspace's.
    expectOk(await h.post("/v2/permissions.createRole", { name: "gone" }, rk));
    expectOk(await h.post("/v2/permissions.deleteRole", { role: "gone" }, rk));
    expectOk(await h.post("/v2/permissions.createRole", { name: "Admin" }, await foreignAdmin(h)));
  });

  const list = async (body: Record<string, unknown> = {}) => {
    const res = await h.post("/v2/permissions.listRoles", body, await h.rootKey(["rbac.*.read_role"]));
    return { data: expectOk(res, { pagination: true }) as Json[], pagination: res.body.pagination };
  };
  const names = async (search: string) => (await list({ search })).data.map((r) => r.name).sort();

  it("lists the workspace's roles in id order, each with its permissions; pagination.hasMore false", async () => {
    const { data, pagination } = await list();
    expect(data.map((r) => r.id)).toEqual([...ids].sort());
    expect(pagination).toEqual({ hasMore: false });
    expect(data.find((r) => r.name === "editor")).toEqual({
      id: ids[1],
      name: "editor",
      permissions: [
        { id: expect.stringMatching(/^perm_/), name: "docs.read", slug: "docs.read", description: "Auto-created permission: docs.read" },
        { id: expect.stringMatching(/^perm_/), name: "docs.write", slug: "docs.write", description: "Auto-created permission: docs.write" },
      ],
    });
    expect(data.find((r) => r.name === "billing_team")).toEqual({ id: ids[3], name: "billing_team" });
    // One permission shared by two roles is one permission.
    const viewer = data.find((r) => r.name === "viewer");
    const editor = data.find((r) => r.name === "editor");
    expect(viewer.permissions[0].id).toBe(editor.permissions[0].id);
  });

  it("pages with an inclusive cursor until hasMore is false", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const { data, pagination } = await list({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(data.length).toBeLessThanOrEqual(2);
      seen.push(...data.map((r) => r.id));
      if (!pagination.hasMore) {
        expect(pagination.cursor).toBeUndefined();
        break;
      }
      expect(pagination.cursor).toBe([...ids].sort()[seen.length]);
      cursor = pagination.cursor;
    }
    expect(seen).toEqual([...ids].sort());
  });

  it("search is a case-insensitive substring of the name, description or id", async () => {
    expect(await names("admin")).toEqual(["Admin"]);
    expect(await names("anything")).toEqual(["Admin"]); // description
    expect(await names("TEAM")).toEqual(["Ops team", "billing_team"]);
    const target = ids[4] as string;
    expect(await names(target.slice(5).toLowerCase())).toEqual(["Ops team"]); // id
  });

  it("search does not look at the permissions", async () => {
    expect(await names("docs.write")).toEqual([]);
  });

  it("search treats % and _ literally", async () => {
    expect(await names("%")).toEqual(["viewer"]);
    expect(await names("g_t")).toEqual(["billing_team"]); // not "billing team"-like matches
    expect(await names("s_t")).toEqual([]); // "Ops team" would match s?t if _ were a wildcard
    expect(await names("\\")).toEqual([]);
  });

  it("an empty search lists everything; a search without hits lists nothing", async () => {
    expect((await list({ search: "" })).data).toHaveLength(ids.length);
    expect(await list({ search: "zzz_no_match" })).toEqual({ data: [], pagination: { hasMore: false } });
  });
});

describe("permissions.listRoles 200 (empty workspace)", () => {
  const h = useHarness();

  it("a workspace without roles answers data [] and hasMore false", async () => {
    const res = await h.post("/v2/permissions.listRoles", { limit: 5 }, await admin(h));
    expect(expectOk(res, { pagination: true })).toEqual([]);
    expect(res.body.pagination).toEqual({ hasMore: false });
  });
});
