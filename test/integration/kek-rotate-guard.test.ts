// `keyhold encryption-key rotate` run without KEYHOLD_ENCRYPTION_KEY (found in review):
// it must refuse, not rewrap every data key under a machine-local key file.
import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { generateEncryptionKey } from "../../src/server/encryption-key.js";
import { DatabaseVault, Keyring, kekId } from "../../src/storage/vault.js";
import { useHarness } from "../harness.js";
import { ROOT } from "../server-process.js";

const K1 = generateEncryptionKey();
const silent = { info() {}, warn() {}, error() {}, debug() {} };

function cli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const base = { ...process.env };
    for (const name of ["KEYHOLD_ENCRYPTION_KEY", "KEYHOLD_PREVIOUS_ENCRYPTION_KEYS", "KEYHOLD_ENV", "NODE_ENV"]) delete base[name];
    const child = spawn(process.execPath, [path.join(ROOT, "bin/keyhold.js"), ...args], { cwd: ROOT, env: { ...base, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("encryption-key rotate", () => {
  const h = useHarness();

  it("does not rewrap the data keys under a machine-local key file when KEYHOLD_ENCRYPTION_KEY is unset", async () => {
    // The servers run with K1; its data key is wrapped by K1.
    const servers = new DatabaseVault(h.db.pool, new Keyring(Buffer.from(K1, "base64")), silent);
    const sealed = await servers.encrypt(h.workspaceId, "secret");
    // An operator retiring K1 names it as previous but forgets the new current key (outside NODE_ENV=production).
    const run = await cli(["encryption-key", "rotate"], { DATABASE_URL: h.config.databaseUrl ?? "", KEYHOLD_PREVIOUS_ENCRYPTION_KEYS: K1 });
    const [r] = (await h.db.pool.query("SELECT kek_id FROM encryption_keys WHERE workspace_id = ?", [h.workspaceId])) as unknown as [{ kek_id: string }[]];
    // Either refused, or left the data key where every server can still open it.
    expect(r[0]?.kek_id, `exit ${run.code}: ${run.stdout} ${run.stderr}`).toBe(kekId(Buffer.from(K1, "base64")));
    const fresh = new DatabaseVault(h.db.pool, new Keyring(Buffer.from(K1, "base64")), silent);
    expect(await fresh.decrypt(h.workspaceId, sealed.encrypted, sealed.encryptionKeyId)).toBe("secret");
  }, 60_000);
});
