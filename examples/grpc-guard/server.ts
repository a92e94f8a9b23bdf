// A small HTTP service whose routes are guarded by keyhold over gRPC, with the
// Connect client generated from keyhold's protos (gen/). Callers present
// `Authorization: Bearer <key>`; the guard asks KeysService.VerifyKey and turns
// the verdict into an HTTP answer. Run it: see README.md next to this file.
import { realpathSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { pathToFileURL } from "node:url";
import type { JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { KeysService, type VerifyKeyResponse } from "../../gen/keyhold/v2/keys_service_pb.js";

export interface Options {
  /** Port to listen on; 0 picks a free one. */
  port: number;
  host?: string;
  /** keyhold's gRPC listener (GRPC_PORT), e.g. http://127.0.0.1:7071. */
  grpcUrl: string;
  /** A root key that may verify keys (`apis.*.verify_key`) and, ideally, nothing else. */
  rootKey: string;
  /** How long a verification may take before the request is refused (default 2000). */
  timeoutMs?: number;
}

/** Who is calling, as keyhold knows them; handed to the route. */
export interface Caller {
  keyId: string;
  externalId?: string;
  meta?: JsonObject;
  /** Credits left after this request; absent when the key is unlimited. */
  creditsLeft?: number;
}

type Verdict = { ok: true; caller: Caller } | { ok: false; status: number; code: string; retryAfter?: number };
type Verify = (key: string, permission?: string) => Promise<Verdict>;
type Route = (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void> | void;

/** One client for the whole process: the gRPC transport (always HTTP/2) keeps one connection and multiplexes every call over it. */
function keyholdVerifier({ grpcUrl, rootKey, timeoutMs = 2000 }: Options): Verify {
  // The root key travels as `authorization` metadata on every call, as keyhold's gRPC server expects.
  const withRootKey: Interceptor = (next) => (req) => {
    req.header.set("authorization", `Bearer ${rootKey}`);
    return next(req);
  };
  const transport = createGrpcTransport({ baseUrl: grpcUrl, interceptors: [withRootKey], defaultTimeoutMs: timeoutMs });
  const keys = createClient(KeysService, transport);
  return async (key, permission) => {
    let v: VerifyKeyResponse;
    try {
      // Every request spends one credit (keys without credits are unlimited and spend nothing);
      // the permission query is only sent when the route needs one.
      v = await keys.verifyKey({ key, credits: { cost: 1n }, ...(permission === undefined ? {} : { permissions: permission }) });
    } catch (err) {
      // Fail closed: without a verdict nobody gets in. Log the reason, never the key.
      const e = ConnectError.from(err);
      console.error(`keyhold gave no verdict (${Code[e.code]}): ${e.rawMessage}`);
      return { ok: false, status: 503, code: "KEYHOLD_UNAVAILABLE" };
    }
    if (v.valid && v.keyId !== undefined) {
      const caller: Caller = { keyId: v.keyId };
      if (v.identity !== undefined) caller.externalId = v.identity.externalId;
      if (v.meta !== undefined) caller.meta = v.meta;
      if (v.credits !== undefined) caller.creditsLeft = Number(v.credits);
      return { ok: true, caller };
    }
    return refusal(v.code, v.ratelimits.find((r) => r.exceeded)?.reset);
  };
}

/** A failed verification is a result, not an error: its code says which HTTP status the caller gets. */
function refusal(code: string, resetMs: bigint | undefined): Verdict {
  switch (code) {
    case "INSUFFICIENT_PERMISSIONS":
    case "FORBIDDEN":
      return { ok: false, status: 403, code };
    case "RATE_LIMITED":
    case "USAGE_EXCEEDED": {
      // Only a rate limit comes back by itself; spent credits need a refill or a top-up.
      if (resetMs === undefined) return { ok: false, status: 429, code };
      return { ok: false, status: 429, code, retryAfter: Math.max(1, Math.ceil((Number(resetMs) - Date.now()) / 1000)) };
    }
    default:
      // NOT_FOUND, EXPIRED, DISABLED, and any code added after this was written.
      return { ok: false, status: 401, code };
  }
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: http.OutgoingHttpHeaders = {}): void {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
}

/** Wraps a route so it runs only for a caller keyhold accepts (holding `permission`, when given). */
function guard(verify: Verify, permission: string | undefined, route: (res: http.ServerResponse, caller: Caller) => void): Route {
  return async (req, res) => {
    const key = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (key === undefined) return send(res, 401, { error: "MISSING_KEY" }, { "www-authenticate": "Bearer" });
    const verdict = await verify(key, permission);
    if (verdict.ok) return route(res, verdict.caller);
    const headers = verdict.retryAfter === undefined ? {} : { "retry-after": String(verdict.retryAfter) };
    send(res, verdict.status, { error: verdict.code }, headers);
  };
}

/** Starts the service; resolves once it listens. */
export async function start(options: Options): Promise<{ url: string; close(): Promise<void> }> {
  const verify = keyholdVerifier(options);
  const routes: Record<string, Route> = {
    "GET /public": (_req, res) => send(res, 200, { message: "anyone may read this" }),
    "GET /reports": guard(verify, undefined, (res, caller) => send(res, 200, { reports: ["q1", "q2"], caller })),
    "POST /reports": guard(verify, "reports.write", (res, caller) => send(res, 201, { created: "q3", caller })),
  };
  const server = http.createServer((req, res) => {
    const route = routes[`${req.method} ${new URL(req.url ?? "/", "http://x").pathname}`];
    if (route === undefined) return send(res, 404, { error: "NOT_FOUND" });
    Promise.resolve(route(req, res)).catch((err: unknown) => {
      console.error("route failed:", err);
      if (!res.headersSent) send(res, 500, { error: "INTERNAL" });
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port, options.host ?? "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// Run directly: `node dist/examples/grpc-guard/server.js`.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const { KEYHOLD_GRPC_URL: grpcUrl = "http://127.0.0.1:7071", KEYHOLD_ROOT_KEY: rootKey, PORT = "3000" } = process.env;
  if (rootKey === undefined || rootKey === "") {
    console.error("set KEYHOLD_ROOT_KEY to a root key with apis.*.verify_key");
    process.exit(2);
  }
  const { url } = await start({ port: Number(PORT), grpcUrl, rootKey });
  console.log(`grpc-guard listening on ${url}`);
}
