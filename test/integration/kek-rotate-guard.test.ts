// `keyhold encryption-key rotate` run without KEYHOLD_ENCRYPTION_KEY (found in review):
// it must refuse, not rewrap every data key under a machine-local key file.
import { describe, expect, it } from "vitest";
import { generateEncryptionKey } from "../../src/server/encryption-key.js";
import { DatabaseVault, Keyring, kekId } from "../../src/storage/vault.js";
import { useHarness } from "../harness.js";
import { envWithoutKeys, runScript } from "../server-process.js";

const K1 = generateEncryptionKey();
const silent = { info() {}, warn() {}, error() {}, debug() {} };

const cli = (args: string[], env: Record<string, string>) => runScript("bin/keyhold.js", args, { ...envWithoutKeys(), ...env });

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
