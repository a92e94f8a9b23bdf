// Request bodies on the HTTP port (JSON /v2, Connect, gRPC-Web), read by the
// doors themselves after the caller is authenticated, never before: a body is
// bounded while it streams in (the declared Content-Length first, then the bytes
// counted), and a compressed one is inflated only up to the same bound, so
// neither a large body nor a small gzip bomb can make the process hold more for
// one request than one limit of raw bytes, one of inflated bytes and what the
// parse of the latter makes of them.
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { promisify } from "node:util";
import zlib from "node:zlib";
import type { FastifyInstance } from "fastify";
import { AppError } from "../core/errors.js";

/** The Content-Encodings the HTTP doors accept (and Connect advertises for its answers). */
export const REQUEST_ENCODINGS = ["gzip", "br"] as const;
export type RequestEncoding = (typeof REQUEST_ENCODINGS)[number];

/** The value of an Accept-Encoding header that tells a client what we take (RFC 7694). */
export const ACCEPTED_ENCODINGS_HEADER = REQUEST_ENCODINGS.join(", ");

/**
 * Leaves every body of this Fastify scope to its handlers: no parser reads a
 * byte, whatever the media type. `named` are the media types the door mostly
 * sees, registered by name as well as under the catch-all: Fastify remembers
 * the parser it found for a media type by name, but looks the catch-all up
 * anew (parsing the header again) for every request.
 */
export function bodyReadByHandler(app: FastifyInstance, named: readonly string[]): void {
  app.removeAllContentTypeParsers();
  const later = (_req: unknown, _payload: unknown, done: (err: null, body: undefined) => void) => done(null, undefined);
  for (const type of named) app.addContentTypeParser(type, later);
  app.addContentTypeParser("*", later);
}

export const bodyTooLarge = (limit: number): AppError =>
  new AppError("err:user:bad_request:request_body_too_large", `The request body is larger than the server accepts (${limit} bytes).`);

/**
 * The encoding named by a Content-Encoding (or grpc-encoding) header; undefined
 * for none or `identity`. Anything else, a list of codings included, is a 415:
 * the body would otherwise be read as something it is not.
 */
export function requestEncoding(header: string | undefined, headerName = "Content-Encoding"): RequestEncoding | undefined {
  if (header === undefined) return undefined;
  const v = header.trim().toLowerCase();
  if (v === "" || v === "identity") return undefined;
  if ((REQUEST_ENCODINGS as readonly string[]).includes(v)) return v as RequestEncoding;
  throw new AppError(
    "err:svc:application:unsupported_media_type",
    `${headerName} ${JSON.stringify(header.slice(0, 64))} is not supported; send the body as it is, or as ${REQUEST_ENCODINGS.join(" or ")}.`,
  );
}

/**
 * Reads the whole body, refusing it as soon as it is known to be over `limit`:
 * at once from Content-Length, otherwise when the count passes it. Reading then
 * stops; the answer goes out through writeAnswer, which closes the connection.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > limit) return Promise.reject(bodyTooLarge(limit));
  if (req.readableEnded) return Promise.resolve(Buffer.alloc(0));
  const gone = () => new AppError("err:user:bad_request:request_body_unreadable", "The request body could not be read to its end.");
  // The client may have gone while the caller was authenticated: its events have fired already.
  if (req.destroyed || req.readableAborted) return Promise.reject(gone());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const done = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("aborted", onError);
      req.off("close", onClose);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) {
        done();
        req.pause();
        reject(bodyTooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, received));
    };
    const onError = () => {
      done();
      reject(gone());
    };
    // Closed before its end: whatever ended it, the body will not come.
    const onClose = () => {
      if (!req.readableEnded) onError();
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("aborted", onError);
    req.on("close", onClose);
  });
}

/**
 * The whole body at once when it has all arrived already and nothing has read
 * it yet: a small body comes with its headers, and Node has buffered it by the
 * time the handler has waited one microtask. Taken from the stream's buffer without
 * a promise or listeners (what readBody costs is most of what this saves: ~1 µs
 * a request here). undefined = read it with readBody.
 */
export function readBodyNow(req: IncomingMessage, limit: number): Buffer | undefined {
  if (req.readableFlowing !== null || req.destroyed || req.readableLength > limit) return undefined;
  // All in: the parser saw its end, or the declared length is buffered (its end may be parsed a moment later).
  const declared = req.headers["content-length"];
  if (!req.complete && (declared === undefined || req.readableLength !== Number(declared))) return undefined;
  if (req.readableLength === 0) return req.readableEnded ? Buffer.alloc(0) : undefined;
  const chunk = req.read() as Buffer | null;
  if (chunk === null) return undefined;
  // Its end not parsed yet: flowing from now on, so the stream ends (and says so)
  // when it is, and marked as taken till then.
  if (!req.complete) {
    markTaken(req);
    req.resume();
  }
  // One read() of a paused stream returns its whole buffer; anything left is taken too.
  return req.readableLength > 0 ? Buffer.concat([chunk, ...drain(req)]) : chunk;
}

/**
 * Requests whose body readBodyNow took before Node parsed its end, till the end
 * of this event-loop turn. All of such a body was buffered, so Node parses its
 * end in the same read of the socket, before the turn is over: the mark is only
 * needed for an answer written in between (by a microtask that runs between the
 * parser's callbacks, which happens to nearly every request under load). It was
 * a WeakSet: its add was ~1,300 instructions a request (callgrind, ratelimit.limit),
 * a list is a push, and a request's mark is looked for only by an error answer.
 */
let taken: IncomingMessage[] = [];
const forgetTaken = (): void => {
  taken = [];
};
function markTaken(req: IncomingMessage): void {
  if (taken.length === 0) setImmediate(forgetTaken);
  taken.push(req);
}

/**
 * Whether the whole body is in: Node has parsed its end, or readBodyNow took all
 * of it a moment before that (an answer to such a request need not close the
 * connection: nothing of the body is left to come). Only an explicit
 * `complete === false` is incomplete: a request injected in tests has no flag.
 */
export const bodyComplete = (req: IncomingMessage): boolean => req.complete !== false || taken.includes(req);

function drain(req: IncomingMessage): Buffer[] {
  const rest: Buffer[] = [];
  for (let c = req.read() as Buffer | null; c !== null; c = req.read() as Buffer | null) rest.push(c);
  return rest;
}

const gunzip = promisify(zlib.gunzip);
const brotliDecompress = promisify(zlib.brotliDecompress);

/**
 * Inflates a compressed body, stopping as soon as the output passes `limit`
 * (zlib's maxOutputLength: the inflater is abandoned there, the rest never
 * produced). Bytes that are not what the encoding says are a 400.
 */
export async function inflate(bytes: Buffer, encoding: RequestEncoding | undefined, limit: number): Promise<Buffer> {
  if (encoding === undefined) return bytes;
  try {
    return encoding === "gzip" ? await gunzip(bytes, { maxOutputLength: limit }) : await brotliDecompress(bytes, { maxOutputLength: limit });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE") throw bodyTooLarge(limit);
    throw new AppError("err:user:bad_request:request_body_unreadable", `The request body is not valid ${encoding} data.`);
  }
}

/** How long an answer waits to end while a body it did not read is still arriving. */
export const LINGER_MS = 500;

/**
 * Writes a whole answer. To a request whose body is not all in (refused for its
 * credentials, its size or its media type before or while it was read), the
 * answer says `Connection: close`: otherwise Node would go on reading (and
 * discarding) the body to its end, gigabytes if the client likes, to keep the
 * connection. But closing a socket with unread bytes resets it, and a client
 * still sending loses the answer with the reset. So the answer is written at
 * once and ended (and the connection closed) when the body has arrived,
 * discarded as it comes, or LINGER_MS later, whichever is first: the lingering
 * close of RFC 9112 §9.6, bounded in time.
 */
export function writeAnswer(req: IncomingMessage, res: ServerResponse, status: number, headers: OutgoingHttpHeaders, body: Uint8Array | string): void {
  const complete = bodyComplete(req);
  res.writeHead(status, { ...headers, "content-length": Buffer.byteLength(body), ...(complete ? {} : { connection: "close" }) });
  if (complete) {
    res.end(body);
    return;
  }
  res.write(body);
  const end = () => {
    clearTimeout(timer);
    if (!res.writableEnded) res.end();
  };
  const timer = setTimeout(end, LINGER_MS);
  timer.unref();
  req.once("end", end);
  req.once("close", end);
  req.resume();
}
