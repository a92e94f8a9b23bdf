// The same hostile requests sent through every front door of a running keyhold:
// JSON /v2, Connect (JSON and binary), gRPC-Web and gRPC. Each answer is read
// back into one shape (status, error code, field locations, request id), so a
// test can hold every door to the same expectation. Bodies are written as
// streams, the way a client that does not wait for permission sends them; an
// answer that arrives while the body is still going out is taken as the answer.
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import http2 from "node:http2";
import zlib from "node:zlib";
import { fromBinary } from "@bufbuild/protobuf";
import { base64Decode } from "@bufbuild/protobuf/wire";
import * as grpc from "@grpc/grpc-js";
import { type ErrorInfo, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type ErrorDetail, ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { errorDetailOf, errorInfoOf } from "../grpc-client.js";

export type DoorName = "json" | "connect-json" | "connect-proto" | "grpc-web" | "grpc";
export const DOORS: DoorName[] = ["json", "connect-json", "connect-proto", "grpc-web", "grpc"];

export interface Target {
  url: string;
  grpcPort: number;
  rootKey: string;
}

/** One answer, whichever door gave it. */
export interface Outcome {
  /** The HTTP status (JSON and Connect), or 200 for gRPC-Web and gRPC (their status is `grpc`). */
  http: number;
  /** The gRPC status number (gRPC-Web and gRPC), or Connect's code string, when there is one. */
  rpc?: number | string | undefined;
  /** The err:… code, from the JSON envelope's type or the ErrorDetail. */
  code?: string | undefined;
  locations: string[];
  messages: string[];
  requestId?: string | undefined;
  /** The google.rpc.ErrorInfo beside the ErrorDetail (Connect, gRPC-Web and gRPC). */
  info?: ErrorInfo | undefined;
  /** The client could not read an answer at all (a reset before it). */
  failure?: string | undefined;
}

const MiB = 1024 * 1024;
export const OVERSIZE = 40 * MiB;
const PATH_JSON = "/v2/keys.verifyKey";
const PATH_RPC = "/keyhold.v2.KeysService/VerifyKey";

// ---- bodies -----------------------------------------------------------------

/** A protobuf length-delimited field 1 (VerifyKeyRequest.key) holding `text`. */
function protoKey(text: Buffer): Buffer {
  const len: number[] = [];
  let n = text.length;
  while (n > 0x7f) {
    len.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  len.push(n);
  return Buffer.concat([Buffer.from([0x0a, ...len]), text]);
}

/** A gRPC / gRPC-Web length-prefixed message. */
export function envelope(message: Buffer, compressed = false, declared = message.length): Buffer {
  const head = Buffer.alloc(5);
  head[0] = compressed ? 1 : 0;
  head.writeUInt32BE(declared, 1);
  return Buffer.concat([head, message]);
}

let bombCache: Buffer | undefined;
/** 300 MB of zeros, gzipped to about 300 KB. */
export function gzipBomb(): Buffer {
  bombCache ??= zlib.gzipSync(Buffer.alloc(300 * MiB), { level: 9 });
  return bombCache;
}

export type Attack =
  | "valid"
  | "oversize without credentials"
  | "oversize, chunked, without credentials"
  | "oversize"
  | "oversize, chunked"
  | "gzip bomb without credentials"
  | "gzip bomb"
  | "truncated"
  | "garbage"
  | "unknown field"
  | "doubled credentials";

export const ATTACKS: Attack[] = [
  "valid",
  "oversize without credentials",
  "oversize, chunked, without credentials",
  "oversize",
  "oversize, chunked",
  "gzip bomb without credentials",
  "gzip bomb",
  "truncated",
  "garbage",
  "unknown field",
  "doubled credentials",
];

interface Request {
  body: Buffer;
  /** Credentials: none, one root key, or the root key twice. */
  auth: 0 | 1 | 2;
  /** Content-Encoding (HTTP doors) / grpc-encoding (framed doors). */
  encoding?: "gzip";
  /** Send without Content-Length (chunked), so the server cannot refuse it from the header. */
  chunked?: boolean;
}

const isJson = (door: DoorName) => door === "json" || door === "connect-json";
const isFramed = (door: DoorName) => door === "grpc-web" || door === "grpc";

/** The request an attack sends through a door. */
export function requestFor(door: DoorName, attack: Attack): Request {
  const valid = isJson(door) ? Buffer.from('{"key":"not_a_key_but_long_enough"}') : protoKey(Buffer.from("not_a_key_but_long_enough"));
  const frame = (b: Buffer, compressed = false) => (isFramed(door) ? envelope(b, compressed) : b);
  const oversize = isJson(door)
    ? Buffer.concat([Buffer.from('{"key":"'), Buffer.alloc(OVERSIZE, 0x61), Buffer.from('"}')])
    : protoKey(Buffer.alloc(OVERSIZE, 0x61));
  switch (attack) {
    case "valid":
      return { body: frame(valid), auth: 1 };
    case "oversize without credentials":
      return { body: frame(oversize), auth: 0 };
    case "oversize, chunked, without credentials":
      return { body: frame(oversize), auth: 0, chunked: true };
    case "oversize":
      return { body: frame(oversize), auth: 1 };
    case "oversize, chunked":
      return { body: frame(oversize), auth: 1, chunked: true };
    case "gzip bomb without credentials":
      return { body: frame(gzipBomb(), true), auth: 0, encoding: "gzip" };
    case "gzip bomb":
      return { body: frame(gzipBomb(), true), auth: 1, encoding: "gzip" };
    case "truncated":
      if (isJson(door)) return { body: Buffer.from('{"key":"not_a_k'), auth: 1 };
      // Framed: the envelope announces more bytes than follow. Binary: a string field cut short.
      return { body: isFramed(door) ? envelope(valid, false, valid.length + 20) : valid.subarray(0, 5), auth: 1 };
    case "garbage":
      return { body: frame(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff])), auth: 1 };
    case "unknown field":
      // JSON: a misspelt field; binary: field number 31 (varint 1), which VerifyKeyRequest does not have.
      return {
        body: isJson(door) ? Buffer.from('{"key":"not_a_key_but_long_enough","zz":1}') : frame(Buffer.concat([valid, Buffer.from([0xf8, 0x01, 0x01])])),
        auth: 1,
      };
    case "doubled credentials":
      return { body: frame(valid), auth: 2 };
  }
}

// ---- answers ----------------------------------------------------------------

/** `https://…/errors-v2/svc/authentication/missing` -> `err:svc:authentication:missing`. */
const codeOfType = (type: string): string | undefined => {
  const tail = type.split("/errors-v2/")[1];
  return tail === undefined ? undefined : `err:${tail.split("/").join(":")}`;
};

function fromDetail(d: ErrorDetail | undefined, out: Outcome): void {
  if (d === undefined) return;
  out.code = d.code;
  out.requestId = d.requestId;
  out.locations = d.errors.map((e) => e.location);
  out.messages = d.errors.map((e) => e.message);
}

/** The keyhold.v2.ErrorDetail and google.rpc.ErrorInfo inside google.rpc.Status (grpc-status-details-bin). */
const fromStatusDetails = (bin: Uint8Array, out: Outcome): void => {
  fromDetail(errorDetailOf(bin), out);
  out.info = errorInfoOf(bin);
};

function readHttpAnswer(door: DoorName, status: number, headers: http.IncomingHttpHeaders, body: Buffer): Outcome {
  const out: Outcome = { http: status, locations: [], messages: [], requestId: headers["x-request-id"] as string | undefined };
  if (door === "json") {
    try {
      const j = JSON.parse(body.toString());
      out.requestId = j.meta?.requestId ?? out.requestId;
      if (j.error !== undefined) {
        out.code = codeOfType(j.error.type);
        out.locations = (j.error.errors ?? []).map((e: { location: string }) => e.location);
        out.messages = [j.error.detail, ...(j.error.errors ?? []).map((e: { message: string }) => e.message)];
      }
    } catch {
      out.failure = `not JSON: ${body.subarray(0, 200).toString()}`;
    }
    return out;
  }
  if (door === "grpc-web") {
    // Envelopes; the one flagged 0x80 holds the trailers as HTTP header lines.
    const trailers: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) if (typeof v === "string") trailers[k] = v;
    let at = 0;
    while (at + 5 <= body.length) {
      const flags = body[at] as number;
      const len = body.readUInt32BE(at + 1);
      const data = body.subarray(at + 5, at + 5 + len);
      if (flags & 0x80) {
        for (const line of data.toString().split("\r\n")) {
          const i = line.indexOf(":");
          if (i > 0) trailers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
      }
      at += 5 + len;
    }
    out.rpc = trailers["grpc-status"] === undefined ? undefined : Number(trailers["grpc-status"]);
    const bin = trailers["grpc-status-details-bin"];
    if (bin !== undefined) fromStatusDetails(base64Decode(bin), out);
    return out;
  }
  // Connect unary: an error is a JSON object {code, message, details: [{type, value}]}.
  if (status !== 200) {
    try {
      const j = JSON.parse(body.toString());
      out.rpc = j.code;
      const d = (j.details ?? []).find((x: { type: string }) => x.type === "keyhold.v2.ErrorDetail");
      if (d !== undefined) fromDetail(fromBinary(ErrorDetailSchema, base64Decode(d.value)), out);
      const info = (j.details ?? []).find((x: { type: string }) => x.type === "google.rpc.ErrorInfo");
      if (info !== undefined) out.info = fromBinary(ErrorInfoSchema, base64Decode(info.value));
    } catch {
      out.failure = `not a Connect error: ${body.subarray(0, 200).toString()}`;
    }
  } else out.rpc = "ok";
  return out;
}

/** Writes `body` in 1 MiB pieces as fast as the socket takes them, and resolves with the first answer. */
function sendHttp(target: Target, door: DoorName, req: Request): Promise<Outcome> {
  const url = new URL(door === "json" ? PATH_JSON : PATH_RPC, target.url);
  const contentType = {
    json: "application/json",
    "connect-json": "application/json",
    "connect-proto": "application/proto",
    "grpc-web": "application/grpc-web+proto",
    grpc: "",
  }[door];
  const headers: http.OutgoingHttpHeaders = { "content-type": contentType };
  // Node sends one header line per value of an array.
  if (req.auth > 0)
    (headers as Record<string, string | string[]>).authorization =
      req.auth === 2 ? [`Bearer ${target.rootKey}`, `Bearer ${target.rootKey}`] : `Bearer ${target.rootKey}`;
  if (req.encoding !== undefined) headers[door === "grpc-web" ? "grpc-encoding" : "content-encoding"] = req.encoding;
  if (!req.chunked) headers["content-length"] = req.body.length;
  return new Promise((resolve) => {
    let settled = false;
    const settle = (o: Outcome) => {
      if (!settled) {
        settled = true;
        resolve(o);
      }
    };
    const r = http.request(url, { method: "POST", headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => settle(readHttpAnswer(door, res.statusCode ?? 0, res.headers, Buffer.concat(chunks))));
      res.on("error", (e) => settle({ http: 0, locations: [], messages: [], failure: e.message }));
    });
    // A write refused after the server has answered and closed is expected; the answer is what counts.
    r.on("error", (e) => setTimeout(() => settle({ http: 0, locations: [], messages: [], failure: e.message }), 200));
    let at = 0;
    const pump = () => {
      while (at < req.body.length) {
        const piece = req.body.subarray(at, at + MiB);
        at += piece.length;
        if (!r.write(piece)) {
          r.once("drain", pump);
          return;
        }
      }
      r.end();
    };
    pump();
  });
}

/** gRPC over HTTP/2 with the frames given as they are (grpc-js would frame and compress them itself). */
function sendH2(target: Target, req: Request): Promise<Outcome> {
  return new Promise((resolve) => {
    const session = http2.connect(`http://127.0.0.1:${target.grpcPort}`);
    const headers: http2.OutgoingHttpHeaders = { ":method": "POST", ":path": PATH_RPC, "content-type": "application/grpc", te: "trailers" };
    if (req.auth === 1) headers.authorization = `Bearer ${target.rootKey}`;
    if (req.encoding !== undefined) headers["grpc-encoding"] = req.encoding;
    const out: Outcome = { http: 0, locations: [], messages: [] };
    const fields: Record<string, string> = {};
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") fields[k] = v;
    };
    const stream = session.request(headers);
    stream.on("response", (h) => {
      out.http = Number(h[":status"]);
      take(h);
    });
    stream.on("trailers", take);
    stream.on("data", () => undefined);
    stream.on("error", (e) => {
      out.failure = e.message;
    });
    stream.on("close", () => {
      session.close();
      if (fields["grpc-status"] !== undefined) {
        out.rpc = Number(fields["grpc-status"]);
        out.failure = undefined;
      }
      out.requestId = fields["request-id"];
      const bin = fields["grpc-status-details-bin"];
      if (bin !== undefined) fromStatusDetails(base64Decode(bin), out);
      resolve(out);
    });
    stream.end(req.body);
  });
}

/** gRPC through grpc-js, which sends a large message within HTTP/2 flow control (the raw client above would not). */
function sendGrpcJs(target: Target, message: Buffer, auth: boolean): Promise<Outcome> {
  const client = new grpc.Client(`127.0.0.1:${target.grpcPort}`, grpc.credentials.createInsecure());
  const md = new grpc.Metadata();
  if (auth) md.set("authorization", `Bearer ${target.rootKey}`);
  const id = (b: Buffer) => b;
  return new Promise((resolve) => {
    client.makeUnaryRequest(PATH_RPC, id, id, message, md, { deadline: Date.now() + 30_000 }, (err) => {
      client.close();
      const out: Outcome = { http: 200, rpc: err?.code ?? 0, locations: [], messages: [] };
      const bin = err?.metadata?.get("grpc-status-details-bin")[0];
      if (bin instanceof Buffer) fromStatusDetails(bin, out);
      resolve(out);
    });
  });
}

/**
 * Two `authorization` fields on one gRPC call: Node's HTTP/2 client refuses to
 * send them (a single-value header), so curl sends this one. Without a message:
 * the call is refused on its metadata alone, and curl (7.88) can miss the end of
 * a stream answered while it is still uploading.
 */
function sendDoubledGrpc(target: Target): Promise<Outcome> {
  const args = [
    "-sS",
    "--max-time",
    "20",
    "-D",
    "-",
    "-o",
    "/dev/null",
    "--http2-prior-knowledge",
    "-X",
    "POST",
    `http://127.0.0.1:${target.grpcPort}${PATH_RPC}`,
    "-H",
    "content-type: application/grpc",
    "-H",
    "te: trailers",
    "-H",
    `authorization: Bearer ${target.rootKey}`,
    "-H",
    `authorization: Bearer ${target.rootKey}`,
  ];
  return new Promise((resolve) => {
    const curl = spawn("curl", args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    curl.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    curl.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    curl.on("error", (e) => resolve({ http: 0, locations: [], messages: [], failure: `curl: ${e.message}` }));
    curl.on("close", () => {
      const out: Outcome = { http: 0, locations: [], messages: [] };
      const fields: Record<string, string> = {};
      for (const line of stdout.split(/\r?\n/)) {
        const i = line.indexOf(":");
        if (line.startsWith("HTTP/")) out.http = Number(line.split(" ")[1]);
        else if (i > 0) fields[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
      }
      if (out.http === 0) out.failure = `curl printed no answer: ${stderr}`;
      out.rpc = fields["grpc-status"] === undefined ? undefined : Number(fields["grpc-status"]);
      const bin = fields["grpc-status-details-bin"];
      if (bin !== undefined) fromStatusDetails(base64Decode(bin), out);
      resolve(out);
    });
  });
}

/** Sends one attack through one door and reads the answer. */
export function send(target: Target, door: DoorName, attack: Attack): Promise<Outcome> {
  const req = requestFor(door, attack);
  if (door !== "grpc") return sendHttp(target, door, req);
  if (req.auth === 2) return sendDoubledGrpc(target);
  if (attack.startsWith("oversize")) return sendGrpcJs(target, req.body.subarray(5), req.auth === 1);
  return sendH2(target, req);
}

// ---- memory -----------------------------------------------------------------

const statusField = (pid: number, name: string): number => {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`));
  return Number(/(\d+)/.exec(line ?? "")?.[1] ?? Number.NaN) * 1024;
};

/** Resident set size now, in bytes. */
export const rssOf = (pid: number): number => statusField(pid, "VmRSS");
/** The peak resident set size since the last resetPeak, in bytes. */
export const peakRssOf = (pid: number): number => statusField(pid, "VmHWM");
/** Starts a new peak from the current RSS (Linux: clear_refs 5). */
export const resetPeak = (pid: number): void => writeFileSync(`/proc/${pid}/clear_refs`, "5");
