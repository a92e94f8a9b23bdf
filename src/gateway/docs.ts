// The API reference page at /docs: Scalar's renderer over this server's own
// /openapi.json. The plugin serves Scalar's script itself, and everything that
// would reach another host is off: web fonts, telemetry, the agent chat, the
// "Generate MCP" button and the developer toolbar (the last three are shown by
// default on localhost), and the "Open API Client" link to Scalar's hosted
// client. No request proxy is set, so "Test Request" calls this origin. The
// page's Content-Security-Policy holds it to that: it may load and connect to
// nothing but this origin.
import { createHash } from "node:crypto";
import scalar from "@scalar/fastify-api-reference";
import type { FastifyInstance } from "fastify";

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

/** Registers GET /docs (and Scalar's script under /docs/js/). Its hook is scoped to these routes only. */
export function registerDocs(app: FastifyInstance): void {
  void app.register(async (scope) => {
    scope.addHook("onSend", async (_req, reply, payload) => {
      const type = reply.getHeader("content-type");
      if (typeof payload === "string" && typeof type === "string" && type.startsWith("text/html")) {
        reply.header("content-security-policy", contentSecurityPolicy(payload));
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
