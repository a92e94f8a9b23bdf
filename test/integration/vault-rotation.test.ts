// Key-encryption key (KEK) rotation against the real database: instances built
// with different KEYHOLD_ENCRYPTION_KEY / KEYHOLD_PREVIOUS_ENCRYPTION_KEYS share the
// harness database, as servers mid-rotation would; `keyhold encryption-key rotate`
// runs as the real CLI process. Also: production refuses to start without a key,
// and the development fallback says so at warn.
import { beforeAll, describe, expect, it } from "vitest";
import { isEncryptionKey } from "../../src/server/config.js";
import { generateEncryptionKey } from "../../src/server/encryption-key.js";
import { DatabaseVault, Keyring, kekId, rewrapDataKeys, VaultUnavailableError } from "../../src/storage/vault.js";
import { expectOk, show, uid } from "../contract/shared/helpers.js";
import { type Instance, type Res, useHarness } from "../harness.js";
import { ensureBuilt, envWithoutKeys, runScript, startServer } from "../server-process.js";

const K1 = generateEncryptionKey();
const K2 = generateEncryptionKey();
const K3 = generateEncryptionKey();
const K4 = generateEncryptionKey();
const idOf = (k: string) => kekId(Buffer.from(k, "base64"));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a built entry point (dist/…) with exactly these keyhold variables on top of the environment. */
const run = (script: string, args: string[], env: Record<string, string>): Promise<Run> =>
  runScript(script, args, { ...envWithoutKeys(), LOG_LEVEL: "silent", ...env });

describe("key-encryption key rotation", () => {
  const h = useHarness();

  beforeAll(() => ensureBuilt(), 300_000);

  /** The 503 envelope a misconfigured KEK answers (the shared expectError knows no 503 title). */
  function expectKekUnavailable(res: Res): void {
    expect(res.status, show(res)).toBe(503);
    expect(res.body, show(res)).toEqual({
      meta: { requestId: expect.any(String) },
      error: {
        title: "Service Unavailable",
        status: 503,
        type: `${h.docsBase}/api-reference/errors-v2/svc/application/service_unavailable`,
        detail: expect.stringContaining("key-encryption key"),
      },
    });
  }

  const instance = (current: string, previous: string[] = []): Promise<Instance> =>
    h.otherInstance({ KEYHOLD_ENCRYPTION_KEY: current, ...(previous.length > 0 ? { KEYHOLD_PREVIOUS_ENCRYPTION_KEYS: previous.join(",") } : {}) });

  /** The CLI's rotate against the harness database; its one stdout line, parsed. */
  async function rotate(current: string, previous: string[]): Promise<{ run: Run; summary: Record<string, unknown> }> {
    const r = await run("bin/keyhold.js", ["encryption-key", "rotate"], {
      DATABASE_URL: h.config.databaseUrl as string,
      KEYHOLD_ENCRYPTION_KEY: current,
      KEYHOLD_PREVIOUS_ENCRYPTION_KEYS: previous.join(","),
    });
    const lines = r.stdout.split("\n").filter((l) => l !== "");
    expect(lines, `exit ${r.code}\n${r.stdout}\n${r.stderr}`).toHaveLength(1);
    return { run: r, summary: JSON.parse(lines[0] as string) as Record<string, unknown> };
  }

  async function dataKeyRows(workspaceId?: string): Promise<Array<{ workspace_id: string; id: string; wrapped: string; kek_id: string | null }>> {
    const [rows] = await h.db.pool.query(
      `SELECT workspace_id, id, wrapped, kek_id FROM encryption_keys${workspaceId === undefined ? "" : " WHERE workspace_id = ?"} ORDER BY pk`,
      workspaceId === undefined ? [] : [workspaceId],
    );
    return rows as Array<{ workspace_id: string; id: string; wrapped: string; kek_id: string | null }>;
  }

  async function workspaceOf(rk: string, i: Instance): Promise<string> {
    const res = await i.post("/v2/apis.createApi", { name: "probe" }, rk);
    const apiId = expectOk(res).apiId as string;
    const [rows] = await h.db.pool.query("SELECT workspace_id FROM apis WHERE id = ?", [apiId]);
    return (rows as Array<{ workspace_id: string }>)[0]?.workspace_id as string;
  }

  async function createRecoverable(i: Instance, rk: string, apiId: string): Promise<{ keyId: string; key: string }> {
    return expectOk(await i.post("/v2/keys.createKey", { apiId, recoverable: true }, rk)) as { keyId: string; key: string };
  }

  const plaintextOf = async (i: Instance, rk: string, keyId: string): Promise<unknown> =>
    expectOk(await i.post("/v2/keys.getKey", { keyId, decrypt: true }, rk)).plaintext;

  async function listedPlaintexts(i: Instance, rk: string, apiId: string): Promise<Map<string, unknown>> {
    const res = await i.post("/v2/apis.listKeys", { apiId, decrypt: true }, rk);
    const data = expectOk(res, { pagination: true }) as unknown as Array<{ keyId: string; plaintext?: string }>;
    return new Map(data.map((k) => [k.keyId, k.plaintext]));
  }

  it("K1 -> K2: old ciphertexts stay readable with K1 as previous, rotate moves them to K2, a K1-only instance gets a 503", async () => {
    const rk = await h.rootKey(["*"], uid("ws_rotate"));
    const k1 = await instance(K1);
    const apiId = expectOk(await k1.post("/v2/apis.createApi", { name: "rotating" }, rk)).apiId as string;
    const a = await createRecoverable(k1, rk, apiId);
    expect(await plaintextOf(k1, rk, a.keyId)).toBe(a.key);
    const ws = await workspaceOf(rk, k1);
    const [before] = await dataKeyRows(ws);
    // The row names the KEK by fingerprint, never by the key itself.
    expect(before?.kek_id).toBe(idOf(K1));
    expect(JSON.stringify(before)).not.toContain(K1);

    // Mid-rotation: K2 current, K1 previous. Old and new keys decrypt; new keys in
    // this workspace reuse its data key (no second one).
    const mid = await instance(K2, [K1]);
    expect(await plaintextOf(mid, rk, a.keyId)).toBe(a.key);
    const b = await createRecoverable(mid, rk, apiId);
    expect(await plaintextOf(mid, rk, b.keyId)).toBe(b.key);
    expect(await listedPlaintexts(mid, rk, apiId)).toEqual(
      new Map([
        [a.keyId, a.key],
        [b.keyId, b.key],
      ]),
    );
    expect(await dataKeyRows(ws)).toEqual([before]);
    // A workspace's first data key is wrapped by the current KEK.
    const rkNew = await h.rootKey(["*"], uid("ws_new"));
    const apiNew = expectOk(await mid.post("/v2/apis.createApi", { name: "fresh" }, rkNew)).apiId as string;
    const c = await createRecoverable(mid, rkNew, apiNew);
    expect((await dataKeyRows(await workspaceOf(rkNew, mid)))[0]?.kek_id).toBe(idOf(K2));

    const all = await dataKeyRows();
    const notCurrent = all.filter((r) => r.kek_id !== idOf(K2)).length;
    expect(notCurrent).toBeGreaterThan(0);
    const first = await rotate(K2, [K1]);
    expect(first.run.code, first.run.stderr).toBe(0);
    expect(first.summary).toEqual({ kekId: idOf(K2), rewrapped: notCurrent, alreadyCurrent: all.length - notCurrent, failed: 0 });
    const [after] = await dataKeyRows(ws);
    expect(after).toMatchObject({ id: before?.id, kek_id: idOf(K2) });
    expect(after?.wrapped).not.toBe(before?.wrapped);

    // K1 can now be dropped: K2 alone reads everything, old and new.
    const k2 = await instance(K2);
    expect(await plaintextOf(k2, rk, a.keyId)).toBe(a.key);
    expect(await plaintextOf(k2, rk, b.keyId)).toBe(b.key);
    expect(await plaintextOf(k2, rkNew, c.keyId)).toBe(c.key);
    expect(await listedPlaintexts(k2, rk, apiId)).toEqual(
      new Map([
        [a.keyId, a.key],
        [b.keyId, b.key],
      ]),
    );
    // The instance still serving from before the rotation keeps working too.
    expect(await plaintextOf(mid, rk, a.keyId)).toBe(a.key);

    // An instance left on K1 only: a clear 503, never the ciphertext, and no new data key.
    const stale = await instance(K1);
    const [enc] = await h.db.pool.query("SELECT encrypted FROM encrypted_keys WHERE key_id = ?", [a.keyId]);
    const ciphertext = (enc as Array<{ encrypted: string }>)[0]?.encrypted as string;
    const refused: Res[] = [
      await stale.post("/v2/keys.getKey", { keyId: a.keyId, decrypt: true }, rk),
      await stale.post("/v2/apis.listKeys", { apiId, decrypt: true }, rk),
      await stale.post("/v2/keys.createKey", { apiId, recoverable: true }, rk),
    ];
    for (const res of refused) {
      expectKekUnavailable(res);
      for (const secret of [ciphertext, ciphertext.slice(3, 40), a.key, K1, K2]) expect(res.text).not.toContain(secret);
    }
    expect(await dataKeyRows(ws)).toEqual([after]);
    // Reading without decrypt needs no KEK.
    expect(expectOk(await stale.post("/v2/keys.getKey", { keyId: a.keyId }, rk)).keyId).toBe(a.keyId);

    // A second rotate is a no-op.
    const rotated = await dataKeyRows();
    const second = await rotate(K2, [K1]);
    expect(second.run.code, second.run.stderr).toBe(0);
    expect(second.summary).toEqual({ kekId: idOf(K2), rewrapped: 0, alreadyCurrent: all.length, failed: 0 });
    expect(await dataKeyRows()).toEqual(rotated);
  });

  it("a row from before key ids were recorded opens with whichever configured KEK wrapped it, and rotate records the id", async () => {
    const rk = await h.rootKey(["*"], uid("ws_legacy"));
    const k3 = await instance(K3);
    const apiId = expectOk(await k3.post("/v2/apis.createApi", { name: "legacy" }, rk)).apiId as string;
    const a = await createRecoverable(k3, rk, apiId);
    const ws = await workspaceOf(rk, k3);
    // Exactly what the earlier schema held: the same wrapping, no kek id.
    await h.db.pool.query("UPDATE encryption_keys SET kek_id = NULL WHERE workspace_id = ?", [ws]);

    expect(await plaintextOf(await instance(K3), rk, a.keyId)).toBe(a.key);
    expect(await plaintextOf(await instance(K2, [K1, K3]), rk, a.keyId)).toBe(a.key);
    expectKekUnavailable(await (await instance(K2)).post("/v2/keys.getKey", { keyId: a.keyId, decrypt: true }, rk));

    const { run: r, summary } = await rotate(K2, [K1, K3]);
    expect(r.code, r.stderr).toBe(0);
    expect(summary).toMatchObject({ rewrapped: 1, failed: 0 });
    expect((await dataKeyRows(ws))[0]?.kek_id).toBe(idOf(K2));
    expect(await plaintextOf(await instance(K2), rk, a.keyId)).toBe(a.key);
  });

  it("rotate without the KEK a row needs counts it as failed, changes nothing, exits 1 and names the missing key id", async () => {
    const rk = await h.rootKey(["*"], uid("ws_missing"));
    const k1 = await instance(K1);
    const apiId = expectOk(await k1.post("/v2/apis.createApi", { name: "missing" }, rk)).apiId as string;
    await createRecoverable(k1, rk, apiId);
    const ws = await workspaceOf(rk, k1);
    const before = await dataKeyRows();

    const { run: r, summary } = await rotate(K4, []);
    expect(r.code).toBe(1);
    expect(summary).toMatchObject({ kekId: idOf(K4), rewrapped: 0, failed: before.length });
    expect(r.stderr).toContain(`workspace ${ws}`);
    expect(r.stderr).toContain(idOf(K1));
    for (const k of [K1, K2, K3, K4]) expect(r.stderr + r.stdout).not.toContain(k);
    expect(await dataKeyRows()).toEqual(before);

    // The vault logs which key id is missing (once), without any key material.
    const logged: Array<{ obj: unknown; msg: string | undefined }> = [];
    const log = { info() {}, debug() {}, warn() {}, error: (obj: unknown, msg?: string) => logged.push({ obj, msg }) };
    const vault = new DatabaseVault(h.db.pool, new Keyring(Buffer.from(K4, "base64")), log);
    await expect(vault.encrypt(ws, "x")).rejects.toBeInstanceOf(VaultUnavailableError);
    await expect(vault.encrypt(ws, "x")).rejects.toBeInstanceOf(VaultUnavailableError);
    expect(logged).toHaveLength(1);
    const line = JSON.stringify(logged[0]);
    expect(line).toContain(idOf(K1));
    for (const k of [K1, K4]) expect(line).not.toContain(k);
    expect(await dataKeyRows()).toEqual(before);
    expect((await rewrapDataKeys(h.db.pool, new Keyring(Buffer.from(K4, "base64")), () => undefined)).failed).toBe(before.length);
  });

  it("encryption-key generate prints a fresh key in the accepted format", async () => {
    const [a, b] = await Promise.all([run("bin/keyhold.js", ["encryption-key", "generate"], {}), run("bin/keyhold.js", ["encryption-key", "generate"], {})]);
    for (const r of [a, b]) {
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.endsWith("\n")).toBe(true);
      expect(isEncryptionKey(r.stdout.trim())).toBe(true);
    }
    expect(a.stdout).not.toBe(b.stdout);
  });

  it("production without KEYHOLD_ENCRYPTION_KEY: the server exits 2 and rotate refuses, each with one line naming the variable", async () => {
    const env = { DATABASE_URL: h.config.databaseUrl as string, NODE_ENV: "production" };
    const server = await run("dist/src/main.js", [], { ...env, PORT: "0", GRPC_PORT: "0", HOST: "127.0.0.1" });
    expect(server.code, server.stderr).toBe(2);
    const cli = await run("bin/keyhold.js", ["encryption-key", "rotate"], env);
    expect(cli.code, cli.stderr).not.toBe(0);
    expect(cli.stdout).toBe("");
    for (const r of [server, cli]) {
      expect(r.stderr).toMatch(
        /^keyhold: invalid configuration: KEYHOLD_ENCRYPTION_KEY is required in production \(NODE_ENV=production\): .*npx keyhold encryption-key generate.*\n$/,
      );
      expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
    }
    // Commands that never decrypt still run there.
    const list = await run("bin/keyhold.js", ["root-key", "list", "--workspace", uid("nobody")], env);
    expect(list.code, list.stderr).toBe(0);
  });

  it("outside production the server says once, at warn, that it uses the local key file and production needs the variable", async () => {
    const server = await startServer(h.config.databaseUrl as string, { KEYHOLD_ENCRYPTION_KEY: "", NODE_ENV: "development" });
    try {
      const warnings = server
        .output()
        .split("\n")
        .filter((l) => l.includes("key-encryption key file"));
      expect(warnings, server.output()).toHaveLength(1);
      const rec = JSON.parse(warnings[0] as string) as { level: number; msg: string; file: string };
      expect(rec.level).toBe(40);
      expect(rec.msg).toContain("KEYHOLD_ENCRYPTION_KEY");
      expect(rec.file).toMatch(/\.keyhold[\\/]encryption\.key$/);
    } finally {
      await server.kill();
    }
  });
});
