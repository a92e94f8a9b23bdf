// keyhold's command line: root keys, migrations and key-encryption keys, against
// the same database and configuration the server uses (DATABASE_URL, or the
// private server under .keyhold/). Results go to stdout as JSON (a generated key
// as a bare line, for `$(...)`); progress and errors go to stderr.
import { parseArgs } from "node:util";
import { hashKey } from "../domain/keys/generate.js";
import { generateRootKey } from "../domain/auth/root-key.js";
import { newId } from "../domain/ids.js";
import { type Config, ConfigError, loadConfig } from "../server/config.js";
import { generateEncryptionKey, loadKeyring } from "../server/encryption-key.js";
import { migrate, openDatabase, type Database } from "../storage/db.js";
import { NoDatabaseServerError } from "../storage/private-server.js";
import { insertRootKey, listRootKeys, revokeRootKey } from "../storage/root-keys.js";
import { exec } from "../storage/sql.js";
import { rewrapDataKeys } from "../storage/vault.js";
import { ensureWorkspace, findWorkspaceByName } from "../storage/workspaces.js";

const USAGE = `usage:
  keyhold root-key create --workspace <name> --permissions <comma list> [--name <label>]
  keyhold root-key list --workspace <name>
  keyhold root-key revoke <keyId>
  keyhold migrate
  keyhold encryption-key generate
  keyhold encryption-key rotate

encryption-key generate prints a new key for KEYHOLD_ENCRYPTION_KEY. encryption-key
rotate rewraps every data key with KEYHOLD_ENCRYPTION_KEY, opening them with it or
KEYHOLD_PREVIOUS_ENCRYPTION_KEYS; afterwards the previous keys can be removed.

Permissions look like apis.*.create_key or apis.<apiId>.read_api; * alone grants everything.
The database is DATABASE_URL, or keyhold's private server under .keyhold/ when it is unset.`;

const PERMISSION = /^[a-zA-Z0-9_.*:\-]{1,256}$/;

class UsageError extends Error {}

const log = (line: string) => process.stderr.write(`keyhold: ${line}\n`);
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function withDatabase<T>(fn: (db: Database, config: Config) => Promise<T>, needsEncryptionKey = false): Promise<T> {
  const config = loadConfig(process.env, { needsEncryptionKey });
  const db = await openDatabase(config.databaseUrl, log);
  try {
    await migrate(db.pool, log);
    return await fn(db, config);
  } finally {
    await db.close();
  }
}

async function run(argv: string[]): Promise<void> {
  const [cmd, sub, ...rest] = argv;
  if (cmd === "migrate") {
    const applied = await withDatabase((db) => migrate(db.pool, log));
    out({ applied });
    return;
  }
  if (cmd === "encryption-key") return encryptionKey(sub, rest);
  if (cmd !== "root-key") throw new UsageError(cmd === undefined ? "no command given" : `unknown command '${cmd}'`);
  const { values, positionals } = parseArgs({
    args: rest,
    options: { workspace: { type: "string" }, permissions: { type: "string" }, name: { type: "string" } },
    allowPositionals: true,
  });
  if (sub === "create") {
    const workspace = values.workspace?.trim();
    if (!workspace) throw new UsageError("--workspace is required");
    if (workspace.length > 256) throw new UsageError("--workspace must be at most 256 characters");
    const permissions = (values.permissions ?? "").split(",").map((p) => p.trim()).filter(Boolean);
    if (permissions.length === 0) throw new UsageError("--permissions is required (a comma-separated list, e.g. apis.*.create_key)");
    const bad = permissions.find((p) => !PERMISSION.test(p));
    if (bad !== undefined) throw new UsageError(`'${bad}' is not a permission (letters, digits and . _ * : - only)`);
    const result = await withDatabase(async (db) => {
      const now = Date.now();
      const ws = await ensureWorkspace(db.pool, workspace, now);
      const rootKey = generateRootKey();
      const keyId = newId("key", now);
      await insertRootKey(db.pool, {
        id: keyId,
        workspaceId: ws.id,
        hash: hashKey(rootKey),
        start: rootKey.slice(0, 8),
        name: values.name ?? null,
        permissions,
        now,
      });
      return { workspaceId: ws.id, keyId, rootKey };
    });
    out(result);
    return;
  }
  if (sub === "list") {
    const workspace = values.workspace?.trim();
    if (!workspace) throw new UsageError("--workspace is required");
    const keys = await withDatabase(async (db) => {
      const ws = await findWorkspaceByName(db.pool, workspace);
      return ws ? listRootKeys(db.pool, ws.id) : [];
    });
    out({ workspace, keys });
    return;
  }
  if (sub === "revoke") {
    const keyId = positionals[0];
    if (!keyId) throw new UsageError("give the keyId to revoke");
    const hash = await withDatabase(async (db) => {
      const h = await revokeRootKey(db.pool, keyId, Date.now());
      // Running servers evict it from their caches on their next poll.
      if (h) await exec(db.pool, "INSERT INTO cache_invalidations (kind, cache_key, created_at_m) VALUES ('rootkey', ?, ?)", [h, Date.now()]);
      return h;
    });
    if (!hash) {
      log(`no live root key ${keyId}`);
      process.exitCode = 1;
      return;
    }
    out({ revoked: keyId });
    return;
  }
  throw new UsageError(sub === undefined ? "root-key needs create, list or revoke" : `unknown root-key command '${sub}'`);
}

async function encryptionKey(sub: string | undefined, rest: string[]): Promise<void> {
  if (rest.length > 0) throw new UsageError(`encryption-key ${sub} takes no arguments`);
  if (sub === "generate") {
    process.stdout.write(`${generateEncryptionKey()}\n`);
    return;
  }
  if (sub === "rotate") {
    // Never rotate onto a machine-local key file: the data keys would end up under
    // a key no server has. The new key is always named explicitly, in every mode.
    if (loadConfig(process.env, { needsEncryptionKey: true }).encryptionKey === undefined) {
      throw new ConfigError(["encryption-key rotate needs KEYHOLD_ENCRYPTION_KEY set to the new key (the one every server uses), and the old one in KEYHOLD_PREVIOUS_ENCRYPTION_KEYS"]);
    }
    const summary = await withDatabase(async (db, config) => {
      const keyring = loadKeyring(config, { warn: (_obj, msg) => log(msg ?? "") });
      return rewrapDataKeys(db.pool, keyring, (row) =>
        log(`cannot rewrap the data key of workspace ${row.workspaceId}: its key-encryption key ${row.kekId ?? "(not recorded)"} is not configured`),
      );
    }, true);
    out(summary);
    // Retired keys must stay configured until a run ends with nothing failed.
    if (summary.failed > 0) process.exitCode = 1;
    return;
  }
  throw new UsageError(sub === undefined ? "encryption-key needs generate or rotate" : `unknown encryption-key command '${sub}'`);
}

run(process.argv.slice(2)).catch((err) => {
  if (err instanceof UsageError) {
    process.stderr.write(`keyhold: ${err.message}\n\n${USAGE}\n`);
    process.exit(2);
  }
  if (err instanceof ConfigError || err instanceof NoDatabaseServerError) {
    process.stderr.write(`keyhold: ${err.message}\n`);
    process.exit(3);
  }
  process.stderr.write(`keyhold: ${(err as Error).message}\n`);
  process.exit(1);
});
