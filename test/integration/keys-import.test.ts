// `keyhold keys import` and `keyhold migration create`, as real processes: the
// CLI (bin/keyhold.js) against a real keyhold server process on the harness's
// database. Keys imported from JSONL and CSV verify afterwards with their
// fields; invalid lines and hashes in use are reported by line; a run killed
// with SIGKILL resumes and ends with every key imported exactly once; wrong
// state, root key or permission stop with a message that says what to do.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hashKey } from "../../src/domain/keys/generate.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { ensureBuilt, type ProcessRun, ROOT, runScript, type ServerProcess, startServer } from "../server-process.js";

interface Summary {
  imported: number;
  failed: number;
  skipped?: number;
  durationMs: number;
  failures: Record<string, number>;
}

interface State {
  linesDone: number;
  imported: number;
  failed: number;
  complete: boolean;
}

describe("keyhold keys import", () => {
  const h = useHarness();
  let server: ServerProcess;
  let dir: string;
  let workspace: string;
  let admin: string;
  const secrets: string[] = []; // every plaintext key and root key of this file: none may be printed

  beforeAll(async () => {
    ensureBuilt();
    server = await startServer(h.config.databaseUrl as string);
    dir = mkdtempSync(path.join(tmpdir(), "keyhold-import-"));
    workspace = uid("import_ws");
    const made = await cli(["root-key", "create", "--workspace", workspace, "--permissions", "*"]);
    admin = (jsonOut(made) as { rootKey: string }).rootKey;
    secrets.push(admin);
  }, 300_000);

  afterAll(async () => {
    await server?.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
    // Nothing the server logged in this file holds a key or a root key.
    const logged = server?.output() ?? "";
    for (const s of secrets) expect(logged.includes(s), "a key reached the server's log").toBe(false);
  });

  /** The real CLI with exactly these variables on top of the environment (no inherited root key). */
  function cli(args: string[], env: Record<string, string> = {}): Promise<ProcessRun> {
    const base: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: "silent", KEYHOLD_URL: server.url };
    delete base.KEYHOLD_ROOT_KEY;
    return runScript("bin/keyhold.js", args, { ...base, ...env });
  }

  const show = (r: ProcessRun) => `exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`;

  /** Exactly one JSON line on stdout. */
  function jsonOut(r: ProcessRun): unknown {
    const lines = r.stdout.split("\n").filter((l) => l !== "");
    expect(lines, show(r)).toHaveLength(1);
    return JSON.parse(lines[0] as string);
  }

  async function call(
    op: string,
    body: unknown,
    rootKey = admin,
  ): Promise<{ status: number; body: { data?: Record<string, unknown>; error?: Record<string, unknown> } }> {
    const res = await fetch(`${server.url}/v2/${op}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown> } };
  }

  async function newApi(): Promise<string> {
    const res = await call("apis.createApi", { name: uid("imp") });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data?.apiId as string;
  }

  async function newMigration(algorithm = "sha256"): Promise<string> {
    return (jsonOut(await cli(["migration", "create", "--workspace", workspace, "--algorithm", algorithm])) as { migrationId: string }).migrationId;
  }

  function newKeys(n: number): string[] {
    const keys = Array.from({ length: n }, () => `legacy_${randomBytes(18).toString("base64url")}`);
    secrets.push(...keys);
    return keys;
  }

  const file = (name: string, text: string): string => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  const importArgs = (f: string, apiId: string, migrationId: string, extra: string[] = []) => [
    "keys",
    "import",
    f,
    "--api",
    apiId,
    "--migration",
    migrationId,
    ...extra,
  ];

  async function hashesIn(apiId: string): Promise<string[]> {
    const [rows] = await h.db.pool.query("SELECT hash FROM `keys` WHERE api_id = ? AND deleted_at_m IS NULL", [apiId]);
    return (rows as Array<{ hash: string }>).map((r) => r.hash).sort();
  }

  const failuresOf = (f: string) =>
    readFileSync(`${f}.failures.jsonl`, "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { line: number; reason: string; detail?: string; hash?: string; start?: string });

  /** Nothing the CLI printed or wrote holds a plaintext key or the root key. */
  function expectNoSecrets(r: ProcessRun, f: string): void {
    const written = [r.stdout, r.stderr, ...[`${f}.failures.jsonl`, `${f}.import-state.json`].map((p) => (existsSync(p) ? readFileSync(p, "utf8") : ""))].join(
      "\n",
    );
    for (const s of secrets) expect(written.includes(s), `a secret was printed or written:\n${show(r)}`).toBe(false);
  }

  it("migration create prints {migrationId, workspaceId, algorithm} and stores the migration", async () => {
    const r = await cli(["migration", "create", "--workspace", workspace, "--algorithm", "github.com/seamapi/prefixed-api-key"]);
    expect(r.code, show(r)).toBe(0);
    const out = jsonOut(r) as Record<string, string>;
    expect(Object.keys(out).sort()).toEqual(["algorithm", "migrationId", "workspaceId"]);
    expect(out.migrationId).toMatch(/^mig_[1-9A-HJ-NP-Za-km-z]+$/);
    expect(out.algorithm).toBe("github.com/seamapi/prefixed-api-key");
    const [rows] = await h.db.pool.query("SELECT workspace_id, algorithm FROM key_migrations WHERE id = ?", [out.migrationId]);
    expect(rows).toEqual([{ workspace_id: out.workspaceId, algorithm: "github.com/seamapi/prefixed-api-key" }]);
  });

  it("migration create refuses an unknown workspace (exit 1) and an unknown algorithm (usage, exit 2)", async () => {
    const none = await cli(["migration", "create", "--workspace", uid("nobody"), "--algorithm", "sha256"]);
    expect(none.code, show(none)).toBe(1);
    expect(none.stdout).toBe("");
    expect(none.stderr).toMatch(/no workspace named/);
    const bad = await cli(["migration", "create", "--workspace", workspace, "--algorithm", "md5"]);
    expect(bad.code, show(bad)).toBe(2);
    expect(bad.stderr).toMatch(/--algorithm must be one of sha256, github.com\/seamapi\/prefixed-api-key/);
    expect(bad.stderr).toMatch(/usage:/);
  });

  it("JSONL of plaintext keys: all imported (hashed locally), and they verify with their fields", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(120);
    const records = keys.map((key, i) => ({
      key,
      name: `key ${i}`,
      externalId: `user_${i % 7}`,
      meta: { plan: i % 2 === 0 ? "pro" : "free", i },
      roles: ["importer"],
      permissions: ["docs.read", `tier.${i % 3}`],
      enabled: i !== 5,
      ...(i === 6 ? { expires: 1_000 } : {}),
      credits: { remaining: 10 + i, refill: { interval: "monthly", amount: 100, refillDay: 1 } },
      ratelimits: [{ name: "requests", limit: 1000, duration: 60_000 }],
    }));
    const f = file("plain.jsonl", `${records.map((r) => JSON.stringify(r)).join("\n")}\n`);
    const r = await cli(importArgs(f, apiId, migrationId, ["--batch-size", "50"]), { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(0);
    const summary = jsonOut(r) as Summary;
    expect(summary).toEqual({ imported: 120, failed: 0, durationMs: expect.any(Number), failures: {} });
    expect(failuresOf(f)).toEqual([]);
    expect(await hashesIn(apiId)).toEqual(keys.map(hashKey).sort());
    expectNoSecrets(r, f);

    for (const i of [0, 1, 42, 119]) {
      const v = await call("keys.verifyKey", { key: keys[i], permissions: `tier.${i % 3}` });
      expect(v.status).toBe(200);
      expect(v.body.data).toMatchObject({
        valid: true,
        code: "VALID",
        name: `key ${i}`,
        meta: { plan: i % 2 === 0 ? "pro" : "free", i },
        credits: 10 + i - 1,
        identity: expect.objectContaining({ externalId: `user_${i % 7}` }),
      });
      expect([...((v.body.data?.roles ?? []) as string[])]).toEqual(["importer"]);
      expect([...((v.body.data?.permissions ?? []) as string[])].sort()).toEqual(["docs.read", `tier.${i % 3}`].sort());
    }
    expect((await call("keys.verifyKey", { key: keys[5] })).body.data).toMatchObject({ valid: false, code: "DISABLED" });
    expect((await call("keys.verifyKey", { key: keys[6] })).body.data).toMatchObject({ valid: false, code: "EXPIRED" });
    expect((await call("keys.verifyKey", { key: `${keys[0]}x` })).body.data).toMatchObject({ valid: false, code: "NOT_FOUND" });
  });

  it("CSV of hashes (roles and permissions ;-separated, credits in columns): imported and verifiable by the plaintext", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(30);
    const rows = keys.map(
      (k, i) => `${hashKey(k)},"csv, key ${i}","{""n"":${i}}",importer;auditor,docs.read; docs.write,${i === 3 ? "false" : "true"},${i + 1},daily,5,`,
    );
    const f = file(
      "hashes.csv",
      `hash,name,meta,roles,permissions,enabled,credits.remaining,credits.refill.interval,credits.refill.amount,credits.refill.refillDay\n${rows.join("\r\n")}\r\n`,
    );
    const r = await cli(importArgs(f, apiId, migrationId, ["--batch-size", "7"]), { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(0);
    expect(jsonOut(r)).toMatchObject({ imported: 30, failed: 0, failures: {} });
    expect(await hashesIn(apiId)).toEqual(keys.map(hashKey).sort());

    const v = await call("keys.verifyKey", { key: keys[10], permissions: "docs.write" });
    expect(v.body.data).toMatchObject({ valid: true, name: "csv, key 10", meta: { n: 10 }, credits: 10 });
    expect([...((v.body.data?.roles ?? []) as string[])].sort()).toEqual(["auditor", "importer"]);
    const got = await call("keys.getKey", { keyId: v.body.data?.keyId });
    expect(got.body.data?.credits).toEqual({ remaining: 10, refill: { interval: "daily", amount: 5 } });
    expect((await call("keys.verifyKey", { key: keys[3] })).body.data).toMatchObject({ valid: false, code: "DISABLED" });
  });

  it("invalid lines go to the failures file by line, with the reason, and the valid ones of their batch still go in", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(6);
    const lines = [
      JSON.stringify({ key: keys[0] }), // 1
      `{"key":"${keys[1]}", oops`, // 2: bad JSON, holding a key
      JSON.stringify({ key: keys[2], hash: hashKey(keys[2] as string) }), // 3: both
      JSON.stringify({ name: "no key" }), // 4: neither
      "", // 5: blank, ignored
      JSON.stringify({ key: keys[3], expires: "tomorrow" }), // 6: wrong type
      JSON.stringify({ key: keys[4], name: "n".repeat(300) }), // 7: out of bounds
      JSON.stringify({ key: keys[5], ratelimits: [{ name: "r", limit: 1, duration: 10 }] }), // 8: name and duration too small
      JSON.stringify({ key: keys[0] }), // 9: the same key as line 1, in the same batch
    ];
    const f = file("mixed.jsonl", `${lines.join("\n")}\n`);
    const r = await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(4);
    const summary = jsonOut(r) as Summary;
    expect(summary).toEqual({ imported: 1, failed: 7, durationMs: expect.any(Number), failures: { invalid_json: 1, invalid_record: 5, duplicate: 1 } });
    const failures = failuresOf(f);
    expect(failures.map((x) => [x.line, x.reason])).toEqual([
      [2, "invalid_json"],
      [3, "invalid_record"],
      [4, "invalid_record"],
      [6, "invalid_record"],
      [7, "invalid_record"],
      [8, "invalid_record"],
      [9, "duplicate"],
    ]);
    expect(failures[1]?.detail).toMatch(/both key and hash/);
    expect(failures[2]?.detail).toMatch(/neither key nor hash/);
    expect(failures[3]?.detail).toMatch(/expires must be an integer/);
    expect(failures[4]?.detail).toMatch(/name must be at most 255 characters/);
    expect(failures[5]?.detail).toMatch(/ratelimits\[0\]\.name must be at least 3.*ratelimits\[0\]\.duration must be at least 1000/);
    expect(failures[6]?.detail).toMatch(/line 1/);
    // Plaintext keys are named by a short prefix, never whole.
    const k3 = keys[3] as string;
    expect(failures[3]?.start).toBe(`${k3.slice(0, Math.min(8, Math.floor(k3.length / 4)))}…`);
    expectNoSecrets(r, f);
    expect(await hashesIn(apiId)).toEqual([hashKey(keys[0] as string)]);
  });

  it("a hash already in use is failed as hash_in_use, by line and hash; the others go in", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const existing = await call("keys.createKey", { apiId, prefix: "live" });
    const taken = existing.body.data?.key as string;
    secrets.push(taken);
    const keys = newKeys(3);
    const f = file("in-use.jsonl", [keys[0], taken, keys[1], keys[2]].map((key) => JSON.stringify({ hash: hashKey(key as string) })).join("\n"));
    const r = await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(4);
    expect(jsonOut(r)).toMatchObject({ imported: 3, failed: 1, failures: { hash_in_use: 1 } });
    expect(failuresOf(f)).toEqual([{ line: 2, reason: "hash_in_use", detail: expect.any(String), hash: hashKey(taken) }]);
    expect(await hashesIn(apiId)).toEqual([...keys.map(hashKey), hashKey(taken)].sort());
  });

  it("killed with SIGKILL mid-run, the same command resumes; every key ends up imported exactly once", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const N = 4000;
    const keys = newKeys(N);
    const f = file("resume.jsonl", `${keys.map((key, i) => JSON.stringify({ key, name: `r${i}` })).join("\n")}\n`);
    const statePath = `${f}.import-state.json`;
    const args = importArgs(f, apiId, migrationId, ["--batch-size", "10", "--concurrency", "2"]);

    // Kill once a few batches are acknowledged (the state file says so), well before the end.
    const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, "bin/keyhold.js"), ...args], {
      cwd: ROOT,
      env: { ...process.env, KEYHOLD_URL: server.url, KEYHOLD_ROOT_KEY: admin },
      stdio: ["ignore", "ignore", "ignore"],
    });
    const exited = new Promise((r) => child.once("exit", r));
    const readState = (): State | undefined => {
      try {
        return JSON.parse(readFileSync(statePath, "utf8")) as State;
      } catch {
        return undefined;
      }
    };
    for (let i = 0; i < 1000 && (readState()?.linesDone ?? 0) < 200 && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
    child.kill("SIGKILL");
    await exited;
    const killedAt = readState() as State;
    expect(killedAt.complete, "the import ended before it could be killed").toBe(false);
    expect(killedAt.linesDone).toBeGreaterThanOrEqual(200);
    expect(killedAt.imported).toBe(killedAt.linesDone);
    // Batches in flight when it was killed may be in the database without being in the state.
    expect((await hashesIn(apiId)).length).toBeGreaterThanOrEqual(killedAt.imported);

    // Also as if the answers to the last five acknowledged batches had been lost:
    // the state goes back 50 lines, and those batches are sent again. The server
    // replays them (same Idempotency-Key, same body) instead of failing them as in use.
    const back = Math.max(0, killedAt.linesDone - 50);
    writeFileSync(statePath, JSON.stringify({ ...killedAt, linesDone: back, imported: back }));

    const r = await cli(args, { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toContain(`resuming ${f} after line ${back}`);
    expect(jsonOut(r)).toEqual({ imported: N, failed: 0, skipped: back, durationMs: expect.any(Number), failures: {} });
    expect(failuresOf(f)).toEqual([]);
    const stored = await hashesIn(apiId);
    expect(stored.length).toBe(N);
    expect(stored).toEqual(keys.map(hashKey).sort());
    for (const i of [0, 199, 200, 2500, N - 1]) {
      expect((await call("keys.verifyKey", { key: keys[i] })).body.data, `key ${i}`).toMatchObject({ valid: true, name: `r${i}` });
    }
    expectNoSecrets(r, f);

    // Run again when complete: nothing is sent, and the summary is the same.
    const again = await cli(args, { KEYHOLD_ROOT_KEY: admin });
    expect(again.code, show(again)).toBe(0);
    expect(jsonOut(again)).toMatchObject({ imported: N, failed: 0, skipped: N });
    expect(again.stderr).toMatch(/imported completely before/);
    expect((await hashesIn(apiId)).length).toBe(N);
  });

  it("Ctrl-C (SIGINT) stops with exit 130 and a hint; the same command then finishes the import", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const N = 2000;
    const keys = newKeys(N);
    const f = file("sigint.jsonl", `${keys.map((key) => JSON.stringify({ key })).join("\n")}\n`);
    const args = importArgs(f, apiId, migrationId, ["--batch-size", "10", "--concurrency", "1"]);
    const child = spawn(process.execPath, [path.join(ROOT, "bin/keyhold.js"), ...args], {
      cwd: ROOT,
      env: { ...process.env, KEYHOLD_URL: server.url, KEYHOLD_ROOT_KEY: admin },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    const linesDone = () => {
      try {
        return (JSON.parse(readFileSync(`${f}.import-state.json`, "utf8")) as State).linesDone;
      } catch {
        return 0;
      }
    };
    for (let i = 0; i < 1000 && linesDone() < 100 && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
    child.kill("SIGINT");
    expect(await exited, stderr).toBe(130);
    expect(stderr).toMatch(/interrupted after line \d+; run the same command again to resume/);

    const r = await cli(args, { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(0);
    expect(jsonOut(r)).toMatchObject({ imported: N, failed: 0 });
    expect(await hashesIn(apiId)).toEqual(keys.map(hashKey).sort());
  });

  it("retries a 503 and a lost answer; the resent batch is replayed by the server, not imported twice", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(20);
    const f = file("retry.jsonl", keys.map((key) => JSON.stringify({ key })).join("\n"));
    // In front of the real server: the 1st request gets a 503, the 2nd reaches the
    // server but its answer is cut off, the 3rd and later pass through.
    const seen: Array<{ idempotencyKey: string; replayed: string | null }> = [];
    const proxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const n = seen.push({ idempotencyKey: String(req.headers["idempotency-key"]), replayed: null });
        if (n === 1) {
          res.writeHead(503, { "content-type": "application/json" }).end(
            JSON.stringify({
              meta: { requestId: "req_proxy" },
              error: { status: 503, title: "Service Unavailable", detail: "try later", type: "x/svc/application/service_unavailable" },
            }),
          );
          return;
        }
        const headers = {
          "content-type": "application/json",
          authorization: String(req.headers.authorization),
          "idempotency-key": String(req.headers["idempotency-key"]),
        };
        const upstream = await fetch(`${server.url}${req.url}`, { method: "POST", headers, body: Buffer.concat(chunks) });
        const text = await upstream.text();
        (seen[n - 1] as { replayed: string | null }).replayed = upstream.headers.get("idempotent-replayed");
        if (n === 2) {
          req.socket.destroy();
          return;
        }
        res.writeHead(upstream.status, { "content-type": "application/json" }).end(text);
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", () => r()));
    try {
      const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const r = await cli(importArgs(f, apiId, migrationId, ["--url", url]), { KEYHOLD_ROOT_KEY: admin });
      expect(r.code, show(r)).toBe(0);
      expect(jsonOut(r)).toMatchObject({ imported: 20, failed: 0, failures: {} });
    } finally {
      await new Promise((r) => proxy.close(r));
    }
    expect(seen.length).toBe(3);
    expect(new Set(seen.map((s) => s.idempotencyKey)).size).toBe(1);
    expect(seen[1]?.replayed).toBeNull(); // ran, answer lost
    expect(seen[2]?.replayed).toBe("true"); // the same answer again, nothing imported twice
    expect(await hashesIn(apiId)).toEqual(keys.map(hashKey).sort());
  });

  it("a state file of another file, api or migration is refused unless --restart", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(3);
    const f = file("state.jsonl", `${JSON.stringify({ key: keys[0] })}\n`);
    expect((await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin })).code).toBe(0);

    const otherMigration = await newMigration();
    const wrongMigration = await cli(importArgs(f, apiId, otherMigration), { KEYHOLD_ROOT_KEY: admin });
    expect(wrongMigration.code, show(wrongMigration)).toBe(1);
    expect(wrongMigration.stdout).toBe("");
    expect(wrongMigration.stderr).toMatch(/records another import \(the migration \(mig_\w+\) differs\).*--restart/);

    writeFileSync(f, `${JSON.stringify({ key: keys[0] })}\n${JSON.stringify({ key: keys[1] })}\n`);
    const changed = await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(changed.code, show(changed)).toBe(1);
    expect(changed.stderr).toMatch(/the file's content differs/);
    expect((await hashesIn(apiId)).length).toBe(1);

    const restarted = await cli(importArgs(f, apiId, migrationId, ["--restart"]), { KEYHOLD_ROOT_KEY: admin });
    expect(restarted.code, show(restarted)).toBe(4);
    expect(jsonOut(restarted)).toMatchObject({ imported: 1, failed: 1, failures: { hash_in_use: 1 } });
    expect(await hashesIn(apiId)).toEqual([hashKey(keys[0] as string), hashKey(keys[1] as string)].sort());
  });

  it("without KEYHOLD_ROOT_KEY it stops before reading anything and says the key comes from the environment only", async () => {
    const f = file("no-root.jsonl", `${JSON.stringify({ key: newKeys(1)[0] })}\n`);
    const r = await cli(importArgs(f, "api_x12", "mig_x12"));
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(/KEYHOLD_ROOT_KEY is not set/);
    expect(r.stderr).toMatch(/never from a flag.*`ps` and shell history/);
    expect(existsSync(`${f}.import-state.json`)).toBe(false);
  });

  it("stops with a message on 403 (no create_key), 401 (unknown root key) and 404 (unknown migration or api), importing nothing", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(5);
    const body = `${keys.map((key) => JSON.stringify({ key })).join("\n")}\n`;
    const readOnly = await h.rootKey(["apis.*.read_key", "apis.*.verify_key"], workspace);
    secrets.push(readOnly);

    const f403 = file("403.jsonl", body);
    const denied = await cli(importArgs(f403, apiId, migrationId), { KEYHOLD_ROOT_KEY: readOnly });
    expect(denied.code, show(denied)).toBe(1);
    expect(denied.stdout).toBe("");
    expect(denied.stderr).toContain(`may not import keys into ${apiId}: it needs apis.*.create_key or apis.${apiId}.create_key (403`);
    expect((JSON.parse(readFileSync(`${f403}.import-state.json`, "utf8")) as State).linesDone).toBe(0);
    expectNoSecrets(denied, f403);

    const f401 = file("401.jsonl", body);
    const unknown = await cli(importArgs(f401, apiId, migrationId), { KEYHOLD_ROOT_KEY: `svc_${randomBytes(20).toString("hex")}` });
    expect(unknown.code, show(unknown)).toBe(1);
    expect(unknown.stderr).toMatch(/the root key in KEYHOLD_ROOT_KEY was refused by .* \(401/);

    const f404 = file("404.jsonl", body);
    const noMigration = await cli(importArgs(f404, apiId, "mig_doesnotexist"), { KEYHOLD_ROOT_KEY: admin });
    expect(noMigration.code, show(noMigration)).toBe(1);
    expect(noMigration.stderr).toMatch(/migration mig_doesnotexist does not exist .*keyhold migration create/);
    // The state file of a run that stopped before its first batch holds nothing: another api needs no --restart.
    const noApi = await cli(importArgs(f404, "api_doesnotexist", migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(noApi.code, show(noApi)).toBe(1);
    expect(noApi.stderr).toMatch(/api api_doesnotexist does not exist/);

    expect(await hashesIn(apiId)).toEqual([]);
  });

  /** A proxy in front of the real server; `handle` answers each request (or passes it on with `forward`). */
  async function proxy(
    handle: (
      req: http.IncomingMessage,
      res: http.ServerResponse,
      body: Buffer,
      forward: () => Promise<{ status: number; text: string }>,
    ) => Promise<void> | void,
  ): Promise<{ url: string; close: () => Promise<void> }> {
    const server_ = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks);
        const forward = async () => {
          const headers: Record<string, string> = { "content-type": "application/json", authorization: String(req.headers.authorization) };
          if (req.headers["idempotency-key"] !== undefined) headers["idempotency-key"] = String(req.headers["idempotency-key"]);
          const upstream = await fetch(`${server.url}${req.url}`, { method: "POST", headers, body });
          return { status: upstream.status, text: await upstream.text() };
        };
        void Promise.resolve(handle(req, res, body, forward)).catch(() => res.destroy());
      });
    });
    await new Promise<void>((r) => server_.listen(0, "127.0.0.1", () => r()));
    return {
      url: `http://127.0.0.1:${(server_.address() as AddressInfo).port}`,
      close: () =>
        new Promise((r) => {
          server_.closeAllConnections();
          server_.close(() => r());
        }),
    };
  }

  const pass = async (res: http.ServerResponse, forward: () => Promise<{ status: number; text: string }>) => {
    const up = await forward();
    res.writeHead(up.status, { "content-type": "application/json" }).end(up.text);
  };

  it("a CSV without a header row stops with a question about the header, and its first row's key is printed and written nowhere", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(3);
    const f = file("headerless.csv", `${keys.map((k, i) => `${k},key ${i},admin`).join("\n")}\n`);
    const r = await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("no `key` or `hash` column: does the file have a header row?");
    expect(r.stderr).toMatch(/3 unknown CSV columns: 'admin', 2 not shown/);
    expectNoSecrets(r, f);
    for (const k of keys) expect(r.stderr).not.toContain((k as string).slice(0, 12));
    expect(await hashesIn(apiId)).toEqual([]);
  });

  it("hex hashes into a sha256 migration: every one refused with the server's reason, in a few requests, and the valid ones imported", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration("sha256");
    const good = newKeys(5);
    const hex = newKeys(250).map((k) => createHash("sha256").update(k).digest("hex"));
    const lines = hex.map((hash) => JSON.stringify({ hash }));
    good.forEach((k, i) => {
      lines.splice(i * 50, 0, JSON.stringify({ hash: hashKey(k) }));
    });
    const f = file("hex-into-sha256.jsonl", `${lines.join("\n")}\n`);
    let requests = 0;
    const p = await proxy(async (_req, res, _body, forward) => {
      requests++;
      await pass(res, forward);
    });
    try {
      const r = await cli(importArgs(f, apiId, migrationId, ["--url", p.url]), { KEYHOLD_ROOT_KEY: admin });
      expect(r.code, show(r)).toBe(4);
      expect(jsonOut(r)).toMatchObject({ imported: 5, failed: 250, failures: { refused: 250 } });
      // The reason once on stderr, not once per record.
      expect(r.stderr.match(/the server refused line \d+: hash is 64 hex characters, but a sha256 migration takes the standard base64 SHA-256/g)).toHaveLength(
        1,
      );
      expect(r.stderr).toContain(`each is in ${f}.failures.jsonl by line`);
    } finally {
      await p.close();
    }
    // The server names up to 100 records per answer: 3 refusals and the request that imports the rest.
    expect(requests).toBeLessThanOrEqual(4);
    const failures = failuresOf(f);
    expect(failures).toHaveLength(250);
    for (const x of failures) {
      expect(x).toMatchObject({ reason: "refused", hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
      expect(x.detail).toMatch(
        /^hash is 64 hex characters, but a sha256 migration takes the standard base64 SHA-256 of the whole key \(44 characters\)\. .*seamapi/,
      );
    }
    expect(failures.map((x) => x.hash)).toEqual(hex);
    expect(await hashesIn(apiId)).toEqual(good.map(hashKey).sort());
  }, 60_000);

  it("a batch whose Idempotency-Key an interrupted request left claimed is sent under a new key, saved first, so a rerun after a kill uses it too", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(5);
    const f = file("interrupted.jsonl", `${keys.map((key) => JSON.stringify({ key })).join("\n")}\n`);
    const statePath = `${f}.import-state.json`;
    // 3 s of "in use" answers instead of the default 30 (the message names the wait).
    const args = importArgs(f, apiId, migrationId, ["--in-use-wait", "3"]);
    // The first request runs on the server, which then "dies" before recording its
    // answer: its idempotency record is put back to running (state 0), as a crash
    // between the COMMIT and the record's completion leaves it; the answer is lost.
    const seen: string[] = [];
    let firstKey: string | undefined;
    let sawNewKey: () => void = () => undefined;
    const newKeySent = new Promise<void>((r) => {
      sawNewKey = r;
    });
    let phase: "interrupt" | "pass" = "interrupt";
    const p = await proxy(async (req, res, _body, forward) => {
      const key = String(req.headers["idempotency-key"]);
      seen.push(key);
      if (phase === "pass") return pass(res, forward);
      if (firstKey === undefined) {
        firstKey = key;
        await forward();
        const keyHash = createHash("sha256").update(key).digest("hex");
        await h.db.pool.query("UPDATE idempotency_records SET state = 0, response = NULL, encryption_key_id = NULL WHERE key_hash = ?", [keyHash]);
        req.socket.destroy();
        return;
      }
      if (key === firstKey) return pass(res, forward); // the real server's 409 idempotency_key_in_use
      sawNewKey(); // left unanswered: the importer is killed while it waits
    });
    try {
      const child = spawn(process.execPath, [path.join(ROOT, "bin/keyhold.js"), ...args, "--url", p.url], {
        cwd: ROOT,
        env: { ...process.env, KEYHOLD_URL: server.url, KEYHOLD_ROOT_KEY: admin },
        stdio: ["ignore", "ignore", "pipe"],
      });
      let stderr = "";
      child.stderr?.on("data", (d: Buffer) => {
        stderr += d.toString();
      });
      const exited = new Promise((r) => child.once("exit", r));
      await Promise.race([newKeySent, exited]);
      const inUseAnswers = seen.filter((k) => k === firstKey).length;
      const newKey = seen.at(-1) as string;
      expect(newKey, stderr).not.toBe(firstKey);
      expect(inUseAnswers, "retried the claimed key before giving it up").toBeGreaterThan(2);
      expect(stderr).toMatch(/left "in use" by an interrupted request for over 3 s; sending it under a new Idempotency-Key/);
      expect((JSON.parse(readFileSync(statePath, "utf8")) as { generations?: Record<string, number> }).generations).toEqual({ "5": 1 });
      child.kill("SIGKILL");
      await exited;

      phase = "pass";
      const before = seen.length;
      const r = await cli([...args, "--url", p.url], { KEYHOLD_ROOT_KEY: admin });
      expect(r.code, show(r)).toBe(4);
      // The rerun goes straight to the new key: no more waiting on the claimed one.
      expect(seen.slice(before)).toEqual([newKey]);
      expect(r.stderr).toMatch(/taking over .*\.lock: the import that held it \(pid \d+\) is no longer running/);
      expect(jsonOut(r)).toMatchObject({ imported: 0, failed: 5, failures: { hash_in_use_maybe_by_interrupted_request: 5 } });
      const failures = failuresOf(f);
      expect(failures.map((x) => [x.line, x.reason])).toEqual([1, 2, 3, 4, 5].map((l) => [l, "hash_in_use_maybe_by_interrupted_request"]));
      expect(failures[0]?.detail).toMatch(/interrupted earlier request for this batch may have imported it/);
      expectNoSecrets(r, f);
    } finally {
      await p.close();
    }
    // The interrupted request did import them, each once.
    expect(await hashesIn(apiId)).toEqual(keys.map(hashKey).sort());
    for (const k of keys) expect((await call("keys.verifyKey", { key: k })).body.data).toMatchObject({ valid: true });
  }, 150_000);

  it("two imports of one file with their own --state keep their own failures files", async () => {
    const keys = newKeys(3);
    const lines = [JSON.stringify({ key: keys[0] }), "{oops", JSON.stringify({ key: keys[1], expires: "soon" }), JSON.stringify({ key: keys[2] })];
    const f = file("two-states.jsonl", `${lines.join("\n")}\n`);
    const stateA = path.join(dir, "run-a.json");
    const stateB = path.join(dir, "run-b.json");
    const a = await cli(importArgs(f, await newApi(), await newMigration(), ["--state", stateA]), { KEYHOLD_ROOT_KEY: admin });
    expect(a.code, show(a)).toBe(4);
    expect(a.stderr).toContain(`each is in ${stateA}.failures.jsonl`);
    const failuresA = readFileSync(`${stateA}.failures.jsonl`, "utf8");
    expect(
      failuresA
        .split("\n")
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { line: number }).line),
    ).toEqual([2, 3]);

    const b = await cli(importArgs(f, await newApi(), await newMigration(), ["--state", stateB, "--batch-size", "1"]), { KEYHOLD_ROOT_KEY: admin });
    expect(b.code, show(b)).toBe(4);
    // Lines 1 and 4 are in use by run A's keys now: B has its own four failures, A keeps its two.
    expect(
      readFileSync(`${stateB}.failures.jsonl`, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => (JSON.parse(l) as { line: number }).line),
    ).toEqual([1, 2, 3, 4]);
    expect(readFileSync(`${stateA}.failures.jsonl`, "utf8")).toBe(failuresA);
    expect(existsSync(`${f}.failures.jsonl`)).toBe(false);
  });

  it("a second run on a state file in use is refused; a lock left by a dead run is taken over and removed at the end", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const f = file(
      "locked.jsonl",
      `${newKeys(2)
        .map((key) => JSON.stringify({ key }))
        .join("\n")}\n`,
    );
    const lockPath = `${f}.import-state.json.lock`;
    writeFileSync(lockPath, `${process.pid}\n`); // this test's process: alive
    const busy = await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(busy.code, show(busy)).toBe(1);
    expect(busy.stdout).toBe("");
    expect(busy.stderr).toContain(`another import (pid ${process.pid}) is using ${f}.import-state.json`);
    expect(existsSync(`${f}.import-state.json`)).toBe(false);
    expect(readFileSync(lockPath, "utf8")).toBe(`${process.pid}\n`);

    const dead = spawnSync(process.execPath, ["-e", ""]).pid;
    writeFileSync(lockPath, `${dead}\n`);
    const r = await cli(importArgs(f, apiId, migrationId), { KEYHOLD_ROOT_KEY: admin });
    expect(r.code, show(r)).toBe(0);
    expect(r.stderr).toContain(`taking over ${lockPath}: the import that held it (pid ${dead}) is no longer running`);
    expect(jsonOut(r)).toMatchObject({ imported: 2, failed: 0 });
    expect(existsSync(lockPath)).toBe(false);
  });

  it("refuses http:// to another machine unless --allow-http; loopback and https:// need nothing", async () => {
    const f = file("http.jsonl", `${JSON.stringify({ key: newKeys(1)[0] })}\n`);
    const remote = await cli(importArgs(f, "api_x12", "mig_x12", ["--url", "http://keyhold.example"]), { KEYHOLD_ROOT_KEY: admin });
    expect(remote.code, show(remote)).toBe(2);
    expect(remote.stderr).toMatch(
      /--url http:\/\/keyhold.example is http:\/\/ to another machine: the root key would cross the network in cleartext.*--allow-http/,
    );
    expect(existsSync(`${f}.import-state.json`)).toBe(false);
    const viaEnv = await cli(importArgs(f, "api_x12", "mig_x12"), { KEYHOLD_ROOT_KEY: admin, KEYHOLD_URL: "http://10.0.0.7:7070" });
    expect(viaEnv.code, show(viaEnv)).toBe(2);
    expect(viaEnv.stderr).toMatch(/is http:\/\/ to another machine/);
    // Accepted: the run goes on to the next check (no root key in the environment).
    for (const extra of [
      ["--url", "http://keyhold.example", "--allow-http"],
      ["--url", "https://keyhold.example"],
      ["--url", "http://localhost:1"],
      ["--url", "http://[::1]:1"],
      ["--url", "http://127.0.0.2:1"],
    ]) {
      const ok = await cli(importArgs(f, "api_x12", "mig_x12", extra));
      expect(ok.code, show(ok)).toBe(1);
      expect(ok.stderr).toMatch(/KEYHOLD_ROOT_KEY is not set/);
    }
  });

  it.skipIf(spawnSync("strace", ["-V"]).status !== 0)("flushes the failures file to disk before the state that counts it (traced with strace)", async () => {
    const apiId = await newApi();
    const migrationId = await newMigration();
    const keys = newKeys(2);
    const f = file("fsync.jsonl", `${JSON.stringify({ key: keys[0] })}\n{oops\n${JSON.stringify({ key: keys[1] })}\n`);
    const trace = path.join(dir, "fsync.trace");
    const env = { ...process.env, KEYHOLD_URL: server.url, KEYHOLD_ROOT_KEY: admin };
    const run = spawnSync(
      "strace",
      [
        "-f",
        "-y",
        "-qq",
        "-o",
        trace,
        "-e",
        "trace=write,pwrite64,writev,pwritev,fsync,fdatasync,rename,renameat,renameat2",
        process.execPath,
        path.join(ROOT, "bin/keyhold.js"),
        ...importArgs(f, apiId, migrationId),
      ],
      {
        cwd: ROOT,
        env,
        encoding: "utf8",
      },
    );
    expect(run.status, run.stderr).toBe(4);
    const failuresFile = realpathSync(`${f}.failures.jsonl`);
    const stateFile = realpathSync(`${f}.import-state.json`);
    const lines = readFileSync(trace, "utf8").split("\n");
    const written = lines.findIndex((l) => /\b(write|pwrite64|writev|pwritev)\(\d+</.test(l) && l.includes(`<${failuresFile}>`) && l.includes('{\\"line\\":2'));
    const synced = lines.findIndex((l, i) => i > written && /\b(fsync|fdatasync)\(\d+</.test(l) && l.includes(`<${failuresFile}>`));
    const stateSaved = lines.findIndex((l, i) => i > written && /\brename/.test(l) && l.includes(`"${stateFile}.tmp"`) && l.includes(`"${stateFile}"`));
    expect(written, "the failure was written").toBeGreaterThanOrEqual(0);
    expect(stateSaved, "the state was saved after it").toBeGreaterThan(written);
    expect(synced, "the failures file was flushed before the state was saved").toBeGreaterThan(written);
    expect(synced).toBeLessThan(stateSaved);
  });

  it("bad usage exits 2 with the usage text", async () => {
    for (const args of [
      ["keys", "import"],
      ["keys", "import", "x.jsonl", "--migration", "mig_1"],
      ["keys", "import", "x.jsonl", "--api"],
      ["keys", "import", "x.jsonl", "--frobnicate"],
      ["keys", "import", "x.txt", "--api", "api_1", "--migration", "mig_1"],
      ["keys", "import", "x.jsonl", "--api", "a", "--migration", "m", "--batch-size", "1001"],
      ["keys", "import", "x.jsonl", "--api", "a", "--migration", "m", "--in-use-wait", "0"],
      ["keys", "import", "x.jsonl", "--api", "a", "--migration", "m", "--in-use-wait", "2.5"],
    ]) {
      const r = await cli(args, { KEYHOLD_ROOT_KEY: admin });
      expect(r.code, show(r)).toBe(2);
      expect(r.stderr).toMatch(/usage:/);
      expect(r.stderr).toContain("keys import FILE");
      expect(r.stdout).toBe("");
    }
  });
});
