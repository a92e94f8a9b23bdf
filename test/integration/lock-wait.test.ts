// A row lock held too long (a stuck transaction elsewhere) is a lock wait, answered
// 503 "try again" after innodb_lock_wait_timeout (set per session below the
// statement watchdog), not a 500, and not mistaken for a silent database: the
// pool keeps working and the next request succeeds once the lock is gone.
import { describe, expect, it } from "vitest";
import { buildServer } from "../../src/server/bootstrap.js";
import { buildDeps } from "../../src/server/deps.js";
import { services } from "../../src/server/registry.js";
import { openDatabase } from "../../src/storage/db.js";
import { expectError } from "../contract/shared/helpers.js";
import { api, key } from "../fixtures.js";
import { useHarness } from "../harness.js";

describe("a row lock held by another transaction", () => {
  const h = useHarness();

  it("answers 503 after the lock wait, then works once the lock is released", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { name: "locked" });

    // An instance whose statements may wait 2 s: lock waits end after 1 s.
    const db = await openDatabase(h.config.databaseUrl ?? "", { connectTimeoutMs: 2_000, queryTimeoutMs: 2_000 });
    const runtime = buildDeps(h.config, db.pool, { info() {}, warn() {}, error() {}, debug() {} });
    const app = await buildServer({ config: h.config, deps: runtime.deps, services: services(runtime.deps) });
    const post = async (path: string, body: unknown) => {
      const res = await app.inject({
        method: "POST",
        url: path,
        headers: { "content-type": "application/json", authorization: `Bearer ${rk}` },
        payload: JSON.stringify(body),
      });
      return { status: res.statusCode, headers: res.headers, body: JSON.parse(res.body), text: res.body };
    };
    const holder = await h.db.pool.getConnection();
    // A connection of the instance's pool, idle meanwhile: a watchdog that took the
    // lock wait for a silent database would drop it with the others.
    const bystander = await db.pool.getConnection();
    try {
      await holder.beginTransaction();
      await holder.query("SELECT id FROM `keys` WHERE id = ? FOR UPDATE", [k.keyId]);
      expectError(h, await post("/v2/keys.updateKey", { keyId: k.keyId, name: "blocked" }), 503, "err:svc:application:service_unavailable");
      await holder.rollback();
      expect(await bystander.query("SELECT 1 AS one")).toBeDefined();
      const after = await post("/v2/keys.updateKey", { keyId: k.keyId, name: "free" });
      expect(after.status, after.text).toBe(200);
      expect((await post("/v2/keys.getKey", { keyId: k.keyId })).body.data.name).toBe("free");
    } finally {
      holder.release();
      bystander.release();
      await app.close();
      await runtime.close();
      await db.close();
    }
  });
});
