// SIGTERM under load, on the real process: keep-alive HTTP connections and gRPC
// calls running, and requests held in flight by a database lock the test owns.
//
// What is acceptable:
// - a request written before the signal gets its complete response;
// - a request written after it gets a complete response, a 503 envelope, or its
//   connection closed without a byte (never half a response, never a non-envelope answer);
// - a gRPC call ends OK, or UNAVAILABLE when it was started after the server stopped taking calls;
// - every createKey answered 200 (HTTP) or OK (gRPC) is in the database;
// - the process exits 0, within SHUTDOWN_TIMEOUT_MS.
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, type Client, call, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { expectEnvelope, post, Tally } from "./client.js";
import { asAnswer, KeepAlive, request, type Sent } from "./raw-http.js";

const HTTP_CONNECTIONS = 30;
const GRPC_LOOPS = 4;
const HELD_HTTP = 6;
const HELD_GRPC = 4;
const SHUTDOWN_TIMEOUT_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

interface HttpCall extends Sent {
  kind: "verify" | "create";
}

interface GrpcCall {
  startedAt: number;
  code: number;
  keyId: string | undefined;
}

describe("graceful shutdown under load", () => {
  const h = useHarness();
  let server: ServerProcess;
  let rk: string;
  let apiId: string;
  let hot: { keyId: string; key: string };
  let keys: Client;

  beforeAll(async () => {
    server = await startServer(h.config.databaseUrl ?? "", { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
    rk = await h.rootKey(["*"]);
    const api = await post(server.url, "/v2/apis.createApi", { name: "shutdown" }, rk);
    expect(api.status, api.text).toBe(200);
    apiId = api.body.data.apiId;
    hot = (await post(server.url, "/v2/keys.createKey", { apiId, name: "hot" }, rk)).body.data;
    const Keys = service(loadServices("keys_service.proto"), "KeysService");
    keys = new Keys(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
  });

  afterAll(async () => {
    keys?.close();
    await server?.kill();
  });

  const json = () => ({ authorization: `Bearer ${rk}`, "content-type": "application/json" });

  /** How many statements are waiting on the identity row the test holds. */
  const heldStatements = async (): Promise<number> => {
    const [rows] = await h.db.pool.query(
      "SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND INFO LIKE 'INSERT%INTO identities%'",
    );
    return Number((rows as Array<{ n: number }>)[0]?.n);
  };

  const persisted = async (keyIds: string[]): Promise<Set<string>> => {
    if (keyIds.length === 0) return new Set();
    const [rows] = await h.db.pool.query("SELECT id FROM `keys` WHERE id IN (?)", [keyIds]);
    return new Set((rows as Array<{ id: string }>).map((r) => r.id));
  };

  it("finishes every request in flight, persists every created key, and exits 0", async () => {
    // Requests held in flight: createKey with a new externalId waits on the identity row
    // this transaction inserts and does not commit until the server is shutting down.
    const lock = await h.db.pool.getConnection();
    await lock.beginTransaction();
    await lock.query("INSERT INTO identities (id, workspace_id, external_id, meta, deleted, created_at_m) VALUES (?, ?, 'held', '{}', 0, ?)", [
      "id_heldbyshutdowntest",
      h.workspaceId,
      Date.now(),
    ]);
    const heldHttp = Array.from({ length: HELD_HTTP }, (_, i) =>
      post(server.url, "/v2/keys.createKey", { apiId, name: `held-http-${i}`, externalId: "held" }, rk, 30_000),
    );
    const heldGrpc = Array.from({ length: HELD_GRPC }, (_, i) =>
      call<{ keyId: string }>(keys, "createKey", { apiId, name: `held-grpc-${i}`, externalId: "held" }, bearer(rk)),
    );
    await until("every held request to reach the database", async () => (await heldStatements()) === HELD_HTTP + HELD_GRPC);

    // Load: keep-alive connections, each one request at a time, and gRPC loops.
    const conns = await Promise.all(Array.from({ length: HTTP_CONNECTIONS }, () => KeepAlive.open(server.port)));
    const httpCalls: HttpCall[] = [];
    const grpcCalls: GrpcCall[] = [];
    let n = 0;
    const httpLoop = async (conn: KeepAlive, i: number) => {
      while (!conn.closed) {
        const kind = (n++ + i) % 3 === 0 ? "create" : "verify";
        const body = kind === "create" ? { apiId, name: `load-${n}` } : { key: hot.key };
        const sent = await conn.send(request(kind === "create" ? "/v2/keys.createKey" : "/v2/keys.verifyKey", JSON.stringify(body), json()));
        httpCalls.push({ kind, ...sent });
        if (sent.response?.headers.connection?.toLowerCase() === "close") break;
      }
    };
    let grpcRunning = true;
    const grpcLoop = async (i: number) => {
      for (let j = 0; grpcRunning; j++) {
        const startedAt = performance.now();
        try {
          const res =
            (i + j) % 3 === 0
              ? await call<{ keyId: string }>(keys, "createKey", { apiId, name: `grpc-${i}-${j}` }, bearer(rk))
              : await call<{ valid: boolean }>(keys, "verifyKey", { key: hot.key }, bearer(rk));
          grpcCalls.push({ startedAt, code: grpc.status.OK, keyId: "keyId" in res ? res.keyId : undefined });
        } catch (err) {
          grpcCalls.push({ startedAt, code: (err as grpc.ServiceError).code, keyId: undefined });
          if ((err as grpc.ServiceError).code === grpc.status.UNAVAILABLE) return;
        }
      }
    };
    const http = conns.map(httpLoop);
    const rpc = Array.from({ length: GRPC_LOOPS }, (_, i) => grpcLoop(i));
    await sleep(700);

    const signalAt = performance.now();
    server.proc.kill("SIGTERM");
    const exitedWithin = Promise.race([server.exited, sleep(SHUTDOWN_TIMEOUT_MS + 5_000).then(() => "still running")]);
    await until("the server to start shutting down", () => server.output().includes("shutting down"));
    // The held requests are still in flight while the server drains; let them finish now.
    await sleep(300);
    expect(server.proc.exitCode, "the server must wait for its in-flight requests").toBeNull();
    await lock.commit();
    lock.release();

    const [heldHttpAnswers, heldGrpcAnswers] = await Promise.all([Promise.all(heldHttp), Promise.allSettled(heldGrpc)]);
    const code = await exitedWithin;
    grpcRunning = false;
    await Promise.all([...http, ...rpc]);
    for (const c of conns) c.close();

    const tally = new Tally();
    for (const c of httpCalls) tally.add(`http ${c.writtenAt < signalAt ? "before" : "after"} signal: ${c.response?.status ?? c.failure}`);
    for (const c of grpcCalls) tally.add(`grpc ${c.startedAt < signalAt ? "before" : "after"} signal: ${grpc.status[c.code]}`);
    console.log(`[shutdown] exit ${code}; ${JSON.stringify(tally)}`);

    expect(code, server.output().split("\n").slice(-15).join("\n")).toBe(0);
    // Held in flight across the signal: complete answers.
    for (const a of heldHttpAnswers) expect(a.status, `${a.failure ?? ""} ${a.text}`).toBe(200);
    for (const a of heldGrpcAnswers) expect(a.status, String((a as PromiseRejectedResult).reason)).toBe("fulfilled");
    // Written before the signal: a complete 200 each.
    const before = httpCalls.filter((c) => c.writtenAt < signalAt);
    expect(before.length).toBeGreaterThan(HTTP_CONNECTIONS);
    expect(before.filter((c) => c.response?.status !== 200).map((c) => c.failure ?? c.response?.body)).toEqual([]);
    // Written after it: a complete answer (200 or the 503 envelope), or a connection closed without a byte.
    for (const c of httpCalls.filter((c) => c.writtenAt >= signalAt)) {
      if (c.response === undefined) expect(["closed", "ECONNRESET", "EPIPE"]).toContain(c.failure);
      else if (c.response.status !== 200) expectEnvelope(asAnswer(c.response), 503, "err:svc:application:service_unavailable");
    }
    // gRPC: OK, or UNAVAILABLE for a call the server no longer took; nothing else.
    expect(grpcCalls.filter((c) => c.code !== grpc.status.OK && c.code !== grpc.status.UNAVAILABLE).map((c) => grpc.status[c.code])).toEqual([]);
    expect(grpcCalls.filter((c) => c.code === grpc.status.OK).length).toBeGreaterThan(0);

    // Every key a client was told about exists.
    const created = [
      ...heldHttpAnswers.map((a) => a.body.data.keyId as string),
      ...heldGrpcAnswers.map((a) => (a as PromiseFulfilledResult<{ keyId: string }>).value.keyId),
      ...httpCalls.filter((c) => c.kind === "create" && c.response?.status === 200).map((c) => c.response?.json.data.keyId as string),
      ...grpcCalls.flatMap((c) => (c.keyId === undefined ? [] : [c.keyId])),
    ];
    const found = await persisted(created);
    expect(created.filter((id) => !found.has(id))).toEqual([]);
    expect(server.output()).not.toMatch(/"level":(50|60)/);
  }, 60_000);
});
