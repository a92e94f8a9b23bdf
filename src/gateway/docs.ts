// The API reference page at /docs: Scalar's renderer over this server's own
// /openapi.json. The plugin serves Scalar's script itself, and everything that
// would reach another host is off: web fonts, telemetry, the agent chat, the
// "Generate MCP" button and the developer toolbar (the last three are shown by
// default on localhost), and the "Open API Client" link to Scalar's hosted
// client. No request proxy is set, so "Test Request" calls this origin. The
// page's Content-Security-Policy holds it to that: it may load and connect to
// nothing but this origin.
import { createHash } from "node:crypto";
import { promisify } from "node:util";
import { gzip } from "node:zlib";
import scalar from "@scalar/fastify-api-reference";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

const gzipAsync = promisify(gzip);

const INLINE_SCRIPT = /<script\b[^>]*>([\s\S]*?)<\/script>/g;

/** The policy for an HTML page of the reference: its own inline scripts (by hash) and same-origin everything else. */
function contentSecurityPolicy(html: string): string {
  const hashes = [...html.matchAll(INLINE_SCRIPT)]
    .map((m) => m[1] ?? "")
    .filter((body) => body.trim() !== "")
    .map((body) => `'sha256-${createHash("sha256").update(body).digest("base64")}'`);
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes.join(" ")}`,
    // Scalar sets inline style attributes and injects its stylesheet at run time.
    "style-src 'self' 'unsafe-inline'",
    "connect-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/**
 * Scalar's script is 4.3 MB and the plugin sends it whole on every load. It is
 * sent gzipped (1.3 MB) to clients that accept it, compressed once and kept,
 * with an ETag per encoding, so a reload costs a 304 instead of the script;
 * `no-cache` (revalidate every time) rather than a max-age, so an upgraded
 * keyhold's script is never stale. GET only: HEAD and the rest pass untouched.
 */
interface PackedScript {
  etag: string;
  gzipped: Promise<Buffer>;
}
/**
 * By route, not by URL: the router decodes `%73calar.js` to the same route, and
 * keying on the raw URL would compress and keep one copy per spelling.
 */
const packed = new Map<string, PackedScript>();

/** How many scripts are kept compressed (for tests: one per route, however its URL is spelled). */
export const packedScripts = (): number => packed.size;

function packScript(route: string, source: string | Buffer): PackedScript {
  let script = packed.get(route);
  if (script === undefined) {
    const gzipped = gzipAsync(source, { level: 9 });
    // A failure is met where it is awaited; this only keeps it from being unhandled meanwhile.
    gzipped.catch(() => undefined);
    script = { etag: createHash("sha256").update(source).digest("base64url").slice(0, 27), gzipped };
    packed.set(route, script);
  }
  return script;
}

/** Whether Accept-Encoding allows gzip: named with a q above 0, or else through `*` with a q above 0. */
function acceptsGzip(header: string | string[] | undefined): boolean {
  const q: Record<string, number> = {};
  for (const part of String(header ?? "").split(",")) {
    const [name, ...params] = part.split(";").map((x) => x.trim().toLowerCase());
    if (name === undefined || name === "") continue;
    const given = params.find((p) => p.startsWith("q="));
    q[name] = given === undefined ? 1 : Number(given.slice(2)) || 0;
  }
  return (q.gzip ?? q["*"] ?? 0) > 0;
}

/** If-None-Match by weak comparison (RFC 9110 §13.1.2): `W/` is ignored, and `*` matches any. */
function unchanged(header: string | string[] | undefined, etag: string): boolean {
  return String(header ?? "")
    .split(",")
    .map((t) => t.trim().replace(/^W\//, ""))
    .some((t) => t === "*" || t === etag);
}

async function sendScript(req: FastifyRequest, reply: FastifyReply, payload: string | Buffer): Promise<string | Buffer | null> {
  const route = req.routeOptions.url ?? "";
  const script = packScript(route, payload);
  let body: string | Buffer = payload;
  let etag = `"${script.etag}"`;
  if (acceptsGzip(req.headers["accept-encoding"])) {
    try {
      body = await script.gzipped;
      // Another representation, another strong validator.
      etag = `"${script.etag}-gz"`;
    } catch (err) {
      // Not kept: the next request compresses again; this one gets the plain script.
      packed.delete(route);
      req.log.warn({ err }, "could not gzip the /docs script; sent uncompressed");
    }
  }
  reply.header("etag", etag);
  reply.header("cache-control", "no-cache");
  reply.header("vary", "accept-encoding");
  if (unchanged(req.headers["if-none-match"], etag)) {
    reply.code(304);
    reply.removeHeader("content-length");
    // No body at all (not an empty one), so Fastify sends no Content-Length either.
    return null;
  }
  if (body !== payload) {
    reply.header("content-encoding", "gzip");
    reply.header("content-length", (body as Buffer).length);
  }
  return body;
}

/** Registers GET /docs (and Scalar's script under /docs/js/). Its hook is scoped to these routes only. */
export function registerDocs(app: FastifyInstance): void {
  void app.register(async (scope) => {
    scope.addHook("onSend", async (req, reply, payload) => {
      const type = reply.getHeader("content-type");
      if (typeof payload === "string" && typeof type === "string" && type.startsWith("text/html")) {
        reply.header("content-security-policy", contentSecurityPolicy(payload));
      }
      if (
        req.method === "GET" &&
        reply.statusCode === 200 &&
        (typeof payload === "string" || Buffer.isBuffer(payload)) &&
        typeof type === "string" &&
        type.startsWith("application/javascript")
      ) {
        return sendScript(req, reply, payload);
      }
      return payload;
    });
    await scope.register(scalar, {
      routePrefix: "/docs",
      configuration: {
        url: "/openapi.json",
        pageTitle: "keyhold API reference",
        withDefaultFonts: false,
        telemetry: false,
        showDeveloperTools: "never",
        agent: { disabled: true },
        mcp: { disabled: true },
        hideClientButton: true,
        defaultOpenAllTags: true,
      },
    });
  });
}
