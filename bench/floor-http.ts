// The floor: what a hot verifyKey cannot avoid, on the same Fastify 5 stack as
// baseline A: the root key and the presented key each hashed (SHA-256) and found
// in a Map, a request id, the x-request-id header, and keyhold's answer of the
// same shape and size. No validation, grants, limits, metrics or usage counts.
// It is not keyhold: it shows how much of verifyJson's distance to baseline A
// the stack and the unavoidable work take, and how much is keyhold's own.
import { createHash } from "node:crypto";
import Fastify from "fastify";

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const rootKeys = new Map([[sha256(process.env.ROOT_KEY ?? ""), { workspaceId: "ws_floor" }]]);
const keys = new Map([[sha256(process.env.KEY ?? ""), { keyId: "key_1ChQh4gGu7aKpeqzefPrQR", enabled: true }]]);
let n = 0;

const app = Fastify({ logger: false });
app.post("/v2/keys.verifyKey", async (req, reply) => {
  const auth = req.headers.authorization;
  const principal = auth?.startsWith("Bearer ") ? rootKeys.get(sha256(auth.slice(7))) : undefined;
  if (principal === undefined) return reply.code(401).send({ error: "unauthorized" });
  const body = req.body as { key?: unknown } | null;
  if (typeof body?.key !== "string") return reply.code(400).send({ error: "key is required" });
  const key = keys.get(sha256(body.key));
  // As long as keyhold's ids (req_ + 22 characters).
  const requestId = `req_1ChQh4doXi9KCCu7e${String(n++ % 1_000_000).padStart(6, "0")}`;
  reply.header("x-request-id", requestId);
  return key === undefined
    ? { meta: { requestId }, data: { valid: false, code: "NOT_FOUND" } }
    : { meta: { requestId }, data: { valid: true, code: "VALID", keyId: key.keyId, enabled: key.enabled } };
});
await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
const addr = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof addr === "object" && addr ? addr.port : 0 })}\n`);
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
