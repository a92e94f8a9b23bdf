import { beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, type Json } from "../shared/helpers.js";

describe("identities.listIdentities 200", () => {
  const h = useHarness();
  const ids: string[] = [];

  beforeAll(async () => {
    const rk = await admin(h);
    for (const externalId of ["Alice", "bob", "carol", "dave.smith", "erin_ALICE"]) {
      const extra = externalId === "carol" ? { meta: { vip: true }, ratelimits: [{ name: "requests", limit: 5, duration: 1000 }] } : {};
      ids.push(expectOk(await h.post("/v2/identities.createIdentity", { externalId, ...extra }, rk)).identityId);
    }
    // A deleted identity is never listed.
    const gone = expectOk(await h.post("/v2/identities.createIdentity", { externalId: "deleted_alice" }, rk)).identityId;
    expectOk(await h.post("/v2/identities.deleteIdentity", { identity: gone }, rk));
    // Nor is another workspace's.
    const other = await h.rootKey(["identity.*.create_identity"], "list_other_ws");
    expectOk(await h.post("/v2/identities.createIdentity", { externalId: "alice_elsewhere" }, other));
  });

  const list = async (body: Record<string, unknown> = {}) => {
    const res = await h.post("/v2/identities.listIdentities", body, await h.rootKey(["identity.*.read_identity"]));
    return { data: expectOk(res, { pagination: true }) as Json[], pagination: res.body.pagination };
  };

  it("lists live identities in id order with pagination.hasMore false", async () => {
    const { data, pagination } = await list();
    expect(data.map((i) => i.id)).toEqual([...ids].sort());
    expect(pagination).toEqual({ hasMore: false });
    expect(data.find((i) => i.externalId === "carol")).toEqual({
      id: expect.any(String),
      externalId: "carol",
      meta: { vip: true },
      ratelimits: [{ id: expect.any(String), name: "requests", limit: 5, duration: 1000, autoApply: true }],
    });
    expect(data.find((i) => i.externalId === "bob")).toEqual({ id: expect.any(String), externalId: "bob" });
  });

  it("pages with an inclusive cursor until hasMore is false", async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const { data, pagination } = await list({ limit: 2, ...(cursor ? { cursor } : {}) });
      expect(data.length).toBeLessThanOrEqual(2);
      seen.push(...data.map((i) => i.id));
      if (!pagination.hasMore) {
        expect(pagination.cursor).toBeUndefined();
        break;
      }
      expect(pagination.cursor).toBeTypeOf("string");
      cursor = pagination.cursor;
    }
    expect(seen).toEqual([...ids].sort());
  });

  it("search is a case-insensitive substring of the externalId or the id", async () => {
    const { data } = await list({ search: "alice" });
    expect(data.map((i) => i.externalId).sort()).toEqual(["Alice", "erin_ALICE"]);
    const target = ids[2] as string;
    expect((await list({ search: target.slice(3).toLowerCase() })).data.map((i) => i.id)).toContain(target);
  });

  it("search treats %, _ and escape characters literally", async () => {
    expect((await list({ search: "%" })).data).toEqual([]);
    expect((await list({ search: "\\" })).data).toEqual([]);
    expect((await list({ search: "!%" })).data).toEqual([]);
    expect((await list({ search: "'" })).data).toEqual([]);
    expect((await list({ search: "n_a" })).data.map((i) => i.externalId)).toEqual(["erin_ALICE"]);
  });

  it("an empty search lists everything; a search without hits lists nothing", async () => {
    expect((await list({ search: "" })).data).toHaveLength(ids.length);
    const none = await list({ search: "zzz_no_match" });
    expect(none.data).toEqual([]);
    expect(none.pagination).toEqual({ hasMore: false });
  });
});
