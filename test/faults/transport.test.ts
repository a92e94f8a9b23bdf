// Transport abuse over real sockets against the real server process: bodies past
// the limit, slow clients, bytes that are not UTF-8, odd content types, pipelining,
// header floods, broken request lines, clients that vanish mid-request, and junk
// on the gRPC port. Every answer is the error envelope, and the server keeps
// serving everyone else throughout.
import net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearer, call, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { expectEnvelope, post } from "./client.js";
import { asAnswer, exchange, request } from "./raw-http.js";

const BODY_LIMIT = 64 * 1024;
const HEADERS_TIMEOUT_MS = 1_500;
const REQUEST_TIMEOUT_MS = 3_000;

describe("transport abuse", () => {
  const h = useHarness();
  let server: ServerProcess;
  let rk: string;
  let apiId: string;
  let hot: { keyId: string; key: string };

  beforeAll(async () => {
    server = await startServer(h.config.databaseUrl ?? "", {
      BODY_LIMIT_BYTES: String(BODY_LIMIT),
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    });
    rk = await h.rootKey(["*"]);
    const api = await post(server.url, "/v2/apis.createApi", { name: "transport" }, rk);
    expect(api.status, api.text).toBe(200);
    apiId = api.body.data.apiId;
    const k = await post(server.url, "/v2/keys.createKey", { apiId, name: "hot" }, rk);
    expect(k.status, k.text).toBe(200);
    hot = k.body.data;
  });

  afterAll(async () => {
    await server?.kill();
  });

  const auth = () => ({ authorization: `Bearer ${rk}` });
  const json = () => ({ ...auth(), "content-type": "application/json" });

  /** The server still answers a normal verification, and the process is alive. */
  const stillServing = async () => {
    const v = await post(server.url, "/v2/keys.verifyKey", { key: hot.key }, rk, 5_000);
    expect(v.body?.data?.valid, `${v.status} ${v.failure ?? ""} ${v.text}`).toBe(true);
    expect(server.proc.exitCode).toBeNull();
  };

  const apiCount = async (): Promise<number> => {
    const [rows] = await h.db.pool.query("SELECT COUNT(*) AS n FROM apis WHERE workspace_id = ?", [h.workspaceId]);
    return Number((rows as Array<{ n: number }>)[0]?.n);
  };

  describe("body size", () => {
    const big = () => JSON.stringify({ name: "x".repeat(BODY_LIMIT) });

    it("a body past BODY_LIMIT_BYTES with a Content-Length -> 413 envelope", async () => {
      const ex = await exchange(server.port, [request("/v2/apis.createApi", big(), json())], { responses: 1 });
      expect(ex.responses.length, JSON.stringify(ex)).toBe(1);
      expectEnvelope(asAnswer(ex.responses[0]!), 413, "err:user:bad_request:request_body_too_large");
      await stillServing();
    });

    it("the same body sent chunked, without a Content-Length -> 413 envelope", async () => {
      const head = `POST /v2/apis.createApi HTTP/1.1\r\nhost: keyhold.test\r\nauthorization: Bearer ${rk}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`;
      const body = big();
      const chunks = [head];
      for (let at = 0; at < body.length; at += 8192) {
        const piece = body.slice(at, at + 8192);
        chunks.push(`${Buffer.byteLength(piece).toString(16)}\r\n${piece}\r\n`);
      }
      chunks.push("0\r\n\r\n");
      const ex = await exchange(server.port, chunks, { responses: 1 });
      expect(ex.responses.length, JSON.stringify(ex)).toBe(1);
      expectEnvelope(asAnswer(ex.responses[0]!), 413, "err:user:bad_request:request_body_too_large");
      await stillServing();
    });

    it("a body just under the limit is read (and judged on its content)", async () => {
      const body = JSON.stringify({ name: "x".repeat(BODY_LIMIT - 100) });
      const ex = await exchange(server.port, [request("/v2/apis.createApi", body, json())], { responses: 1 });
      // Too long a name for the API, but read: a 400 naming the field, not a 413.
      expectEnvelope(asAnswer(ex.responses[0]!), 400, "err:svc:application:invalid_input");
      expect(ex.responses[0]?.json.error.errors[0].location).toBe("body.name");
    });
  });

  describe("slow clients", () => {
    it("headers or a body sent a byte at a time are cut off with a 408 envelope; other clients are served meanwhile", async () => {
      const slowHeaders = `POST /v2/keys.verifyKey HTTP/1.1\r\nhost: keyhold.test\r\nx-slow: ${"a".repeat(200)}`.split("");
      const slowBody = [
        `POST /v2/keys.verifyKey HTTP/1.1\r\nhost: keyhold.test\r\nauthorization: Bearer ${rk}\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n`,
        ...`{"key":"${"a".repeat(480)}`.split(""),
      ];
      // A byte every 100 ms would keep each going for far longer than the deadlines.
      const slow = [
        ...Array.from({ length: 3 }, () => exchange(server.port, slowHeaders, { gapMs: 100, waitMs: 15_000 })),
        ...Array.from({ length: 3 }, () => exchange(server.port, slowBody, { gapMs: 100, waitMs: 15_000 })),
      ];
      let served = 0;
      let slowDone = false;
      void Promise.all(slow).then(() => {
        slowDone = true;
      });
      while (!slowDone) {
        const v = await post(server.url, "/v2/keys.verifyKey", { key: hot.key }, rk, 5_000);
        expect(v.body?.data?.valid, `${v.status} ${v.failure ?? ""} ${v.text}`).toBe(true);
        served++;
        await new Promise((r) => setTimeout(r, 50));
      }
      const results = await Promise.all(slow);
      for (const ex of results) {
        // Closed by the server well before our 15 s patience ran out, with a 408 envelope.
        expect(ex.closed, JSON.stringify(ex)).toBe(true);
        expect(ex.ms).toBeLessThan(12_000);
        expect(ex.responses.length, JSON.stringify(ex)).toBe(1);
        expectEnvelope(asAnswer(ex.responses[0]!), 408, "err:user:bad_request:request_timeout");
      }
      expect(served).toBeGreaterThan(10);
      await stillServing();
    }, 30_000);
  });

  describe("bytes that are not UTF-8", () => {
    it.each([
      ["a lone continuation byte", Buffer.from([0x80])],
      ["0xFF 0xFE", Buffer.from([0xff, 0xfe])],
      ["an overlong '/'", Buffer.from([0xc0, 0xaf])],
      ["an encoded surrogate", Buffer.from([0xed, 0xa0, 0x80])],
      ["a truncated sequence", Buffer.from([0xe2, 0x82])],
    ])("%s in a JSON string -> 400 envelope, nothing created", async (_label, bad) => {
      const before = await apiCount();
      const body = Buffer.concat([Buffer.from('{"name":"utf'), bad, Buffer.from('-api"}')]);
      const ex = await exchange(server.port, [request("/v2/apis.createApi", body, json())], { responses: 1 });
      const res = ex.responses[0]!;
      expectEnvelope(asAnswer(res), 400, "err:svc:application:invalid_input");
      expect(res.json.error.errors[0]).toMatchObject({ location: "body", message: expect.stringMatching(/UTF-8/) });
      expect(await apiCount()).toBe(before);
    });

    it("still answers 401 first when the root key is missing", async () => {
      const body = Buffer.concat([Buffer.from('{"name":"utf'), Buffer.from([0xff]), Buffer.from('"}')]);
      const ex = await exchange(server.port, [request("/v2/apis.createApi", body, { "content-type": "application/json" })], { responses: 1 });
      expectEnvelope(asAnswer(ex.responses[0]!), 401, "err:svc:authentication:missing");
    });

    it("valid multi-byte UTF-8 is stored as sent", async () => {
      const name = "ключ-😀-名前";
      const ex = await exchange(server.port, [request("/v2/apis.createApi", Buffer.from(JSON.stringify({ name }), "utf8"), json())], { responses: 1 });
      expect(ex.responses[0]?.status, ex.responses[0]?.body).toBe(200);
      const got = await post(server.url, "/v2/apis.getApi", { apiId: ex.responses[0]?.json.data.apiId }, rk);
      expect(got.body.data.name).toBe(name);
    });
  });

  describe("content types", () => {
    it.each([
      ["text/plain", 415],
      ["text/plain; charset=utf-8", 415],
      ["application/x-www-form-urlencoded", 415],
      ["multipart/form-data; boundary=x", 415],
      ["application/xml", 415],
      ["application/problem+json", 415],
      ["application/jsonp", 415],
      ["application/json; charset=latin1", 415],
      ["application/json; charset=utf-16", 415],
      ["application/json", 200],
      ["Application/JSON", 200],
      ["application/json; charset=utf-8", 200],
      ['application/json;charset="UTF-8"', 200],
      ["application/json; charset=utf8", 200],
      [undefined, 200],
    ])("Content-Type %s -> %i", async (type, status) => {
      const headers = type === undefined ? auth() : { ...auth(), "content-type": type };
      const ex = await exchange(server.port, [request("/v2/apis.createApi", JSON.stringify({ name: "media-type" }), headers)], { responses: 1 });
      const res = ex.responses[0]!;
      if (status === 200) {
        expect(res.status, res.body).toBe(200);
        expect(res.json.data.apiId).toMatch(/^api_/);
      } else {
        expectEnvelope(asAnswer(res), 415, "err:svc:application:unsupported_media_type");
      }
    });
  });

  describe("HTTP/1.1 on one socket", () => {
    it("10 pipelined requests in one write get 10 correct responses, in order", async () => {
      const keys: Array<{ keyId: string }> = [];
      for (let i = 0; i < 5; i++) keys.push((await post(server.url, "/v2/keys.createKey", { apiId, name: `pipe-${i}` }, rk)).body.data);
      // Interleave reads of five keys with requests for five unknown operations, each naming itself.
      const reqs = Array.from({ length: 10 }, (_, i) =>
        i % 2 === 0 ? request("/v2/keys.getKey", JSON.stringify({ keyId: keys[i / 2]?.keyId }), json()) : request(`/v2/nothing.here${i}`, "{}", json()),
      );
      const ex = await exchange(server.port, [Buffer.concat(reqs)], { responses: 10 });
      expect(ex.responses.length, JSON.stringify(ex)).toBe(10);
      ex.responses.forEach((res, i) => {
        if (i % 2 === 0) {
          expect(res.status, res.body).toBe(200);
          expect(res.json.data).toMatchObject({ keyId: keys[i / 2]?.keyId, name: `pipe-${i / 2}` });
        } else {
          expectEnvelope(asAnswer(res), 404, "err:svc:data:route_not_found");
          expect(res.json.error.detail).toContain(`nothing.here${i}`);
        }
      });
      expect(new Set(ex.responses.map((r) => r.json.meta.requestId)).size).toBe(10);
    });
  });

  describe("headers", () => {
    it.each([
      ["3,000 headers", Array.from({ length: 3000 }, (_, i) => [`x-h-${i}`, "v".repeat(20)])],
      ["one 100 kB header", [["x-big", "v".repeat(100_000)]]],
    ])("%s -> 431 envelope, connection closed, server keeps serving", async (_label, extra) => {
      const ex = await exchange(server.port, [request("/v2/keys.verifyKey", JSON.stringify({ key: hot.key }), { ...json(), ...Object.fromEntries(extra) })]);
      expect(ex.closed).toBe(true);
      expect(ex.responses.length, JSON.stringify(ex)).toBe(1);
      expectEnvelope(asAnswer(ex.responses[0]!), 431, "err:user:bad_request:request_headers_too_large");
      await stillServing();
    });
  });

  describe("malformed requests", () => {
    it.each([
      ["a request line that is not HTTP", "GARBAGE NONSENSE\r\n\r\n"],
      ["an unknown HTTP version", "POST /v2/keys.verifyKey HTTP/9.9\r\nhost: x\r\n\r\n"],
      ["a space in the target", "POST /v2/keys verifyKey HTTP/1.1\r\nhost: x\r\n\r\n"],
      ["a header without a colon", "POST /v2/keys.verifyKey HTTP/1.1\r\nhost x\r\n\r\n"],
      ["both Content-Length and chunked", "POST /v2/keys.verifyKey HTTP/1.1\r\nhost: x\r\ncontent-length: 4\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"],
      ["a bad chunk size", "POST /v2/keys.verifyKey HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"],
    ])("%s -> 400 envelope and close", async (_label, raw) => {
      const ex = await exchange(server.port, [raw]);
      expect(ex.closed).toBe(true);
      expect(ex.responses.length, JSON.stringify(ex)).toBe(1);
      expectEnvelope(asAnswer(ex.responses[0]!), 400, "err:user:bad_request:request_body_unreadable");
      await stillServing();
    });
  });

  describe("clients that go away", () => {
    it("clients disconnecting mid-request do not disturb others, and create nothing", async () => {
      const before = await apiCount();
      const body = JSON.stringify({ name: "never-finished" });
      const half = request("/v2/apis.createApi", body, json()).subarray(0, -10);
      const quitters = Array.from({ length: 20 }, async () => {
        const socket = net.connect(server.port, "127.0.0.1");
        await new Promise((r) => socket.once("connect", r));
        socket.write(half);
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 200));
        socket.destroy();
      });
      const others = Array.from({ length: 20 }, () => post(server.url, "/v2/keys.verifyKey", { key: hot.key }, rk, 5_000));
      await Promise.all(quitters);
      for (const v of await Promise.all(others)) expect(v.body?.data?.valid, v.text).toBe(true);
      expect(await apiCount()).toBe(before);
      await stillServing();
    });
  });

  describe("the gRPC port", () => {
    it("garbage, HTTP/1.1 and a broken HTTP/2 stream are dropped; gRPC keeps serving", async () => {
      const junk = [
        [Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))],
        ["GET / HTTP/1.1\r\nhost: x\r\n\r\n"],
        [request("/keyhold.v2.KeysService/VerifyKey", "{}", json())],
        // The HTTP/2 preface, then a frame header promising more than follows.
        ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", Buffer.from([0x00, 0xff, 0xff, 0x01, 0x05, 0x00, 0x00, 0x00, 0x01, 0x01])],
      ];
      for (const pieces of junk) {
        const ex = await exchange(server.grpcPort, pieces, { waitMs: 5_000 });
        // Closed by the server (not left hanging until our patience ran out).
        expect(ex.closed, JSON.stringify(ex)).toBe(true);
      }
      const Keys = service(loadServices("keys_service.proto"), "KeysService");
      const client = new Keys(`127.0.0.1:${server.grpcPort}`, grpc.credentials.createInsecure());
      try {
        const res = await call<{ valid: boolean }>(client, "verifyKey", { key: hot.key }, bearer(rk));
        expect(res.valid).toBe(true);
      } finally {
        client.close();
      }
      await stillServing();
    });
  });

  it("logged no unexpected error and blamed no client's reset on the database", () => {
    const errors = server
      .output()
      .split("\n")
      .filter((l) => l.includes('"level":50') || l.includes('"level":60'));
    expect(errors).toEqual([]);
  });
});
