// keyhold's command line: root keys, migrations, key migrations and key-encryption
// keys, against the same database and configuration the server uses (DATABASE_URL,
// or the private server under .keyhold/); `keys import` alone is a client of the
// HTTP API (src/cli/import.ts). Results go to stdout as JSON (a generated key as a
// bare line, for `$(...)`); progress and errors go to stderr.
import { parseArgs } from "node:util";
import { AppError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { audited, cliActor } from "../domain/audit/audit.js";
import { listWorkspaceLogs } from "../domain/audit/list.js";
import { issueRootKey, listRootKeys, type RootKeyDeps, revokeRootKey, rotateRootKey, updateRootKey, validateRootKeyInput } from "../domain/auth/root-keys.js";
import { systemClock } from "../domain/clock.js";
import { isEmail, normalizeEmail } from "../domain/operators/email.js";
import { createOperator } from "../domain/operators/operators.js";
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from "../domain/operators/password.js";
import { ensureCliWorkspace } from "../domain/operators/workspaces.js";
import { NoDatabaseServerError } from "../embedded-db/private-server.js";
import { type Config, ConfigError, loadConfig } from "../server/config.js";
import { openConfiguredDatabase } from "../server/database.js";
import { generateEncryptionKey, loadKeyring } from "../server/encryption-key.js";
import { type Database, migrate } from "../storage/db.js";
import { insertInvalidation } from "../storage/invalidations.js";
import { insertKeyMigration, type MigrationAlgorithm } from "../storage/key-migrations.js";
import { OperatorExistsError } from "../storage/operators.js";
import { rewrapDataKeys } from "../storage/vault.js";
import { findWorkspaceByName } from "../storage/workspaces.js";
import type { Format } from "./import-records.js";
import { readPassword } from "./password-input.js";

const USAGE = `usage:
  keyhold root-key create --workspace <name> --permissions <comma list> [--name <label>] [--expires <ISO time|ms>]
  keyhold root-key list --workspace <name>
  keyhold root-key disable <keyId>
  keyhold root-key enable <keyId>
  keyhold root-key set-permissions <keyId> --permissions <comma list>
  keyhold root-key set-expiry <keyId> --expires <ISO time|ms|never>
  keyhold root-key rotate <keyId> [--grace-ms <ms>]
  keyhold root-key revoke <keyId>
  keyhold audit list --workspace <name> | --operator-events [--limit 50] [--action <a,b>] [--actor <id>] [--resource <id>]
                     [--since <ISO time|ms>] [--until <ISO time|ms>] [--cursor <c>]
  keyhold migration create --workspace <name> --algorithm <sha256|github.com/seamapi/prefixed-api-key>
  keyhold keys import FILE --api <apiId> --migration <migrationId> [--url <url>] [--format jsonl|csv]
                           [--batch-size 1000] [--concurrency 2] [--state PATH] [--restart] [--allow-http]
                           [--in-use-wait 30]
  keyhold admin create --email <email> [--workspace <name>] [--password-stdin]
  keyhold migrate
  keyhold encryption-key generate
  keyhold encryption-key rotate

encryption-key generate prints a new key for KEYHOLD_ENCRYPTION_KEY. encryption-key
rotate rewraps every data key with KEYHOLD_ENCRYPTION_KEY, opening them with it or
KEYHOLD_PREVIOUS_ENCRYPTION_KEYS; afterwards the previous keys can be removed.

keys import reads JSONL or CSV records with a plaintext key (hashed here; it is
never sent) or a hash, and sends them to keys.migrateKeys at --url (KEYHOLD_URL,
default http://127.0.0.1:7070) with the root key in KEYHOLD_ROOT_KEY; http:// is
refused for any host but this machine unless --allow-http (the root key would
cross the network in cleartext). It resumes an interrupted run from
FILE.import-state.json (--state PATH) and writes what failed, by line, to
FILE.failures.jsonl (PATH.failures.jsonl with --state PATH). A batch whose
Idempotency-Key an interrupted request left "in use" is sent under a new one
after --in-use-wait seconds (default 30) of such answers. Exit 0: all
imported; 4: some failed; 1: it stopped; 2: bad usage.

admin create makes a dashboard operator, linked to --workspace (created if
missing). The password is prompted for (without echo) or, with --password-stdin,
read from stdin; never from a flag. At least ${MIN_PASSWORD_LENGTH} characters.

root-key rotate prints a new root key with the same name and permissions; the old
one keeps working for --grace-ms (default 0: revoked at once). Every root-key
change is in the audit log with the actor "cli"; audit list prints the
workspace's records, newest first, as JSON (--operator-events: the dashboard's
sign-ins, failed sign-ins and sign-outs, which belong to no workspace).

Permissions look like apis.*.create_key or apis.<apiId>.read_api; * alone grants everything.
The database is DATABASE_URL, or keyhold's private server under .keyhold/ when it is unset.`;

class UsageError extends Error {}

const log = (line: string) => process.stderr.write(`keyhold: ${line}\n`);
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

async function withDatabase<T>(fn: (db: Database, config: Config) => Promise<T>, needsEncryptionKey = false): Promise<T> {
  const config = loadConfig(process.env, { needsEncryptionKey });
  const db = await openConfiguredDatabase(config.databaseUrl, log);
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
  if (cmd === "migration") return migration(sub, rest);
  if (cmd === "keys") return keys(sub, rest);
  if (cmd === "admin") return admin(sub, rest);
  if (cmd === "audit") return audit(sub, rest);
  if (cmd !== "root-key") throw new UsageError(cmd === undefined ? "no command given" : `unknown command '${cmd}'`);
  const { values, positionals } = usageArgs(() =>
    parseArgs({
      args: rest,
      options: {
        workspace: { type: "string" },
        permissions: { type: "string" },
        name: { type: "string" },
        expires: { type: "string" },
        "grace-ms": { type: "string" },
      },
      allowPositionals: true,
    }),
  );
  const permissionList = () =>
    (values.permissions ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
  if (sub === "create") {
    const workspace = values.workspace?.trim();
    if (!workspace) throw new UsageError("--workspace is required");
    if (workspace.length > 256) throw new UsageError("--workspace must be at most 256 characters");
    const permissions = (values.permissions ?? "")
      .split(",")
      .map((p) => p.trim())
      .filter(Boolean);
    if (permissions.length === 0) throw new UsageError("--permissions is required (a comma-separated list, e.g. apis.*.create_key)");
    // The domain's checks (domain/auth/root-keys.ts), before the workspace is made: bad usage creates nothing.
    const expires = values.expires === undefined ? undefined : timeArg("--expires", values.expires);
    await usageErrors(async () => validateRootKeyInput({ name: values.name, permissions }));
    if (expires !== undefined && expires <= Date.now()) throw new UsageError("--expires must be in the future");
    const result = await withRootKeys(async (deps) => {
      const ws = await ensureCliWorkspace(deps, workspace);
      return { workspaceId: ws.id, ...(await issueRootKey(deps, cliActor(ws.id), { workspaceId: ws.id, name: values.name, permissions, expires })) };
    });
    out(result);
    return;
  }
  if (sub === "list") {
    const workspace = values.workspace?.trim();
    if (!workspace) throw new UsageError("--workspace is required");
    const keys = await withRootKeys(async (deps) => {
      const ws = await findWorkspaceByName(deps.pool, workspace);
      return ws ? listRootKeys(deps, ws.id) : [];
    });
    out({ workspace, keys });
    return;
  }
  const changes: Record<string, (deps: RootKeyDeps, keyId: string) => Promise<unknown>> = {
    disable: (deps, keyId) => updateRootKey(deps, cliActor(undefined), { keyId, workspaceId: undefined, enabled: false }),
    enable: (deps, keyId) => updateRootKey(deps, cliActor(undefined), { keyId, workspaceId: undefined, enabled: true }),
    "set-permissions": (deps, keyId) => {
      const permissions = permissionList();
      if (permissions.length === 0) throw new UsageError("--permissions is required (a comma-separated list)");
      return updateRootKey(deps, cliActor(undefined), { keyId, workspaceId: undefined, permissions });
    },
    "set-expiry": (deps, keyId) => {
      if (values.expires === undefined) throw new UsageError("--expires is required (an ISO time, Unix ms, or never)");
      const expires = values.expires === "never" ? 0 : timeArg("--expires", values.expires);
      return updateRootKey(deps, cliActor(undefined), { keyId, workspaceId: undefined, expires });
    },
    rotate: (deps, keyId) => {
      const grace = values["grace-ms"] === undefined ? 0 : Number(values["grace-ms"]);
      if (!Number.isSafeInteger(grace) || grace < 0) throw new UsageError("--grace-ms must be a whole number of milliseconds");
      return rotateRootKey(deps, cliActor(undefined), { keyId, workspaceId: undefined, gracePeriodMs: grace });
    },
    revoke: async (deps, keyId) => {
      await revokeRootKey(deps, cliActor(undefined), { keyId, workspaceId: undefined });
      return { revoked: keyId };
    },
  };
  const change = sub === undefined ? undefined : changes[sub];
  if (change !== undefined) {
    const keyId = positionals[0];
    if (!keyId) throw new UsageError(`give the keyId to ${sub}`);
    const result = await usageErrors(() =>
      withRootKeys(async (deps) => {
        try {
          return await change(deps, keyId);
        } catch (err) {
          if (err instanceof AppError && err.code === "err:svc:data:key_not_found") return undefined;
          throw err;
        }
      }),
    );
    if (result === undefined) {
      log(`no live root key ${keyId}`);
      process.exitCode = 1;
      return;
    }
    out(result);
    return;
  }
  throw new UsageError(
    sub === undefined ? "root-key needs create, list, disable, enable, set-permissions, set-expiry, rotate or revoke" : `unknown root-key command '${sub}'`,
  );
}

/**
 * The root-key operations' dependencies from the CLI: the database, the clock,
 * and invalidations that running servers read on their next poll (the CLI has
 * no cache of its own).
 */
function withRootKeys<T>(fn: (deps: RootKeyDeps) => Promise<T>): Promise<T> {
  return withDatabase((db) =>
    fn({
      pool: db.pool,
      clock: systemClock,
      invalidate: (kind, id) => insertInvalidation(db.pool, kind, id, Date.now()),
    }),
  );
}

/** A time given as an ISO 8601 string or Unix milliseconds. */
function timeArg(flag: string, raw: string): number {
  const t = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isSafeInteger(t) || t <= 0) throw new UsageError(`${flag} must be an ISO time (2027-01-31T12:00:00Z) or Unix milliseconds`);
  return t;
}

/** `keyhold audit list`: a workspace's audit records, newest first, as JSON. */
async function audit(sub: string | undefined, rest: string[]): Promise<void> {
  if (sub !== "list") throw new UsageError(sub === undefined ? "audit needs list" : `unknown audit command '${sub}'`);
  const { values } = usageArgs(() =>
    parseArgs({
      args: rest,
      options: {
        workspace: { type: "string" },
        limit: { type: "string" },
        action: { type: "string" },
        actor: { type: "string" },
        resource: { type: "string" },
        since: { type: "string" },
        until: { type: "string" },
        cursor: { type: "string" },
        "operator-events": { type: "boolean" },
      },
    }),
  );
  const workspace = values.workspace?.trim();
  const operatorEvents = values["operator-events"] === true;
  if (operatorEvents === (workspace !== undefined && workspace !== "")) {
    throw new UsageError("give --workspace <name>, or --operator-events for sign-ins and other events outside any workspace");
  }
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw new UsageError("--limit must be 1 to 100");
  const input = {
    limit,
    actions: values.action === undefined ? [] : values.action.split(",").map((a) => a.trim()),
    actorId: values.actor,
    resourceId: values.resource,
    start: values.since === undefined ? undefined : timeArg("--since", values.since),
    end: values.until === undefined ? undefined : timeArg("--until", values.until),
    cursor: values.cursor,
  };
  const page = await usageErrors(() =>
    withDatabase(async (db) => {
      if (operatorEvents) return listWorkspaceLogs({ pool: db.pool }, undefined, input);
      const ws = await findWorkspaceByName(db.pool, workspace ?? "");
      return ws === undefined ? undefined : listWorkspaceLogs({ pool: db.pool }, ws.id, input);
    }),
  );
  if (page === undefined) {
    log(`no workspace named '${workspace ?? ""}'`);
    process.exitCode = 1;
    return;
  }
  out(page);
}

/** A refusal of the domain's checks, said as a usage error (exit 2). */
async function usageErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError && err.code === "err:svc:application:invalid_input") {
      throw new UsageError((err.errors ?? []).map((e) => e.message).join("; ") || (err.detail ?? "invalid input"));
    }
    throw err;
  }
}

/** parseArgs' own refusals (an unknown option, a missing value) are usage errors too. */
function usageArgs<T>(parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code?.startsWith("ERR_PARSE_ARGS_")) throw new UsageError((err as Error).message);
    throw err;
  }
}

const ALGORITHMS: readonly MigrationAlgorithm[] = ["sha256", "github.com/seamapi/prefixed-api-key"];

async function migration(sub: string | undefined, rest: string[]): Promise<void> {
  if (sub !== "create") throw new UsageError(sub === undefined ? "migration needs create" : `unknown migration command '${sub}'`);
  const { values } = usageArgs(() => parseArgs({ args: rest, options: { workspace: { type: "string" }, algorithm: { type: "string" } } }));
  const workspace = values.workspace?.trim();
  if (!workspace) throw new UsageError("--workspace is required");
  const algorithm = ALGORITHMS.find((a) => a === values.algorithm);
  if (algorithm === undefined) throw new UsageError(`--algorithm must be one of ${ALGORITHMS.join(", ")}`);
  const created = await withDatabase(async (db) => {
    // An existing workspace only: a typo must not give a migration nobody's root key can use.
    const ws = await findWorkspaceByName(db.pool, workspace);
    if (!ws) return undefined;
    const now = Date.now();
    const migrationId = newId("mig", now);
    await audited(
      { pool: db.pool, clock: systemClock },
      cliActor(ws.id),
      (conn) => insertKeyMigration(conn, { id: migrationId, workspaceId: ws.id, algorithm, createdAt: now }),
      () => ({ action: "key_migration.create", resources: [{ type: "migration", id: migrationId }], description: "Created a key migration with algorithm." }),
    );
    return { migrationId, workspaceId: ws.id, algorithm };
  });
  if (!created) {
    log(`no workspace named '${workspace}' (root-key create --workspace makes one)`);
    process.exitCode = 1;
    return;
  }
  out(created);
}

async function keys(sub: string | undefined, rest: string[]): Promise<void> {
  if (sub !== "import") throw new UsageError(sub === undefined ? "keys needs import" : `unknown keys command '${sub}'`);
  // Loaded for this command only: the importer and its CSV parser, progress bar and
  // message schemas were ~0.2 s of every other command's start-up here.
  const { failuresPathOf, ImportError, IN_USE_WAIT_SECONDS, importKeys, MAX_BATCH } = await import("./import.js");
  const { values, positionals } = usageArgs(() =>
    parseArgs({
      args: rest,
      options: {
        api: { type: "string" },
        migration: { type: "string" },
        url: { type: "string" },
        "batch-size": { type: "string" },
        concurrency: { type: "string" },
        format: { type: "string" },
        state: { type: "string" },
        restart: { type: "boolean" },
        "allow-http": { type: "boolean" },
        "in-use-wait": { type: "string" },
      },
      allowPositionals: true,
    }),
  );
  const file = positionals[0];
  if (file === undefined || positionals.length > 1) throw new UsageError("keys import takes one FILE");
  if (!values.api) throw new UsageError("--api is required (the apiId the keys go into)");
  if (!values.migration) throw new UsageError("--migration is required (from `keyhold migration create`)");
  const format = values.format ?? (/\.csv$/i.test(file) ? "csv" : /\.(jsonl|ndjson)$/i.test(file) ? "jsonl" : undefined);
  if (format !== "csv" && format !== "jsonl")
    throw new UsageError(
      values.format === undefined ? `cannot tell the format of ${file} from its name: pass --format jsonl or --format csv` : "--format must be jsonl or csv",
    );
  const batchSize = wholeNumber("--batch-size", values["batch-size"], MAX_BATCH, 1, MAX_BATCH);
  const concurrency = wholeNumber("--concurrency", values.concurrency, 2, 1, 8);
  const inUseWait = wholeNumber("--in-use-wait", values["in-use-wait"], IN_USE_WAIT_SECONDS, 1, 3600);
  const url = (values.url ?? process.env.KEYHOLD_URL ?? "http://127.0.0.1:7070").replace(/\/+$/, "");
  if (!/^https?:\/\/[^/]/.test(url) || !URL.canParse(url)) throw new UsageError(`--url must be an http:// or https:// address (got '${url}')`);
  const host = new URL(url).hostname;
  if (url.startsWith("http:") && !isLoopback(host) && values["allow-http"] !== true) {
    throw new UsageError(
      `--url ${url} is http:// to another machine: the root key would cross the network in cleartext, readable by anyone on the way. Use https://, or pass --allow-http if the network between is trusted`,
    );
  }
  // Never a flag: an argument shows in `ps` and in shell history.
  const rootKey = process.env.KEYHOLD_ROOT_KEY?.trim();
  if (!rootKey) {
    throw new ImportError(
      "KEYHOLD_ROOT_KEY is not set: put a root key with apis.*.create_key in it (it is read from the environment only, never from a flag, which would show in `ps` and shell history)",
    );
  }
  const statePath = values.state ?? `${file}.import-state.json`;
  const summary = await importKeys({
    file,
    format: format satisfies Format,
    apiId: values.api,
    migrationId: values.migration,
    url,
    rootKey,
    batchSize,
    concurrency,
    statePath,
    failuresPath: failuresPathOf(statePath),
    restart: values.restart === true,
    inUseWaitMs: inUseWait * 1000,
  });
  out(summary);
  // Its own code: 2 is bad usage and 3 a configuration problem, for every command.
  if (summary.failed > 0) process.exitCode = 4;
}

async function admin(sub: string | undefined, rest: string[]): Promise<void> {
  if (sub !== "create") throw new UsageError(sub === undefined ? "admin needs create" : `unknown admin command '${sub}'`);
  const { values } = usageArgs(() =>
    parseArgs({ args: rest, options: { email: { type: "string" }, workspace: { type: "string" }, "password-stdin": { type: "boolean" } } }),
  );
  const email = normalizeEmail(values.email ?? "");
  if (email === "") throw new UsageError("--email is required");
  if (!isEmail(email)) throw new UsageError(`--email '${email}' is not an email address`);
  const workspace = values.workspace?.trim();
  if (workspace !== undefined && (workspace === "" || workspace.length > 256)) throw new UsageError("--workspace must be 1-256 characters");
  // Never a flag: an argument shows in `ps` and in shell history.
  const password = await readPassword(values["password-stdin"] === true);
  if (password.length < MIN_PASSWORD_LENGTH) throw new UsageError(`the password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH) throw new UsageError(`the password must be at most ${MAX_PASSWORD_LENGTH} characters`);
  const passwordHash = await hashPassword(password);
  const created = await withDatabase(async (db) => {
    // The operator, its workspace (made when missing) and their audit records, in one transaction.
    const made = await createOperator({ pool: db.pool, clock: systemClock }, { email, passwordHash, workspace });
    return { operatorId: made.operatorId, email, ...(made.workspaceId === undefined ? {} : { workspaceId: made.workspaceId }) };
  }).catch((err) => {
    if (err instanceof OperatorExistsError) throw new UsageError(err.message);
    throw err;
  });
  out(created);
}

/** This machine only: localhost, 127.0.0.0/8 and ::1 (URL gives IPv6 hosts in brackets). */
const isLoopback = (host: string): boolean => host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

function wholeNumber(flag: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  return n;
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
      throw new ConfigError([
        "encryption-key rotate needs KEYHOLD_ENCRYPTION_KEY set to the new key (the one every server uses), and the old one in KEYHOLD_PREVIOUS_ENCRYPTION_KEYS",
      ]);
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
