// The many-keys generator (bench/many-bodies.ts): every body of the list is sent,
// the connections start at different places in it (so they do not ask for the
// same key at the same moment), and the result reads as `autocannon -j`'s.
import { execFile } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const manyBodies = path.resolve("dist/bench/many-bodies.js");

describe("bench: many-bodies.js", () => {
  let server: http.Server;
  let url: string;
  const seen: string[] = [];
  const auths = new Set<string>();
  /** Each connection's first body. */
  const firsts = new Map<unknown, string>();

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (c: string) => (body += c));
      req.on("end", () => {
        seen.push(body);
        if (!firsts.has(req.socket)) firsts.set(req.socket, body);
        auths.add(String(req.headers.authorization));
        res.writeHead(200, { "content-type": "application/json" }).end('{"data":{"valid":true}}');
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/keys.verifyKey`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("sends every body, from a different place for each connection, and prints autocannon's result", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "many-bodies-"));
    const file = path.join(dir, "bodies.json");
    const bodies = Array.from({ length: 100 }, (_, i) => JSON.stringify({ key: `k${i}` }));
    fs.writeFileSync(file, JSON.stringify(bodies));
    // Not execFileSync: the server answering it runs in this process.
    const out = JSON.parse((await promisify(execFile)(process.execPath, [manyBodies, url, "4", "0", "400", "Bearer x", file])).stdout);
    expect(out["2xx"]).toBe(400);
    expect(out.requests.total).toBe(400);
    expect(typeof out.latency.p99).toBe("number");
    expect([...auths]).toEqual(["Bearer x"]);
    // 4 connections going round 100 bodies, 400 requests: each body sent 4 times.
    const counts = new Map<string, number>();
    for (const b of seen) counts.set(b, (counts.get(b) ?? 0) + 1);
    expect(counts.size).toBe(100);
    expect([...counts.values()].every((n) => n === 4)).toBe(true);
    // The four connections' first requests name four different keys: k0, k25, k50, k75.
    expect(new Set(firsts.values())).toEqual(new Set(["k0", "k25", "k50", "k75"].map((key) => JSON.stringify({ key }))));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
