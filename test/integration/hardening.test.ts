// Regressions for defects found in review: each of these once gave a 500, lost
// data, accepted a missing value as 0, or could stall the process.
import { describe, expect, it } from "vitest";
import { api, expectError, expectInvalid, key, verify } from "../fixtures.js";
import { useHarness } from "../harness.js";

describe("hardening", () => {
  const h = useHarness();

  it("concurrent createKey calls with the same new externalId all succeed and share one identity", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const results = await Promise.all(Array.from({ length: 8 }, () => h.post("/v2/keys.createKey", { apiId, externalId: "racing_user" }, rk)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    const ids = await Promise.all(results.map(async (r) => (await verify(h, rk, r.body.data.key)).identity?.id));
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toMatch(/^id_/);
  });

  it("concurrent createKey calls with the same new permission slug all get the permission", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const results = await Promise.all(Array.from({ length: 8 }, () => h.post("/v2/keys.createKey", { apiId, permissions: ["racing.read"] }, rk)));
    expect(results.map((r) => r.status)).toEqual(Array(8).fill(200));
    for (const r of results) expect((await verify(h, rk, r.body.data.key)).permissions).toEqual(["racing.read"]);
  });

  it("concurrent updateKey calls adding the same new slug to different keys all succeed", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const keys = await Promise.all(Array.from({ length: 6 }, () => key(h, rk, apiId)));
    const results = await Promise.all(keys.map((k) => h.post("/v2/keys.updateKey", { keyId: k.keyId, permissions: ["fresh.slug"] }, rk)));
    expect(results.map((r) => r.status)).toEqual(Array(6).fill(200));
  });

  it.each([
    ["ratelimit.setOverride without limit", "/v2/ratelimit.setOverride", { namespace: "ns_h", identifier: "vip", duration: 60_000 }, "limit"],
    ["ratelimit.limit without duration", "/v2/ratelimit.limit", { namespace: "ns_h", identifier: "u", limit: 5 }, "duration"],
    ["keys.rerollKey without expiration", "/v2/keys.rerollKey", { keyId: "key_whatever00" }, "expiration"],
    ["keys.verifyKey with credits but no cost", "/v2/keys.verifyKey", { key: "sk_x", credits: {} }, "credits.cost"],
  ])("%s -> 400 naming the field (a missing number is not 0)", async (_label, path, body, field) => {
    const rk = await h.rootKey(["*"]);
    expectInvalid(h, await h.post(path, body, rk), field);
  });

  it("createKey rate limits without limit or duration -> 400 naming them", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const res = await h.post("/v2/keys.createKey", { apiId, ratelimits: [{ name: "abc" }] }, rk);
    expectInvalid(h, res, "ratelimits[0].limit");
    expectInvalid(h, res, "ratelimits[0].duration");
  });

  it("names and identifiers with a trailing space are refused, not merged with their trimmed twin", async () => {
    const rk = await h.rootKey(["*"]);
    await h.post("/v2/ratelimit.limit", { namespace: "ns_trail", identifier: "seed", limit: 5, duration: 60_000 }, rk);
    expect((await h.post("/v2/ratelimit.setOverride", { namespace: "ns_trail", identifier: "vip", limit: 3, duration: 60_000 }, rk)).status).toBe(200);
    expectInvalid(h, await h.post("/v2/ratelimit.setOverride", { namespace: "ns_trail", identifier: "vip ", limit: 7, duration: 60_000 }, rk), "identifier");
    expect((await h.post("/v2/ratelimit.getOverride", { namespace: "ns_trail", identifier: "vip" }, rk)).body.data.limit).toBe(3);
    const apiId = await api(h, rk);
    expectInvalid(h, await h.post("/v2/keys.createKey", { apiId, ratelimits: [{ name: "abc ", limit: 1, duration: 1000 }] }, rk), "ratelimits[0].name");
  });

  it("a permission full of stars cannot stall verification", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { permissions: [`${"a*".repeat(40)}c`] });
    const data = await verify(h, rk, k.key, { permissions: "a".repeat(900) });
    expect(data.code).toBe("INSUFFICIENT_PERMISSIONS");
  });

  it("statements built for a variable number of values are not server-side prepared", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const pool = h.db.pool as unknown as { execute: (...a: unknown[]) => unknown };
    const original = pool.execute;
    let widest = 0;
    pool.execute = (...args: unknown[]) => {
      widest = Math.max(widest, Array.isArray(args[1]) ? args[1].length : 0);
      return (original as (...a: unknown[]) => unknown).apply(h.db.pool, args);
    };
    try {
      await key(h, rk, apiId, {
        permissions: Array.from({ length: 37 }, (_, i) => `p.${i}`),
        ratelimits: [
          { name: "one", limit: 1, duration: 1000 },
          { name: "two", limit: 1, duration: 1000 },
        ],
      });
    } finally {
      pool.execute = original;
    }
    // Each distinct list length would otherwise be one more prepared statement per pooled connection.
    expect(widest).toBeGreaterThan(0);
    expect(widest).toBeLessThanOrEqual(8);
  });

  it("createRole still gets a permission that a concurrent deletePermission removed before it was attached", async () => {
    const rk = await h.rootKey(["*"]);
    const hook = deleteBeforeLink("permissions", () =>
      h.db.pool.query("DELETE FROM permissions WHERE workspace_id = ? AND slug = 'vanish.me'", [h.workspaceId]),
    );
    let res: Awaited<ReturnType<typeof h.post>>;
    try {
      res = await h.post("/v2/permissions.createRole", { name: "racer", permissions: ["vanish.me"] }, rk);
    } finally {
      hook.restore();
    }
    expect(hook.count()).toBe(1);
    expect(res.status, res.text).toBe(200);
    const role = await h.post("/v2/permissions.getRole", { role: "racer" }, rk);
    expect(role.body.data.permissions.map((x: { slug: string }) => x.slug)).toEqual(["vanish.me"]);
  });

  it("10,000 unknown fields get a bounded answer: 100 field errors and one saying how many more", async () => {
    const rk = await h.rootKey(["*"]);
    const body = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`f${i}`, i]));
    const res = await h.post("/v2/apis.createApi", body, rk);
    expectInvalid(h, res, "f0");
    expect(res.body.error.errors).toHaveLength(101);
    expect(res.body.error.errors[100]).toEqual({ location: "body.f100", message: "9900 more problems, from here on, are not listed." });
    expect(res.text.length).toBeLessThan(JSON.stringify(body).length);
  });

  /**
   * Runs `del` (from another connection) just before the locking read by id that
   * precedes linking rows of `table` to a key (not the read by name that creates
   * missing rows: those are uncommitted there, so the delete would wait on them).
   */
  function deleteBeforeLink(table: "permissions" | "roles", del: () => Promise<unknown>): { restore: () => void; count: () => number } {
    type Conn = Record<"query" | "execute", (sql: unknown, ...rest: unknown[]) => Promise<unknown>>;
    const pool = h.db.pool as unknown as { getConnection: () => Promise<Conn> };
    const getConnection = pool.getConnection;
    let deleted = 0;
    pool.getConnection = async () => {
      const conn = await getConnection.call(pool);
      for (const m of ["query", "execute"] as const) {
        const run = conn[m];
        conn[m] = async (sql, ...rest) => {
          if (deleted === 0 && typeof sql === "string" && sql.includes(`FROM ${table} `) && sql.includes("AND id IN (") && sql.includes("LOCK IN SHARE MODE")) {
            deleted++;
            await del();
          }
          return run.call(conn, sql, ...rest);
        };
      }
      return conn;
    };
    return { restore: () => (pool.getConnection = getConnection), count: () => deleted };
  }

  it.each(["createKey", "updateKey"])("%s still gets a permission that a concurrent deletePermission removed before it was attached", async (op) => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const existing = op === "updateKey" ? await key(h, rk, apiId) : undefined;
    const slug = `vanish.${op}`;
    const hook = deleteBeforeLink("permissions", () => h.db.pool.query("DELETE FROM permissions WHERE workspace_id = ? AND slug = ?", [h.workspaceId, slug]));
    let res: Awaited<ReturnType<typeof h.post>>;
    try {
      res =
        existing === undefined
          ? await h.post("/v2/keys.createKey", { apiId, permissions: [slug] }, rk)
          : await h.post("/v2/keys.updateKey", { keyId: existing.keyId, permissions: [slug] }, rk);
    } finally {
      hook.restore();
    }
    expect(hook.count()).toBe(1);
    expect(res.status, res.text).toBe(200);
    const keyId = existing?.keyId ?? res.body.data.keyId;
    const got = await h.post("/v2/keys.getKey", { keyId }, rk);
    expect(got.body.data.permissions).toEqual([slug]);
  });

  it("createKey with a role deleted while the key was being created answers 404 for the role, not a 200 without it", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    expect((await h.post("/v2/permissions.createRole", { name: "doomed" }, rk)).status).toBe(200);
    const hook = deleteBeforeLink("roles", () => h.post("/v2/permissions.deleteRole", { role: "doomed" }, rk));
    let res: Awaited<ReturnType<typeof h.post>>;
    try {
      res = await h.post("/v2/keys.createKey", { apiId, name: "with-role", roles: ["doomed"] }, rk);
    } finally {
      hook.restore();
    }
    expect(hook.count()).toBe(1);
    expectError(h, res, 404, "err:svc:data:role_not_found");
    expect((await h.post("/v2/apis.listKeys", { apiId }, rk)).body.data).toEqual([]);
  });
});
