// The dashboard's pages at /dashboard/: the bundle Vite built into dist/dashboard
// (`npm run build`). Hashed assets are cached for a year; index.html answers
// /dashboard, /dashboard/ and every client route under /dashboard/ (not
// /dashboard/api/*, the JSON routes of dashboard.ts) and is never cached. The
// page's policy lets it load and connect to this origin only. Without a build,
// /dashboard answers 503 saying how to make one.
import { existsSync } from "node:fs";
import path from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../core/errors.js";

const POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** dist/dashboard, whether this module runs from dist/src/server or (in tests) from src/server. */
function bundleDir(): string {
  const up = path.resolve(import.meta.dirname, "..", "..");
  return path.basename(up) === "dist" ? path.join(up, "dashboard") : path.join(up, "dist", "dashboard");
}

const isApi = (url: string) => url === "/dashboard/api" || url.startsWith("/dashboard/api/") || url.startsWith("/dashboard/api?");

export function dashboardStatic(dir = bundleDir()) {
  return async function dashboardPages(app: FastifyInstance): Promise<void> {
    if (!existsSync(path.join(dir, "index.html"))) {
      const notBuilt = async () => {
        throw new AppError("err:svc:application:service_unavailable", "The dashboard is not built: run `npm run build`, then restart keyhold.");
      };
      app.get("/dashboard", notBuilt);
      app.get("/dashboard/*", async (req) => {
        if (isApi(req.url)) throw notFound(req);
        return notBuilt();
      });
      return;
    }

    app.addHook("onSend", async (_req, reply, payload) => {
      reply.header("content-security-policy", POLICY);
      reply.header("x-content-type-options", "nosniff");
      return payload;
    });
    await app.register(fastifyStatic, {
      root: dir,
      prefix: "/dashboard/",
      // One route per file found now (a rebuild needs a restart), so the catch-all below gets the rest.
      wildcard: false,
      index: false,
      cacheControl: false,
      setHeaders: (reply, file) => {
        const hashed = path.dirname(file) === path.join(dir, "assets");
        reply.header("cache-control", hashed ? "public, max-age=31536000, immutable" : "no-cache");
      },
    });
    const page = (req: FastifyRequest, reply: FastifyReply) => {
      // A missing asset is a 404, not the page (a browser would read HTML as a script).
      if (isApi(req.url) || req.url.startsWith("/dashboard/assets/")) throw notFound(req);
      return reply.header("cache-control", "no-cache").sendFile("index.html");
    };
    app.get("/dashboard", page);
    app.get("/dashboard/*", page);
  };
}

const notFound = (req: FastifyRequest) => new AppError("err:svc:data:route_not_found", `No operation exists at ${req.method} ${req.url.split("?")[0]}.`);
