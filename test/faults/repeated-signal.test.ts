// Under `npm start` a SIGTERM to the process group reaches keyhold twice (once
// directly, once forwarded by npm). The second must not kill it mid-drain: a
// request in flight when the signals arrive still gets its answer.
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { parseResponses } from "./raw-http.js";

describe("SIGTERM twice", () => {
  const h = useHarness();
  let server: ServerProcess;

  beforeAll(async () => {
    server = await startServer(h.config.databaseUrl ?? "", { SHUTDOWN_TIMEOUT_MS: "10000" });
  }, 60_000);
  afterAll(async () => {
    await server?.kill();
  });

  it("still answers the request in flight and exits 0", async () => {
    const rk = await h.rootKey(["*"]);
    const body = JSON.stringify({ name: "in-flight" });
    const socket = net.connect(server.port, "127.0.0.1");
    let received = Buffer.alloc(0);
    socket.on("data", (d: Buffer) => {
      received = Buffer.concat([received, d]);
    });
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    // Headers and half the body: the request is in flight.
    const head = `POST /v2/apis.createApi HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${rk}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    socket.write(head + body.slice(0, 5));
    await new Promise((r) => setTimeout(r, 200));

    server.proc.kill("SIGTERM");
    // Apart, as npm's forwarded copy comes: two at once would merge into one signal.
    await new Promise((r) => setTimeout(r, 100));
    server.proc.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    expect(server.proc.exitCode, server.output()).toBeNull();

    socket.write(body.slice(5));
    await closed;
    const [res] = parseResponses(received);
    expect(res?.status, received.toString()).toBe(200);
    expect(res?.json.data.apiId).toMatch(/^api_/);
    expect(await server.exited).toBe(0);
  }, 30_000);
});
