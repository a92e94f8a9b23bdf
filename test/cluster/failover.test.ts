// Failover under load (issue 16): two keyhold instances, each given the three
// Galera nodes (in different orders) and the Redis Cluster, under a steady load
// of createKey and verifyKey. The Galera node instance A uses is killed (-9),
// then a Redis master. Answers are 200 or a 503 in the envelope for a bounded
// time, every key whose creation answered 200 verifies afterwards, credits are
// never overspent, and everything is back without a restart. Each figure is
// printed (FAILOVER lines) for the README's "Running in production".
import { execFileSync } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT, type ServerProcess, startServer } from "../server-process.js";

const cluster = JSON.parse(process.env.KEYHOLD_CLUSTER ?? "null") as { galeraUrls: string[]; redisNodes: string[] } | null;
if (cluster === null) throw new Error("KEYHOLD_CLUSTER is not set: run these with `npm run test:cluster`");
const database = `keyhold_failover_${Date.now()}`;

/** DATABASE_URL naming the Galera nodes in this order (0-based). */
function nodesUrl(order: number[]): string {
  const urls = order.map((i) => new URL((cluster as { galeraUrls: string[] }).galeraUrls[i] as string));
  const first = urls[0] as URL;
  const auth = `${first.username}${first.password === "" ? "" : `:${first.password}`}@`;
  return `mysql://${auth}${urls.map((u) => u.host).join(",")}/${database}`;
}
const redisUrl = `redis-cluster://${cluster.redisNodes.join(",")}`;
const control = (...args: string[]) =>
  execFileSync(process.execPath, [path.join(ROOT, "scripts", "cluster.mjs"), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] }).toString();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Answer {
  instance: "A" | "B";
  op: "createKey" | "verifyNew" | "verifyCredits";
  at: number;
  status: number | "no answer";
  /** The answer's code (VALID…), or for an error the envelope's type URL. */
  code?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
async function post(s: ServerProcess, op: string, body: unknown, rk: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${s.url}/v2/${op}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${rk}` },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: await res.json() };
}

/** The Redis node (1-based, as `npm run cluster` numbers them) that is a master now. */
function aRedisMaster(): number {
  const nodes = (cluster as { redisNodes: string[] }).redisNodes;
  for (let j = 0; j < nodes.length; j++) {
    const port = (nodes[j] as string).split(":")[1] as string;
    const role = execFileSync("redis-cli", ["-p", port, "role"], { timeout: 2_000 }).toString().split("\n")[0];
    if (role === "master") return j + 1;
  }
  throw new Error("no Redis master");
}

describe("failover under load: a Galera node, then a Redis master, killed", () => {
  let a: ServerProcess;
  let b: ServerProcess;
  let rk: string;
  let apiId: string;
  const killedRedis: number[] = [];
  let killedGalera = false;

  beforeAll(async () => {
    const env = { REDIS_URL: redisUrl };
    [a, b] = await Promise.all([startServer(nodesUrl([0, 1, 2]), env, 90_000), startServer(nodesUrl([1, 2, 0]), env, 90_000)]);
    const out = execFileSync(process.execPath, [path.join(ROOT, "bin", "keyhold.js"), "root-key", "create", "--workspace", "failover", "--permissions", "*"], {
      env: { ...process.env, DATABASE_URL: nodesUrl([2, 0, 1]) },
    }).toString();
    rk = (JSON.parse(out.trim().split("\n").pop() as string) as { rootKey: string }).rootKey;
    const created = await post(a, "apis.createApi", { name: "failover" }, rk);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    apiId = created.body.data.apiId;
  });

  afterAll(async () => {
    // Whatever happened, the cluster is whole again for the tests after this one.
    if (killedGalera) control("start", "galera", "1");
    for (const j of killedRedis) control("start", "redis", String(j));
    await a?.kill();
    await b?.kill();
  });

  it("answers 200 or 503 throughout, loses no acknowledged key, never overspends credits, and recovers without a restart", async () => {
    const CREDITS = 300;
    const credited = await post(
      a,
      "keys.createKey",
      { apiId, credits: { remaining: CREDITS }, ratelimits: [{ name: "load", limit: 100_000, duration: 60_000 }] },
      rk,
    );
    expect(credited.status).toBe(200);
    const creditKey = credited.body.data.key as string;

    const answers: Answer[] = [];
    const created: string[] = [];
    const t0 = Date.now();
    let stop = false;
    // biome-ignore lint/suspicious/noExplicitAny: JSON bodies
    const record = async (instance: "A" | "B", op: Answer["op"], call: () => Promise<{ status: number; body: any }>) => {
      try {
        const r = await call();
        answers.push({ instance, op, at: Date.now() - t0, status: r.status, code: r.status === 200 ? r.body.data?.code : r.body.error?.type });
        return r;
      } catch {
        answers.push({ instance, op, at: Date.now() - t0, status: "no answer" });
        return undefined;
      }
    };
    const loop = async (s: ServerProcess, instance: "A" | "B") => {
      // Bounded in count as well as time.
      for (let i = 0; i < 20_000 && !stop; i++) {
        // Each key has a limit, so that every verification also counts in the Redis Cluster.
        const c = await record(instance, "createKey", () =>
          post(s, "keys.createKey", { apiId, ratelimits: [{ name: "load", limit: 1_000, duration: 60_000 }] }, rk),
        );
        if (c?.status === 200) {
          created.push(c.body.data.key);
          await record(instance, "verifyNew", () => post(s, "keys.verifyKey", { key: c.body.data.key }, rk));
        }
        await record(instance, "verifyCredits", () => post(s, "keys.verifyKey", { key: creditKey }, rk));
      }
    };
    const loops = [0, 1, 2, 3].flatMap(() => [loop(a, "A"), loop(b, "B")]);

    await sleep(4_000);
    const galeraKilledAt = Date.now() - t0;
    control("kill", "galera", "1"); // instance A's current node
    killedGalera = true;
    await sleep(8_000);
    const master = aRedisMaster();
    const redisKilledAt = Date.now() - t0;
    control("kill", "redis", String(master));
    killedRedis.push(master);
    await sleep(12_000);
    stop = true;
    await Promise.all(loops);

    // Every answer was a 200 or a 503 in the envelope.
    // An error is the envelope's type URL (…/errors-v2/svc/application/service_unavailable for a 503).
    const bad = answers.filter((x) => x.status !== 200 && !(x.status === 503 && /\/svc\/application\/service_unavailable$/.test(x.code ?? "")));
    expect(bad).toEqual([]);
    for (const instance of ["A", "B"] as const) {
      const mine = answers.filter((x) => x.instance === instance);
      const failed = mine.filter((x) => x.status !== 200);
      const span = failed.length === 0 ? 0 : ((failed.at(-1) as Answer).at - (failed[0] as Answer).at) / 1000;
      console.log(
        `FAILOVER instance ${instance}: ${mine.length} answers, ${failed.length} × 503` +
          (failed.length === 0
            ? ""
            : ` from ${((failed[0] as Answer).at / 1000).toFixed(2)} s to ${((failed.at(-1) as Answer).at / 1000).toFixed(2)} s (${span.toFixed(2)} s)`) +
          `; galera node killed at ${(galeraKilledAt / 1000).toFixed(2)} s, redis master ${master} at ${(redisKilledAt / 1000).toFixed(2)} s`,
      );
      expect(span).toBeLessThan(10);
      // Both instances kept answering 200 after each kill.
      expect(mine.filter((x) => x.status === 200 && x.at > redisKilledAt + 1_000).length).toBeGreaterThan(0);
    }

    // Credits: never more VALID than there were credits.
    const validCredit = answers.filter((x) => x.op === "verifyCredits" && x.code === "VALID").length;
    console.log(`FAILOVER credits: ${validCredit} VALID of ${CREDITS}`);
    expect(validCredit).toBeLessThanOrEqual(CREDITS);

    // Back without a restart: both ready, the killed nodes started again.
    control("start", "galera", "1");
    killedGalera = false;
    control("start", "redis", String(master));
    killedRedis.length = 0;
    for (const s of [a, b]) {
      const end = Date.now() + 60_000;
      for (;;) {
        const r = await fetch(`${s.url}/readyz`).catch(() => undefined);
        if (r?.status === 200) break;
        expect(Date.now(), `instance at ${s.url} not ready again within 60 s`).toBeLessThan(end);
        await sleep(250);
      }
    }

    // The Redis master's death was seen, answered from local counters, and left behind.
    for (const [name, s] of [
      ["A", a],
      ["B", b],
    ] as const) {
      const lines = s
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as { time: number; msg: string });
      const down = lines.find((l) => l.msg.startsWith("Redis is unavailable") && l.time >= t0 + redisKilledAt);
      const back = lines.find((l) => l.msg.startsWith("Redis is back") && l.time >= (down?.time ?? Number.POSITIVE_INFINITY));
      console.log(
        `FAILOVER instance ${name}: rate limits from local counters ${down === undefined ? "never" : `from ${((down.time - t0) / 1000).toFixed(2)} s`}` +
          (back === undefined ? "" : ` to ${((back.time - t0) / 1000).toFixed(2)} s`),
      );
      expect(down, `instance ${name} did not see the Redis master die`).toBeDefined();
      expect(back, `instance ${name} did not see Redis back`).toBeDefined();
    }

    // Every key whose creation answered 200 verifies, through either instance.
    const lost: string[] = [];
    for (let i = 0; i < created.length; i += 50) {
      const batch = created.slice(i, i + 50);
      const results = await Promise.all(batch.map((key, j) => post(j % 2 === 0 ? a : b, "keys.verifyKey", { key }, rk)));
      results.forEach((r, j) => {
        if (r.body.data?.code !== "VALID") lost.push(`${batch[j]}: ${JSON.stringify(r.body)}`);
      });
    }
    console.log(`FAILOVER keys: ${created.length} acknowledged, ${lost.length} lost`);
    expect(created.length).toBeGreaterThan(100);
    expect(lost).toEqual([]);

    // A spend answered with a 503 may have counted: only then may the credits be gone with fewer VALID.
    const unanswered = answers.filter((x) => x.op === "verifyCredits" && x.status !== 200).length;
    const after = (await post(b, "keys.verifyKey", { key: creditKey }, rk)).body.data;
    if (validCredit === CREDITS) expect(after.code).toBe("USAGE_EXCEEDED");
    else if (unanswered === 0) expect(after.code).toBe("VALID");
    else expect(["VALID", "USAGE_EXCEEDED"]).toContain(after.code);
  }, 180_000);

  it("after the failover, rate limits are shared again across the instances: 100 parallel calls against 10 allow exactly 10", async () => {
    const body = { namespace: "after_failover", identifier: `u${Date.now()}`, limit: 10, duration: 60_000 };
    // The promoted replica serves its slots; let both instances find it (bounded).
    const end = Date.now() + 30_000;
    for (;;) {
      const probes = (await Promise.all([a, b].map((s) => fetch(`${s.url}/v2/liveness`).then((r) => r.json())))) as { data: { degraded?: string[] } }[];
      if (probes.every((p) => !(p.data.degraded ?? []).includes("redis"))) break;
      expect(Date.now(), "still degraded 30 s after the failover").toBeLessThan(end);
      await sleep(250);
    }
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => post(i % 2 === 0 ? a : b, "ratelimit.limit", body, rk)));
    expect(results.filter((r) => r.status !== 200)).toEqual([]);
    expect(results.filter((r) => r.body.data.success)).toHaveLength(10);
  });
});
