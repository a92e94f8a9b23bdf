// The two examples in examples/, run the way a user runs them: keyhold as a real
// process, a root key from the CLI that may only verify keys, and each example
// as `node dist/examples/<name>/server.js` pointed at that keyhold. One table of
// cases, through real HTTP, for both: the gRPC client and plain fetch must guard
// the same routes in the same way. Last, keyhold is killed and both fail closed.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { start as startFetchGuard } from "../../examples/fetch-guard/server.js";
import { start as startGrpcGuard } from "../../examples/grpc-guard/server.js";
import { uid } from "../contract/shared/helpers.js";
import { dropDatabase, ROOT, runScript, type ServerProcess, startServer } from "../server-process.js";

type KeyName = "writer" | "reader" | "disabled" | "oneCredit" | "limited";
type Keys = Record<KeyName, { keyId: string; key: string }>;

/** What the keys are made with (keys.createKey bodies without apiId). */
const KEY_BODIES: Record<KeyName, Record<string, unknown>> = {
  writer: { externalId: "acme", meta: { plan: "pro" }, permissions: ["reports.write"] },
  reader: { externalId: "globex" },
  disabled: { enabled: false, permissions: ["reports.write"] },
  oneCredit: { credits: { remaining: 1 } },
  limited: { ratelimits: [{ name: "requests", limit: 2, duration: 60_000 }] },
};

interface Step {
  method: "GET" | "POST";
  path: string;
  /** The key presented as `Authorization: Bearer`, a key keyhold never issued, or none. */
  key: KeyName | "bogus" | "none";
  status: number;
  /** The example's `error` field. */
  error?: string;
  /** The caller the route must see (exactly). */
  caller?: (keys: Keys) => Record<string, unknown>;
  /** A 429 from a rate limit says when to come back. */
  retryAfter?: boolean;
}

const CASES: Array<{ name: string; steps: Step[] }> = [
  { name: "a public route needs no key", steps: [{ method: "GET", path: "/public", key: "none", status: 200 }] },
  { name: "no key: 401", steps: [{ method: "GET", path: "/reports", key: "none", status: 401, error: "MISSING_KEY" }] },
  { name: "a key keyhold never issued: 401", steps: [{ method: "GET", path: "/reports", key: "bogus", status: 401, error: "NOT_FOUND" }] },
  { name: "a disabled key: 401, whatever its permissions", steps: [{ method: "POST", path: "/reports", key: "disabled", status: 401, error: "DISABLED" }] },
  {
    name: "a valid key: 200, and the route sees the key's identity and meta",
    steps: [
      { method: "GET", path: "/reports", key: "writer", status: 200, caller: (k) => ({ keyId: k.writer.keyId, externalId: "acme", meta: { plan: "pro" } }) },
    ],
  },
  {
    name: "POST needs reports.write: 201 with it, 403 without (the same key still reads)",
    steps: [
      { method: "POST", path: "/reports", key: "writer", status: 201, caller: (k) => ({ keyId: k.writer.keyId, externalId: "acme", meta: { plan: "pro" } }) },
      { method: "POST", path: "/reports", key: "reader", status: 403, error: "INSUFFICIENT_PERMISSIONS" },
      { method: "GET", path: "/reports", key: "reader", status: 200, caller: (k) => ({ keyId: k.reader.keyId, externalId: "globex" }) },
    ],
  },
  {
    name: "each request costs one credit: a key with one gets in once, then 429",
    steps: [
      { method: "GET", path: "/reports", key: "oneCredit", status: 200, caller: (k) => ({ keyId: k.oneCredit.keyId, creditsLeft: 0 }) },
      { method: "GET", path: "/reports", key: "oneCredit", status: 429, error: "USAGE_EXCEEDED" },
    ],
  },
  {
    name: "a key limited to 2 a minute: the third request is 429 with Retry-After",
    steps: [
      { method: "GET", path: "/reports", key: "limited", status: 200 },
      { method: "GET", path: "/reports", key: "limited", status: 200 },
      { method: "GET", path: "/reports", key: "limited", status: 429, error: "RATE_LIMITED", retryAfter: true },
    ],
  },
];

const EXAMPLES = [
  { name: "grpc-guard", env: (k: ServerProcess) => ({ KEYHOLD_GRPC_URL: `http://127.0.0.1:${k.grpcPort}` }) },
  { name: "fetch-guard", env: (k: ServerProcess) => ({ KEYHOLD_URL: k.url }) },
] as const;

interface Example {
  url: string;
  proc: ChildProcess;
  output(): string;
}

/** Runs an example's built server.js on a free port and waits for the line saying where it listens. */
async function startExample(name: string, env: Record<string, string>): Promise<Example> {
  const proc = spawn(process.execPath, [path.join(ROOT, "dist", "examples", name, "server.js")], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr.on("data", (d: Buffer) => {
    out += d.toString();
  });
  for (let waited = 0; waited < 15_000; waited += 50) {
    const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
    if (url !== undefined) return { url, proc, output: () => out };
    if (proc.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  proc.kill("SIGKILL");
  throw new Error(`${name} did not start (exit ${proc.exitCode}):\n${out}`);
}

describe("examples/: services guarding their routes with keyhold", () => {
  // keyhold creates and migrates its database at start, as for any user.
  const database = `keyhold_t_${uid("examples")}`;
  let databaseUrl: string;
  let keyhold: ServerProcess;
  let verifyRootKey: string;
  let adminRootKey: string;
  const running = new Map<string, Example>();
  const keys = new Map<string, Keys>();

  /** A root key from the CLI, as the README makes one. */
  async function cliRootKey(workspace: string, permissions: string): Promise<string> {
    const run = await runScript("bin/keyhold.js", ["root-key", "create", "--workspace", workspace, "--permissions", permissions], {
      ...process.env,
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: "silent",
    });
    expect(run.code, run.stderr).toBe(0);
    return (JSON.parse(run.stdout) as { rootKey: string }).rootKey;
  }

  async function keyholdPost(op: string, body: unknown): Promise<Record<string, unknown>> {
    const res = await fetch(`${keyhold.url}/v2/${op}`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminRootKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await res.json()) as { data: Record<string, unknown> };
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json.data;
  }

  /** A fresh set of keys per example: credits and rate-limit windows are spent by the cases. */
  async function makeKeys(): Promise<Keys> {
    const { apiId } = await keyholdPost("apis.createApi", { name: uid("reports") });
    const made = {} as Keys;
    for (const [name, body] of Object.entries(KEY_BODIES)) {
      const { keyId, key } = await keyholdPost("keys.createKey", { apiId, prefix: "rep", ...body });
      made[name as KeyName] = { keyId: keyId as string, key: key as string };
    }
    return made;
  }

  async function call(example: string, step: Pick<Step, "method" | "path" | "key">) {
    const presented = step.key === "none" ? undefined : step.key === "bogus" ? `rep_${uid("bogus")}` : keys.get(example)?.[step.key].key;
    const res = await fetch(`${running.get(example)?.url}${step.path}`, {
      method: step.method,
      headers: presented === undefined ? {} : { authorization: `Bearer ${presented}` },
    });
    return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as Record<string, unknown> };
  }

  beforeAll(async () => {
    if (!existsSync(path.join(ROOT, "dist", "examples", "fetch-guard", "server.js"))) {
      execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
    }
    const u = new URL(inject("mysqlServer"));
    u.pathname = `/${database}`;
    databaseUrl = u.toString();
    keyhold = await startServer(databaseUrl);
    const workspace = uid("examples");
    adminRootKey = await cliRootKey(workspace, "apis.*.create_api,apis.*.create_key");
    // What the examples get: enough to verify keys and nothing else.
    verifyRootKey = await cliRootKey(workspace, "apis.*.verify_key");
    for (const ex of EXAMPLES) {
      keys.set(ex.name, await makeKeys());
      running.set(ex.name, await startExample(ex.name, { ...ex.env(keyhold), KEYHOLD_ROOT_KEY: verifyRootKey }));
    }
  });

  afterAll(async () => {
    for (const ex of running.values()) ex.proc.kill("SIGKILL");
    await keyhold?.kill();
    await dropDatabase(inject("mysqlServer"), database);
  });

  describe.each(EXAMPLES.map((e) => e.name))("%s", (example) => {
    it.each(CASES)("$name", async ({ steps }) => {
      for (const step of steps) {
        const res = await call(example, step);
        const label = `${step.method} ${step.path} with ${step.key}: ${JSON.stringify(res.body)}`;
        expect(res.status, label).toBe(step.status);
        if (step.error !== undefined) expect(res.body, label).toEqual({ error: step.error });
        if (step.caller !== undefined) expect(res.body.caller, label).toEqual(step.caller(keys.get(example) as Keys));
        if (step.retryAfter) {
          // Seconds until the limit's window ends: a whole number within the 60 s window.
          expect(res.retryAfter, label).toMatch(/^\d+$/);
          expect(Number(res.retryAfter)).toBeGreaterThanOrEqual(1);
          expect(Number(res.retryAfter)).toBeLessThanOrEqual(60);
        } else {
          expect(res.retryAfter, label).toBeNull();
        }
      }
    });
  });

  it("keyhold stopped: both fail closed with 503, and the public route still answers", async () => {
    await keyhold.kill();
    for (const ex of EXAMPLES) {
      const guarded = await call(ex.name, { method: "GET", path: "/reports", key: "writer" });
      expect(guarded, ex.name).toEqual({ status: 503, retryAfter: null, body: { error: "KEYHOLD_UNAVAILABLE" } });
      const open = await call(ex.name, { method: "GET", path: "/public", key: "none" });
      expect(open.status, ex.name).toBe(200);
    }
  });

  it("a keyhold that accepts connections but never answers: 503 once the timeout passes, not a hang", async () => {
    const sockets = new Set<net.Socket>();
    const silent = net.createServer((s) => sockets.add(s));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const hung = `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
    const services = [
      await startGrpcGuard({ port: 0, grpcUrl: hung, rootKey: verifyRootKey, timeoutMs: 300 }),
      await startFetchGuard({ port: 0, keyholdUrl: hung, rootKey: verifyRootKey, timeoutMs: 300 }),
    ];
    try {
      for (const svc of services) {
        const res = await fetch(`${svc.url}/reports`, { headers: { authorization: `Bearer rep_${uid("any")}` } });
        expect({ status: res.status, body: await res.json() }, svc.url).toEqual({ status: 503, body: { error: "KEYHOLD_UNAVAILABLE" } });
      }
    } finally {
      for (const svc of services) await svc.close();
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it("no example ever writes a key or the root key to its output", () => {
    for (const ex of EXAMPLES) {
      const out = running.get(ex.name)?.output() ?? "";
      // Its start line, and the line saying why keyhold gave no verdict (the 503s above).
      expect(out, ex.name).toContain("listening on");
      expect(out, ex.name).toContain("keyhold gave no verdict");
      for (const secret of [verifyRootKey, ...Object.values(keys.get(ex.name) ?? {}).map((k) => k.key)]) expect(out.includes(secret), ex.name).toBe(false);
    }
  });
});
