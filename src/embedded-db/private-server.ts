// A private MySQL-compatible server for running without DATABASE_URL.
//
// When the service (or the CLI, or the test suite) starts with no DATABASE_URL it
// runs its own MariaDB/MySQL server from binaries already installed on the
// machine, with its data in <projectDir>/.keyhold/mysql. Nothing is downloaded.
//
// Files under <projectDir>/.keyhold/ (mode 0700):
//   mysql/          data folder (initialised into mysql.init/ and renamed: the rename is the commit)
//   mysql.sock      unix socket (or <tmpdir>/keyhold-<hash>/mysql.sock when the path would be too long)
//   mysql.pid       pid file written by the server
//   mysql.log       server error log plus the output of initialisation
//   mysql.lock      held (O_EXCL) while a process initialises / starts / adopts the server
//   mysql.owner     {"ownerPid","serverPid"}: which process is responsible for stopping the server
//
// Several processes may call startPrivateServer() for the same project: the first one
// starts the server and owns it; the others join it (owned=false). A server whose
// owner died without stopping it (kill -9, crash) is adopted by the next caller,
// which then owns it. A stale pid file / socket from a crashed server is removed and
// the server started again.
//
// Run directly (after `npm run build`):
//   node dist/src/embedded-db/private-server.js [projectDir] [--hold]
// starts (or joins) the server, prints {"socketPath","owned","version"} as one JSON
// line on stdout, then stops it again — or with --hold keeps it until Ctrl-C.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, realpathSync } from "node:fs";
import * as fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Connection, RowDataPacket } from "mysql2/promise";
import mysql from "mysql2/promise";

export interface PrivateServer {
  /** Unix socket to connect to as user root with no password. */
  socketPath: string;
  /** True when this process started the server (and so stops it); false when it joined one already running. */
  owned: boolean;
  /** Stops the server if this process owns it; otherwise does nothing. Idempotent. */
  stop(): Promise<void>;
}

const SEARCHED_DIRS = ["/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin", "/usr/libexec"];

export class NoDatabaseServerError extends Error {
  constructor(detail?: string) {
    super(
      (detail ? `${detail}. ` : "") +
        "No MySQL-compatible database server is installed: looked for `mariadbd` and `mysqld` on PATH and in " +
        `${SEARCHED_DIRS.join(", ")}. ` +
        "Install one (Debian/Ubuntu: `apt-get install mariadb-server`; or MySQL 8) and start again — keyhold runs its own " +
        "private server from it in .keyhold/mysql — or set DATABASE_URL=mysql://user:pass@host:3306/keyhold to use an existing server.",
    );
    this.name = "NoDatabaseServerError";
  }
}

// Timings.
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
const KILL_WAIT_MS = 5_000;
const INIT_TIMEOUT_MS = 180_000;
const LOCK_TIMEOUT_MS = INIT_TIMEOUT_MS + READY_TIMEOUT_MS + 30_000;
const LOCK_MAX_AGE_MS = 10 * 60_000; // nothing legitimately holds the lock this long
const POLL_MS = 150;
const PROGRESS_EVERY_MS = 10_000;
// sun_path is 108 bytes on Linux and 104 on macOS, including the trailing NUL.
const MAX_SOCKET_PATH_BYTES = 100;

type Flavor = "mariadb" | "mysql";

interface ServerBinary {
  path: string;
  flavor: Flavor;
  /** e.g. [10, 11, 19] */
  version: number[];
  /** e.g. "MariaDB 10.11" */
  label: string;
}

interface Paths {
  projectDir: string;
  keyholdDir: string;
  dataDir: string;
  initDir: string;
  socketPath: string;
  pidFile: string;
  logFile: string;
  lockFile: string;
  ownerFile: string;
  /** Data folder as shown to people: ".keyhold/mysql". */
  shownDataDir: string;
  shownLogFile: string;
}

interface Ctx {
  bin: ServerBinary;
  paths: Paths;
  log: (line: string) => void;
}

export async function startPrivateServer(opts: { projectDir: string; log: (line: string) => void }): Promise<PrivateServer> {
  const bin = await findServerBinary();
  const paths = await preparePaths(opts.projectDir);
  const ctx: Ctx = { bin, paths, log: opts.log };

  // Fast path, no lock: a server for this data folder is up and its owner is alive.
  const probe = await probeServer(ctx);
  if (probe.up) {
    const joined = await tryJoin(ctx);
    if (joined) return joined;
  }

  const release = await acquireLock(ctx);
  try {
    return await startLocked(ctx);
  } finally {
    await release();
  }
}

// ---------------------------------------------------------------------------
// Finding the binaries

async function findServerBinary(): Promise<ServerBinary> {
  const dirs = unique([...pathDirs(), ...SEARCHED_DIRS]);
  const failures: string[] = [];
  for (const name of ["mariadbd", "mysqld"]) {
    for (const dir of dirs) {
      const candidate = path.join(dir, name);
      if (!(await isExecutableFile(candidate))) continue;
      try {
        const out = await run(candidate, ["--version"], 15_000);
        return describeBinary(candidate, out);
      } catch (err) {
        failures.push(`${candidate} --version failed: ${firstLine(errorMessage(err))}`);
      }
    }
  }
  throw new NoDatabaseServerError(failures.length > 0 ? failures.join("; ") : undefined);
}

function describeBinary(binPath: string, versionOutput: string): ServerBinary {
  // "/usr/sbin/mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"
  // "/usr/sbin/mysqld  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)"
  const flavor: Flavor = /mariadb/i.test(versionOutput) || path.basename(binPath) === "mariadbd" ? "mariadb" : "mysql";
  const m = /Ver\s+(\d+)\.(\d+)(?:\.(\d+))?/.exec(versionOutput) ?? /(\d+)\.(\d+)\.(\d+)/.exec(versionOutput);
  const version = m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : [];
  const name = flavor === "mariadb" ? "MariaDB" : "MySQL";
  const label = version.length > 0 ? `${name} ${version[0]}.${version[1]}` : name;
  return { path: binPath, flavor, version, label };
}

async function findInstallDb(bin: ServerBinary): Promise<string | undefined> {
  const serverDir = path.dirname(bin.path);
  const prefix = path.dirname(serverDir);
  const dirs = unique([
    path.join(prefix, "bin"),
    path.join(prefix, "scripts"),
    serverDir,
    ...pathDirs(),
    "/usr/bin",
    "/usr/local/bin",
    "/usr/local/mysql/scripts",
    "/usr/local/mysql/bin",
  ]);
  for (const dir of dirs) {
    for (const name of ["mariadb-install-db", "mysql_install_db"]) {
      const candidate = path.join(dir, name);
      if (await isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

function pathDirs(): string[] {
  return (process.env.PATH ?? "").split(path.delimiter).filter((d) => d !== "" && path.isAbsolute(d));
}

async function isExecutableFile(p: string): Promise<boolean> {
  try {
    const st = await fs.stat(p);
    if (!st.isFile()) return false;
    await fs.access(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------
// Paths

async function preparePaths(projectDirIn: string): Promise<Paths> {
  const resolved = path.resolve(projectDirIn);
  const projectDir = await fs.realpath(resolved).catch(() => resolved);
  const keyholdDir = path.join(projectDir, ".keyhold");
  await fs.mkdir(projectDir, { recursive: true });
  try {
    await fs.mkdir(keyholdDir, { mode: 0o700 });
  } catch (err) {
    if (errCode(err) !== "EEXIST") throw err;
  }

  let socketPath = path.join(keyholdDir, "mysql.sock");
  if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH_BYTES) {
    const hash = createHash("sha256").update(projectDir).digest("hex").slice(0, 16);
    const dir = path.join(os.tmpdir(), `keyhold-${hash}`);
    await ensurePrivateDir(dir);
    socketPath = path.join(dir, "mysql.sock");
  }

  const dataDir = path.join(keyholdDir, "mysql");
  return {
    projectDir,
    keyholdDir,
    dataDir,
    initDir: path.join(keyholdDir, "mysql.init"),
    socketPath,
    pidFile: path.join(keyholdDir, "mysql.pid"),
    logFile: path.join(keyholdDir, "mysql.log"),
    lockFile: path.join(keyholdDir, "mysql.lock"),
    ownerFile: path.join(keyholdDir, "mysql.owner"),
    shownDataDir: shown(dataDir),
    shownLogFile: shown(path.join(keyholdDir, "mysql.log")),
  };
}

/** Relative to the working directory when inside it (".keyhold/mysql"), else absolute. */
function shown(p: string): string {
  const rel = path.relative(process.cwd(), p);
  return rel !== "" && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : p;
}

/** A folder in a shared place (tmpdir) that only we can use. */
async function ensurePrivateDir(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { mode: 0o700 });
    return;
  } catch (err) {
    if (errCode(err) !== "EEXIST") throw err;
  }
  const st = await fs.lstat(dir);
  const uid = process.getuid?.();
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || (st.mode & 0o077) !== 0) {
    throw new Error(`${dir} exists but is not a private folder of this user; remove it and start again`);
  }
}

// ---------------------------------------------------------------------------
// Probing, joining, adopting

type Probe = { up: false; detail?: string } | { up: true };

/**
 * Does a server answer on our socket? Throws when one answers but is not usable
 * (serves another data folder, or refuses root without a password), since starting a
 * second server would then be wrong too.
 */
async function probeServer(ctx: Ctx, connectTimeout = 3000): Promise<Probe> {
  const { socketPath, dataDir } = ctx.paths;
  try {
    await fs.stat(socketPath);
  } catch {
    return { up: false, detail: "no socket yet" };
  }
  let conn: Connection;
  try {
    conn = await mysql.createConnection({ socketPath, user: "root", connectTimeout });
  } catch (err) {
    const e = err as { sqlState?: unknown; errno?: unknown; message?: unknown };
    if (typeof e.sqlState !== "string") return { up: false, detail: errorMessage(err) }; // nothing listening
    if (e.errno === 1045 || e.errno === 1698 || e.errno === 1044) {
      throw new Error(
        `the private database server on ${socketPath} refuses user root without a password (${errorMessage(err)}); ` +
          `stop it and remove ${ctx.paths.shownDataDir} to start afresh, or set DATABASE_URL`,
      );
    }
    if (e.errno === 1053) return { up: false, detail: errorMessage(err) }; // shutting down
    return { up: true }; // alive (e.g. too many connections) — it is up
  }
  let reported: unknown;
  try {
    const [rows] = await conn.query<RowDataPacket[]>("SELECT @@datadir AS datadir");
    reported = rows[0]?.datadir;
  } catch (err) {
    return { up: false, detail: errorMessage(err) };
  } finally {
    await conn.end().catch(() => conn.destroy());
  }
  if (typeof reported === "string" && !(await sameDir(reported, dataDir))) {
    throw new Error(`the database server answering on ${socketPath} serves the data folder ${reported}, not ${dataDir}; stop it and start again`);
  }
  return { up: true };
}

async function sameDir(a: string, b: string): Promise<boolean> {
  const norm = async (p: string) => {
    const r = path.resolve(p);
    return fs.realpath(r).catch(() => r);
  };
  return (await norm(a)) === (await norm(b));
}

interface OwnerRecord {
  ownerPid: number;
  serverPid: number;
}

async function readOwner(p: Paths): Promise<OwnerRecord | undefined> {
  try {
    const v = JSON.parse(await fs.readFile(p.ownerFile, "utf8")) as Partial<OwnerRecord>;
    if (Number.isInteger(v.ownerPid) && Number.isInteger(v.serverPid)) return v as OwnerRecord;
  } catch {
    // missing or torn
  }
  return undefined;
}

async function writeOwner(p: Paths, rec: OwnerRecord): Promise<void> {
  const tmp = `${p.ownerFile}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(rec)}\n`, { mode: 0o600 });
  await fs.rename(tmp, p.ownerFile);
}

async function readPidFile(file: string): Promise<number | undefined> {
  try {
    const n = Number.parseInt((await fs.readFile(file, "utf8")).trim(), 10);
    return Number.isInteger(n) && n > 0 ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The pid of the running server and whether a live process is responsible for stopping it. */
async function serverState(p: Paths): Promise<{ serverPid: number | undefined; ownerAlive: boolean }> {
  const owner = await readOwner(p);
  const serverPid = (await readPidFile(p.pidFile)) ?? owner?.serverPid;
  const ownerAlive = owner !== undefined && serverPid !== undefined && owner.serverPid === serverPid && isAlive(owner.ownerPid);
  return { serverPid, ownerAlive };
}

function joinedServer(ctx: Ctx, serverPid: number | undefined): PrivateServer {
  ctx.log(`using private ${ctx.bin.label} already running in ${ctx.paths.shownDataDir}${serverPid ? ` (pid ${serverPid})` : ""}`);
  return { socketPath: ctx.paths.socketPath, owned: false, stop: async () => {} };
}

/** Join without the lock if the running server has a live owner. */
async function tryJoin(ctx: Ctx): Promise<PrivateServer | undefined> {
  const { serverPid, ownerAlive } = await serverState(ctx.paths);
  return ownerAlive ? joinedServer(ctx, serverPid) : undefined;
}

/** With the lock held: the server answers. Join it, or adopt it if its owner is gone. */
async function joinOrAdopt(ctx: Ctx): Promise<PrivateServer> {
  const { serverPid, ownerAlive } = await serverState(ctx.paths);
  if (ownerAlive || serverPid === undefined || !isAlive(serverPid)) {
    if (serverPid === undefined) ctx.log(`warning: private ${ctx.bin.label} is running without a pid file; not stopping it on exit`);
    return joinedServer(ctx, serverPid);
  }
  await writeOwner(ctx.paths, { ownerPid: process.pid, serverPid });
  ctx.log(`adopting private ${ctx.bin.label} in ${ctx.paths.shownDataDir} left running by an earlier process (pid ${serverPid})`);
  return ownedServer(ctx, serverPid, undefined);
}

// ---------------------------------------------------------------------------
// Starting

async function startLocked(ctx: Ctx): Promise<PrivateServer> {
  const p = ctx.paths;
  for (let attempt = 0; ; attempt++) {
    if ((await probeServer(ctx)).up) return await joinOrAdopt(ctx);

    // Not answering. Is a server for this data folder still alive (starting, stopping, hung)?
    const oldPid = await readPidFile(p.pidFile);
    if (oldPid !== undefined && oldPid !== process.pid && isAlive(oldPid) && (await isOurServer(oldPid, p))) {
      if (attempt > 0) {
        throw new Error(
          `private ${ctx.bin.label} (pid ${oldPid}) for ${p.shownDataDir} is running but does not answer on ${p.socketPath}; ` +
            `stop it (kill ${oldPid}) and start again. Last lines of ${p.shownLogFile}:\n${await logTail(p.logFile, 0)}`,
        );
      }
      ctx.log(`waiting for private ${ctx.bin.label} (pid ${oldPid}) in ${p.shownDataDir} to answer or exit ...`);
      const deadline = Date.now() + READY_TIMEOUT_MS;
      while (Date.now() < deadline && isAlive(oldPid)) {
        if ((await probeServer(ctx)).up) break;
        await sleep(POLL_MS * 2);
      }
      continue;
    }
    break;
  }

  // Whatever is left from an earlier run is stale.
  await removeStale(p);
  await ensureInitialised(ctx);
  return await launch(ctx);
}

async function removeStale(p: Paths): Promise<void> {
  for (const f of [p.pidFile, p.socketPath, `${p.socketPath}.lock`]) {
    await fs.rm(f, { force: true });
  }
}

/** Is pid a server process started on our data folder? (guards against pid reuse) */
async function isOurServer(pid: number, p: Paths): Promise<boolean> {
  let args: string[];
  try {
    args = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  } catch {
    try {
      args = (await run("ps", ["-ww", "-p", String(pid), "-o", "command="], 5000)).split(/\s+/);
    } catch {
      return false;
    }
  }
  return args.includes(`--datadir=${p.dataDir}`);
}

const MB = 1024 * 1024;

/**
 * The private server's InnoDB buffer pool: an eighth of this machine's memory
 * in whole 128 MB chunks, at least MariaDB's default 128 MB and at most 1 GB.
 * The verification miss path reads each cold key from the `keys` table, whose
 * rows and indexes take ~680 MB at 1,000,000 keys: with 128 MB nearly every
 * cold lookup read pages back in (bench/README.md, "Cold verification"). The
 * pool's memory is taken as pages are read into it (119 MB RSS at start with
 * 1 GB, measured), not at start.
 */
export function bufferPoolBytes(totalMemory: number = os.totalmem()): number {
  // Whole 128 MB chunks: MySQL rounds the size up to a multiple of its chunk size.
  return Math.min(1024 * MB, Math.max(128 * MB, Math.floor(totalMemory / 8 / (128 * MB)) * 128 * MB));
}

/** The server's command line (exported for its test). */
export function serverArgs(ctx: Pick<Ctx, "bin" | "paths">): string[] {
  const { bin, paths: p } = ctx;
  const args = [
    "--no-defaults", // must be first: never read /etc/mysql/my.cnf & co.
    `--datadir=${p.dataDir}`,
    `--socket=${p.socketPath}`,
    `--pid-file=${p.pidFile}`,
    `--log-error=${p.logFile}`,
    "--skip-networking",
    `--innodb-buffer-pool-size=${bufferPoolBytes()}`,
    "--character-set-server=utf8mb4",
    // Analytics' raw rows go by LOAD DATA LOCAL INFILE (storage/analytics.ts): the
    // database's CPU a row 4.0-4.9 µs against 6.1-6.5 as INSERTs (bench/README.md).
    // MariaDB allows it by default, MySQL 8 does not (local_infile=OFF), and keyhold
    // would take the INSERT path for good. Only keyhold connects, over this socket.
    "--local-infile=ON",
  ];
  if (isRoot()) args.push("--user=root");
  if (bin.flavor === "mysql") {
    args.push(
      "--loose-mysqlx=OFF", // the X plugin would listen on port 33060 and /tmp/mysqlx.sock
      "--skip-log-bin",
      "--loose-performance-schema=OFF",
      "--secure-file-priv=NULL", // the compiled-in default folder may not exist
    );
  }
  return args;
}

async function launch(ctx: Ctx): Promise<PrivateServer> {
  const { bin, paths: p } = ctx;
  const started = Date.now();
  ctx.log(`starting private ${bin.label} in ${p.shownDataDir} ...`);

  const logOffset = await fileSize(p.logFile);
  const logFd = openSync(p.logFile, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(bin.path, serverArgs(ctx), {
      cwd: p.keyholdDir,
      stdio: ["ignore", logFd, logFd],
      detached: true, // own process group: Ctrl-C in the terminal goes to us, the caller decides when to stop it
      env: serverEnv(),
    });
  } finally {
    closeSync(logFd);
  }
  child.unref();

  let exitInfo: string | undefined;
  let spawnError: Error | undefined;
  child.on("error", (err) => {
    spawnError = err;
    exitInfo ??= `could not run ${bin.path}: ${err.message}`;
  });
  child.on("exit", (code, signal) => {
    exitInfo ??= signal ? `killed by ${signal}` : `exit code ${code}`;
  });

  const pid = child.pid;
  if (pid === undefined) {
    await sleep(0); // let the 'error' event arrive
    throw new Error(`could not start ${bin.path}: ${spawnError?.message ?? "no pid"}`);
  }
  await writeOwner(p, { ownerPid: process.pid, serverPid: pid });
  const handle = ownedServer(ctx, pid, child);

  const deadline = started + READY_TIMEOUT_MS;
  let nextProgress = started + PROGRESS_EVERY_MS;
  let lastDetail = "";
  for (;;) {
    if (exitInfo !== undefined) {
      await handle.stop();
      throw new Error(`private ${bin.label} exited during startup (${exitInfo}). Last lines of ${p.shownLogFile}:\n${await logTail(p.logFile, logOffset)}`);
    }
    let probe: Probe;
    try {
      probe = await probeServer(ctx, 2000);
    } catch (err) {
      await handle.stop();
      throw err;
    }
    if (probe.up) break;
    lastDetail = probe.detail ?? lastDetail;
    const now = Date.now();
    if (now >= deadline) {
      await handle.stop();
      throw new Error(
        `private ${bin.label} did not accept connections on ${p.socketPath} within ${READY_TIMEOUT_MS / 1000} s` +
          (lastDetail ? ` (last attempt: ${lastDetail})` : "") +
          `. Last lines of ${p.shownLogFile}:\n${await logTail(p.logFile, logOffset)}`,
      );
    }
    if (now >= nextProgress) {
      ctx.log(`still waiting for private ${bin.label} to accept connections (${Math.round((now - started) / 1000)} s) ...`);
      nextProgress += PROGRESS_EVERY_MS;
    }
    await sleep(POLL_MS);
  }

  child.on("exit", () => {
    if (!handle.stopping) {
      ctx.log(`private ${bin.label} (pid ${pid}) exited (${exitInfo ?? "?"}) without this process stopping it; see ${p.shownLogFile}`);
    }
  });
  ctx.log(`private ${bin.label} ready on ${p.socketPath} (pid ${pid}, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return handle;
}

function serverEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  // Client/server variables that could point the server or its scripts elsewhere.
  for (const k of ["MYSQL_UNIX_PORT", "MYSQL_TCP_PORT", "MYSQL_HOME", "MYSQL_HOST", "MYSQL_PWD", "MYSQLD_BOOTSTRAP"]) delete env[k];
  return env;
}

// ---------------------------------------------------------------------------
// Initialising the data folder

async function ensureInitialised(ctx: Ctx): Promise<void> {
  const { bin, paths: p } = ctx;
  if (await exists(p.dataDir)) return; // the rename below is the commit point
  await fs.rm(p.initDir, { recursive: true, force: true }); // an interrupted earlier attempt

  const started = Date.now();
  ctx.log(`initialising private ${bin.label} data folder ${p.shownDataDir} (first run) ...`);
  const root = isRoot();
  let cmd: string;
  let args: string[];
  if (bin.flavor === "mariadb") {
    const installDb = await findInstallDb(bin);
    if (!installDb) {
      throw new NoDatabaseServerError(`found ${bin.path} but not mariadb-install-db / mysql_install_db to initialise its data folder`);
    }
    cmd = installDb;
    args = ["--no-defaults", `--datadir=${p.initDir}`];
    if (versionAtLeast(bin.version, [10, 4])) args.push("--auth-root-authentication-method=normal");
    if (versionAtLeast(bin.version, [10, 5])) args.push("--skip-test-db");
    if (root) args.push("--user=root");
    const prefix = path.dirname(path.dirname(bin.path));
    if (prefix !== "/usr") args.push(`--basedir=${prefix}`); // relocatable / tarball installs
  } else {
    cmd = bin.path;
    args = ["--no-defaults", "--initialize-insecure", `--datadir=${p.initDir}`, "--skip-log-bin", "--secure-file-priv=NULL"];
    if (root) args.push("--user=root");
  }

  const logOffset = await fileSize(p.logFile);
  await fs.appendFile(p.logFile, `\n[keyhold] ${new Date().toISOString()} initialising: ${[cmd, ...args].join(" ")}\n`, { mode: 0o600 });
  const result = await runToLog(cmd, args, p.logFile, p.keyholdDir, INIT_TIMEOUT_MS);
  if (result !== "ok" || !(await exists(path.join(p.initDir, "mysql")))) {
    await fs.rm(p.initDir, { recursive: true, force: true });
    throw new Error(
      `initialising the private ${bin.label} data folder failed (${result === "ok" ? "no mysql schema created" : result}). ` +
        `Last lines of ${p.shownLogFile}:\n${await logTail(p.logFile, logOffset)}`,
    );
  }
  await fs.rename(p.initDir, p.dataDir);
  ctx.log(`initialised ${p.shownDataDir} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
}

/** Runs a command with stdout/stderr appended to logFile. Resolves "ok" or a description of the failure. */
async function runToLog(cmd: string, args: string[], logFile: string, cwd: string, timeoutMs: number): Promise<string> {
  const fd = openSync(logFile, "a", 0o600);
  let child: ChildProcess;
  try {
    child = spawn(cmd, args, { cwd, stdio: ["ignore", fd, fd], env: serverEnv() });
  } finally {
    closeSync(fd);
  }
  return await new Promise<string>((resolve) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve(`timed out after ${timeoutMs / 1000} s`);
    }, timeoutMs);
    child.on("error", (err) => {
      clearTimeout(timer);
      resolve(`could not run ${cmd}: ${err.message}`);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(code === 0 ? "ok" : signal ? `${path.basename(cmd)} killed by ${signal}` : `${path.basename(cmd)} exit code ${code}`);
    });
  });
}

// ---------------------------------------------------------------------------
// Owning and stopping

type OwnedHandle = PrivateServer & { readonly stopping: boolean };

function ownedServer(ctx: Ctx, pid: number, child: ChildProcess | undefined): OwnedHandle {
  let stopping = false;
  let stopped: Promise<void> | undefined;

  const gone = (): boolean => (child ? child.exitCode !== null || child.signalCode !== null : !isAlive(pid));

  // Fallback if stop() is never called: kill it synchronously as the process exits.
  // (On SIGINT/SIGTERM the caller is expected to call stop(); 'exit' still covers process.exit().)
  const onExit = (): void => {
    if (!gone()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };
  process.on("exit", onExit);
  child?.once("exit", () => {
    if (stopping) return;
    process.removeListener("exit", onExit);
  });

  const waitGone = async (ms: number): Promise<boolean> => {
    const deadline = Date.now() + ms;
    while (!gone()) {
      if (Date.now() >= deadline) return false;
      await sleep(child ? 50 : 100);
    }
    return true;
  };

  const doStop = async (): Promise<void> => {
    stopping = true;
    try {
      if (gone()) return;
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        return;
      }
      if (await waitGone(STOP_TIMEOUT_MS)) return;
      ctx.log(`private ${ctx.bin.label} (pid ${pid}) did not stop within ${STOP_TIMEOUT_MS / 1000} s; killing it`);
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        return;
      }
      await waitGone(KILL_WAIT_MS);
    } finally {
      process.removeListener("exit", onExit);
    }
  };

  return {
    socketPath: ctx.paths.socketPath,
    owned: true,
    get stopping() {
      return stopping;
    },
    stop(): Promise<void> {
      stopped ??= doStop();
      return stopped;
    },
  };
}

// ---------------------------------------------------------------------------
// The start-up lock

async function acquireLock(ctx: Ctx): Promise<() => Promise<void>> {
  const file = ctx.paths.lockFile;
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  let announced = false;
  for (;;) {
    try {
      const fh = await fs.open(file, "wx", 0o600);
      try {
        await fh.writeFile(`${process.pid}\n`);
      } finally {
        await fh.close();
      }
      const mine = `${process.pid}\n`;
      return async () => {
        try {
          if ((await fs.readFile(file, "utf8")) === mine) await fs.rm(file, { force: true });
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if (errCode(err) !== "EEXIST") throw err;
    }

    const holder = await inspectLock(file);
    if (holder === "gone") continue;
    if (holder.stale) {
      await breakLock(file, holder.raw);
      continue;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out waiting for ${file} (held by pid ${holder.pid ?? "?"}); if no keyhold process is starting the database, delete it`);
    }
    if (!announced && holder.pid !== process.pid) {
      ctx.log(`waiting for another process (pid ${holder.pid ?? "?"}) that is starting the private ${ctx.bin.label} ...`);
      announced = true;
    }
    await sleep(POLL_MS);
  }
}

async function inspectLock(file: string): Promise<"gone" | { raw: string; pid: number | undefined; stale: boolean }> {
  let raw: string;
  let mtimeMs: number;
  try {
    raw = await fs.readFile(file, "utf8");
    mtimeMs = (await fs.stat(file)).mtimeMs;
  } catch (err) {
    if (errCode(err) === "ENOENT") return "gone";
    throw err;
  }
  const age = Date.now() - mtimeMs;
  const pid = Number.parseInt(raw.trim(), 10);
  if (!Number.isInteger(pid) || pid <= 0) {
    // Created but not written yet — or its writer died in between.
    return { raw, pid: undefined, stale: age > 5_000 };
  }
  return { raw, pid, stale: !isAlive(pid) || age > LOCK_MAX_AGE_MS };
}

/** Removes a stale lock, making sure two breakers never remove a lock a third process just took. */
async function breakLock(file: string, staleRaw: string): Promise<void> {
  const breaker = `${file}.break`;
  try {
    await (await fs.open(breaker, "wx", 0o600)).close();
  } catch (err) {
    if (errCode(err) !== "EEXIST") throw err;
    const st = await fs.stat(breaker).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > 10_000) await fs.rm(breaker, { force: true });
    else await sleep(POLL_MS);
    return;
  }
  try {
    const now = await fs.readFile(file, "utf8").catch(() => undefined);
    if (now === staleRaw) await fs.rm(file, { force: true });
  } finally {
    await fs.rm(breaker, { force: true });
  }
}

// ---------------------------------------------------------------------------
// Small helpers

function isRoot(): boolean {
  return process.getuid?.() === 0;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    return errCode(err) === "EPERM";
  }
  // A zombie (exited, not yet reaped by its parent) is not alive.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return true; // no /proc: trust kill(0)
  }
}

function versionAtLeast(have: number[], want: number[]): boolean {
  if (have.length === 0) return true; // unknown: assume a current version
  for (let i = 0; i < want.length; i++) {
    const h = have[i] ?? 0;
    const w = want[i] ?? 0;
    if (h !== w) return h > w;
  }
  return true;
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.stat(p);
    return true;
  } catch {
    return false;
  }
}

async function fileSize(p: string): Promise<number> {
  try {
    return (await fs.stat(p)).size;
  } catch {
    return 0;
  }
}

async function logTail(file: string, fromOffset: number, lines = 25): Promise<string> {
  try {
    const buf = await fs.readFile(file);
    const text = buf.subarray(Math.min(fromOffset, buf.length)).toString("utf8");
    const all = text.split("\n").filter((l) => l.trim() !== "");
    return (
      all
        .slice(-lines)
        .map((l) => `  ${l}`)
        .join("\n") || "  (log is empty)"
    );
  } catch {
    return "  (no log file)";
  }
}

function run(cmd: string, args: string[], timeout: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout, env: serverEnv(), encoding: "utf8" }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${err.message}${stderr ? `: ${stderr.trim()}` : ""}`));
      else resolve(`${stdout}${stderr}`);
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}

function errCode(err: unknown): string | undefined {
  return typeof err === "object" && err !== null && "code" in err ? String((err as { code: unknown }).code) : undefined;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function firstLine(s: string): string {
  return s.split("\n")[0] ?? s;
}

// ---------------------------------------------------------------------------
// Direct run: node dist/src/embedded-db/private-server.js [projectDir] [--hold]

async function main(argv: string[]): Promise<void> {
  const hold = argv.includes("--hold");
  const projectDir = argv.find((a) => !a.startsWith("--")) ?? process.cwd();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const server = await startPrivateServer({ projectDir, log });
  const conn = await mysql.createConnection({ socketPath: server.socketPath, user: "root" });
  const [rows] = await conn.query<RowDataPacket[]>("SELECT VERSION() AS version");
  await conn.end();
  process.stdout.write(`${JSON.stringify({ socketPath: server.socketPath, owned: server.owned, version: rows[0]?.version })}\n`);
  if (hold) {
    log("holding the server; press Ctrl-C to stop");
    await new Promise<void>((resolve) => {
      const keepAlive = setInterval(() => {}, 1 << 30);
      const done = () => {
        clearInterval(keepAlive);
        resolve();
      };
      process.once("SIGINT", done);
      process.once("SIGTERM", done);
    });
  }
  await server.stop();
}

const invokedDirectly = (() => {
  const script = process.argv[1];
  if (!script) return false;
  try {
    return import.meta.url === pathToFileURL(realpathSync(script)).href;
  } catch {
    return false;
  }
})();

if (invokedDirectly) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
