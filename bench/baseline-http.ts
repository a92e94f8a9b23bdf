// Baseline A: a bare Fastify 5 JSON route, the ceiling for any JSON endpoint here.
import Fastify from "fastify";

const app = Fastify({ logger: false });
app.post("/v2/baseline", async () => ({ meta: { requestId: "req_baseline" }, data: { valid: true, code: "VALID" } }));
await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT ?? 0) });
const addr = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof addr === "object" && addr ? addr.port : 0 })}\n`);
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));
