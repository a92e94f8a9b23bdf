// HTTP/1.1 spoken by hand over a TCP socket, for what no well-behaved client
// sends: pipelined requests in one write, broken request lines, header floods,
// bodies that trickle in or stop half way.
import net from "node:net";
import type { Answer } from "./client.js";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by assertions
  json: any;
}

export interface Exchange {
  responses: RawResponse[];
  /** The server closed the connection (or reset it) before we gave up. */
  closed: boolean;
  /** The socket failed (ECONNRESET after the answer is normal for a refused request). */
  error: string | undefined;
  ms: number;
}

export interface ExchangeOptions {
  /** Stop once this many responses have arrived (default: wait for the close). */
  responses?: number;
  /** Give up (and destroy the socket) after this long. */
  waitMs?: number;
  /** Pause between the pieces written. */
  gapMs?: number;
}

/** Writes the pieces in order on one connection and collects what comes back. */
export function exchange(port: number, pieces: Array<string | Buffer>, opts: ExchangeOptions = {}): Promise<Exchange> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let received = Buffer.alloc(0);
    let error: string | undefined;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ responses: parseResponses(received), closed, error, ms: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), opts.waitMs ?? 10_000);
    socket.on("data", (d) => {
      received = Buffer.concat([received, d]);
      if (opts.responses !== undefined && parseResponses(received).length >= opts.responses) finish(false);
    });
    socket.on("error", (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    socket.on("close", () => finish(true));
    socket.once("connect", async () => {
      for (const [i, piece] of pieces.entries()) {
        if (done || socket.destroyed) return;
        if (i > 0 && opts.gapMs) await new Promise((r) => setTimeout(r, opts.gapMs));
        socket.write(piece);
      }
    });
  });
}

/** Every complete response in the bytes (Content-Length or chunked bodies). */
export function parseResponses(buf: Buffer): RawResponse[] {
  const out: RawResponse[] = [];
  let at = 0;
  for (;;) {
    const headEnd = buf.indexOf("\r\n\r\n", at);
    if (headEnd < 0) return out;
    const [statusLine = "", ...lines] = buf.subarray(at, headEnd).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let pos = headEnd + 4;
    let body: Buffer;
    if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
      const parts: Buffer[] = [];
      for (;;) {
        const lineEnd = buf.indexOf("\r\n", pos);
        if (lineEnd < 0) return out;
        const size = Number.parseInt(buf.subarray(pos, lineEnd).toString("latin1"), 16);
        if (buf.length < lineEnd + 2 + size + 2) return out;
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size));
        pos = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(parts);
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (buf.length < pos + length) return out;
      body = buf.subarray(pos, pos + length);
      pos += length;
    }
    const text = body.toString("utf8");
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    out.push({ status: Number(statusLine.split(" ")[1]), headers, body: text, json });
    at = pos;
  }
}

/** One POST, spelled out: the headers given (no Content-Type unless given), Content-Length from the body. */
export function request(path: string, body: string | Buffer, headers: Record<string, string> = {}): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body) : body;
  const head = Object.entries({ host: "keyhold.test", "content-length": String(bytes.length), ...headers })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  return Buffer.concat([Buffer.from(`POST ${path} HTTP/1.1\r\n${head}\r\n`, "latin1"), bytes]);
}

/** The response as client.ts's Answer, for its envelope assertions. */
export const asAnswer = (r: RawResponse): Answer => ({ status: r.status, body: r.json, text: r.body, contentType: r.headers["content-type"] ?? "", ms: 0 });

export interface Sent {
  /** performance.now() when the request's bytes were handed to the kernel (the write callback ran). */
  writtenAt: number;
  /** The complete response, or how the connection ended instead. */
  response: RawResponse | undefined;
  /** `closed` (no byte of a response), `partial` (a response cut off), or a socket error code. */
  failure: string | undefined;
}

/** One keep-alive HTTP/1.1 connection, one request at a time, that records when each request was written. */
export class KeepAlive {
  private buf = Buffer.alloc(0);
  private waiting: ((s: Omit<Sent, "writtenAt">) => void) | undefined;
  private socketError: string | undefined;
  closed = false;

  private constructor(private readonly socket: net.Socket) {
    socket.on("data", (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      const [first] = parseResponses(this.buf);
      if (first === undefined || this.waiting === undefined) return;
      this.buf = Buffer.alloc(0);
      const done = this.waiting;
      this.waiting = undefined;
      done({ response: first, failure: undefined });
    });
    socket.on("error", (e: NodeJS.ErrnoException) => {
      this.socketError = e.code ?? e.message;
    });
    socket.on("close", () => {
      this.closed = true;
      const done = this.waiting;
      this.waiting = undefined;
      done?.({ response: undefined, failure: this.buf.length > 0 ? "partial" : (this.socketError ?? "closed") });
    });
  }

  static open(port: number): Promise<KeepAlive> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1");
      socket.once("connect", () => resolve(new KeepAlive(socket)));
      socket.once("error", reject);
    });
  }

  send(req: Buffer): Promise<Sent> {
    return new Promise((resolve) => {
      let writtenAt = Number.POSITIVE_INFINITY;
      this.waiting = (s) => resolve({ writtenAt, ...s });
      this.socket.write(req, (err) => {
        if (!err) writtenAt = performance.now();
      });
    });
  }

  close(): void {
    this.socket.destroy();
  }
}
