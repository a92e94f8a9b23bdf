// The database goes away under load, refused and then blackholed, behind a TCP
// proxy, while keyhold runs as a real process. Verification of a hot cached key
// keeps answering; management calls answer 503 service_unavailable in the
// envelope within a bounded time (never a hang); when the database is back,
// everything works again without a restart.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate, openDatabase } from "../../src/storage/db.js";
import { isDatabaseUnavailable } from "../../src/storage/sql.js";
import { bearer, type Client, call, failure, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { type Answer, expectEnvelope, outcome, post, Tally } from "./client.js";
import { TcpProxy } from "./tcp-proxy.js";

const UNAVAILABLE = "503 err:svc:application:service_unavailable";
/** Any answer slower than this counts as a hang. */
const DEADLINE_MS = 15_000;

type Kind = "verify" | "getKey" | "createKey";
interface Call {
  kind: Kind;
  /** The phase when the call was sent and when it was answered. */
  sent: string;
  answered: string;
  label: string;
  answer: Answer;
}

/** Calls counted by phase, kind and outcome, for messages. */
const tally = (cs: Call[]): Record<string, number> => {
  const t = new Tally();
  for (const c of cs) t.add(`${c.sent === c.answered ? c.sent : `${c.sent} -> ${c.answered}`} / ${c.kind} / ${c.label}`);
  return t.toJSON();
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("database outage under load", () => {
  const h = useHarness();
  let proxy: TcpProxy;
  let server: ServerProcess;
  let rk: string;
  let apiId: string;
  let hot: { keyId: string; key: string };
  let phase = "up";
  const calls: Call[] = [];
  let keys: Client;

  /** A proxy in front of this file's database, and the database URL through it. */
  const proxied = (): Promise<{ proxy: TcpProxy; url: string }> => TcpProxy.inFrontOf(h.config.databaseUrl ?? "");

  beforeAll(async () => {
    const through = await proxied();
    proxy = through.proxy;
    server = await startServer(through.url, {
      DB_CONNECT_TIMEOUT_MS: "2000",
      DB_QUERY_TIMEOUT_MS: "2000",
    });
    rk = await h.rootKey(["*"]);
    const created = await post(server.url, "/v2/apis.createApi", { name: "outage" }, rk);
    expect(created.status, created.text).toBe(200);
    apiId = created.body.data.apiId;
    const k = await post(server.url, "/v2/keys.createKey", { apiId, ratelimits: [{ name: "hot", limit: 1_000_000, duration: 60_000 }] }, rk);
    expect(k.status, k.text).toBe(200);
    hot = k.body.data;
    // Cached from here on.
    const v = await post(server.url, "/v2/keys.verifyKey", { key: hot.key }, rk);
    expect(v.body?.data?.valid, v.text).toBe(true);
    const Keys = service(loadServices("keys_service.proto"), "KeysService");
    keys = new Keys(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
  });

  afterAll(async () => {
    keys?.close();
    await server?.kill();
    await proxy?.close();
  });

  /** Counts a call under the phases it was sent and answered in. */
  const record = async (kind: Kind, pending: Promise<Answer>): Promise<Answer> => {
    const sent = phase;
    const answer = await pending;
    calls.push({ kind, sent, answered: phase, label: outcome(answer), answer });
    return answer;
  };

  const loop = async (kind: Kind, running: () => boolean) => {
    let n = 0;
    while (running()) {
      const answer = await record(
        kind,
        kind === "verify"
          ? post(server.url, "/v2/keys.verifyKey", { key: hot.key }, rk, DEADLINE_MS)
          : kind === "getKey"
            ? post(server.url, "/v2/keys.getKey", { keyId: hot.keyId }, rk, DEADLINE_MS)
            : post(server.url, "/v2/keys.createKey", { apiId, name: `load-${n++}` }, rk, DEADLINE_MS),
      );
      // A refused connection answers at once; do not spin.
      if (answer.failure !== undefined) await sleep(20);
    }
  };

  /** Polls createKey until it works again (the database is back), bounded. */
  const recovered = async (): Promise<void> => {
    const until = Date.now() + 20_000;
    for (;;) {
      const a = await record("createKey", post(server.url, "/v2/keys.createKey", { apiId, name: "probe" }, rk, DEADLINE_MS));
      if (a.status === 200) return;
      if (Date.now() > until) throw new Error(`no recovery within 20 s: ${outcome(a)} ${a.text}`);
      await sleep(200);
    }
  };

  /** The same over gRPC, mid-outage: the cached key verifies, a management call is UNAVAILABLE with the error code. */
  const grpcWhileDown = async () => {
    const v = await call<{ valid: boolean }>(keys, "verifyKey", { key: hot.key }, bearer(rk));
    expect(v.valid).toBe(true);
    const err = await failure(call(keys, "createKey", { apiId, name: "grpc-during-outage" }, bearer(rk)));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.metadata.get("error-code")).toEqual(["err:svc:application:service_unavailable"]);
  };

  it("verification keeps answering, management answers 503 in bounded time, and all recovers without a restart", async () => {
    let running = true;
    const loops = [
      ...Array.from({ length: 4 }, () => loop("verify", () => running)),
      loop("getKey", () => running),
      loop("createKey", () => running),
      loop("createKey", () => running),
    ];
    const pid = server.proc.pid;
    try {
      // A phase starts once the proxy is in its mode: calls sent from then on are judged by it.
      await sleep(1_000);
      await proxy.setMode("refuse");
      phase = "refused";
      await sleep(2_000);
      await grpcWhileDown();
      await sleep(2_000);
      await proxy.setMode("forward");
      phase = "recovering";
      await recovered();
      phase = "up again";
      await sleep(1_500);
      // Many pooled connections, most of them idle when the network goes silent under them.
      await Promise.all(Array.from({ length: 16 }, () => post(server.url, "/v2/keys.getKey", { keyId: hot.keyId }, rk)));
      await proxy.setMode("blackhole");
      phase = "blackholed";
      await sleep(3_000);
      await grpcWhileDown();
      await sleep(3_000);
      await proxy.setMode("forward");
      phase = "recovering";
      await recovered();
      phase = "up at last";
      // Wider than the pool: every pooled connection is used, and none may lead to the silent network.
      await Promise.all(Array.from({ length: 40 }, () => record("getKey", post(server.url, "/v2/keys.getKey", { keyId: hot.keyId }, rk, DEADLINE_MS))));
      await sleep(1_500);
    } finally {
      running = false;
      await Promise.all(loops);
    }

    console.log(
      `[database outage] ${calls.length} calls, slowest ${Math.max(...calls.map((c) => c.answer.ms))} ms:\n` +
        Object.entries(tally(calls))
          .map(([k, n]) => `  ${k}: ${n}`)
          .join("\n"),
    );

    // Nothing hung and no connection was dropped: every call got an answer.
    expect(tally(calls.filter((c) => c.answer.failure !== undefined))).toEqual({});
    // The hot cached key verified throughout, outage or not.
    expect(tally(calls.filter((c) => c.kind === "verify" && c.label !== "200 VALID"))).toEqual({});
    // Management calls sent and answered while the database was away: 503 in the envelope.
    const down = calls.filter((c) => c.kind !== "verify" && c.sent === c.answered && (c.sent === "refused" || c.sent === "blackholed"));
    for (const p of ["refused", "blackholed"]) expect(down.filter((c) => c.sent === p).length, `management calls while ${p}`).toBeGreaterThan(0);
    expect(tally(down.filter((c) => c.label !== UNAVAILABLE))).toEqual({});
    for (const c of down.slice(0, 5)) expectEnvelope(c.answer, 503, "err:svc:application:service_unavailable");
    // From the moment the database was back, management worked again: no call sent
    // after a restore failed (no pooled connection was left leading to the silent network).
    const up = ["recovering", "up again", "up at last"];
    const after = calls.filter((c) => up.includes(c.sent) && up.includes(c.answered));
    expect(after.filter((c) => c.kind !== "verify").length).toBeGreaterThan(0);
    expect(tally(after.filter((c) => c.kind !== "verify" && c.label !== "200"))).toEqual({});

    // Same process, never restarted; a new key is created, verifies and reads back.
    expect(server.proc.pid).toBe(pid);
    expect(server.proc.exitCode).toBeNull();
    const fresh = await post(server.url, "/v2/keys.createKey", { apiId, name: "after-outage" }, rk);
    expect(fresh.status, fresh.text).toBe(200);
    const v = await post(server.url, "/v2/keys.verifyKey", { key: fresh.body.data.key }, rk);
    expect(v.body?.data, v.text).toMatchObject({ valid: true, code: "VALID", keyId: fresh.body.data.keyId });
    const got = await post(server.url, "/v2/keys.getKey", { keyId: fresh.body.data.keyId }, rk);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data.name).toBe("after-outage");
  }, 90_000);

  it("the pool: a silent statement fails in bounded time, and no pooled connection is left leading to the silent network", async () => {
    const { proxy: own, url } = await proxied();
    const db = await openDatabase(url, { connectTimeoutMs: 1_000, queryTimeoutMs: 500 });
    try {
      // Ten pooled connections, idle when the network goes silent.
      await Promise.all(Array.from({ length: 10 }, () => db.pool.query("SELECT SLEEP(0.05)")));
      // One held between statements, as in a transaction.
      const held = await db.pool.getConnection();
      await own.setMode("blackhole");
      const failed = (p: Promise<unknown>) =>
        p.then(
          () => undefined,
          (e: unknown) => e,
        );
      const err = await failed(db.pool.query("SELECT 1"));
      expect(isDatabaseUnavailable(err), String(err)).toBe(true);
      // Dropped with the idle ones: its next statement fails at once, as unavailable too (a 503, not a 500).
      const heldErr = await failed(held.query("SELECT 1"));
      expect(isDatabaseUnavailable(heldErr), String(heldErr)).toBe(true);
      held.release();
      await own.setMode("forward");
      // Each of these would wait for its own timeout on a leftover silent connection.
      for (let i = 0; i < 10; i++) await db.pool.query("SELECT 1");

      // Waiting for the migration lock longer than the statement timeout is not a silent database.
      await db.pool.query(
        "UPDATE schema_migration_lock SET holder = 'other', expires_at_m = CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED) + 10000 WHERE id = 1",
      );
      const migrating = migrate(db.pool, () => undefined);
      await sleep(1_500);
      await db.pool.query("UPDATE schema_migration_lock SET holder = NULL, expires_at_m = 0 WHERE id = 1 AND holder = 'other'");
      await migrating;
    } finally {
      await db.close();
      await own.close();
    }
  });
});
