// `keyhold keys import FILE`: a client of any keyhold deployment's JSON API that
// moves keys issued elsewhere in through keys.migrateKeys, in batches.
//
// Exactly once, across kills: after each batch the server acknowledged, the
// failures it found are appended to the failures file and then the state file
// (fingerprint of the file, api, migration, last line done, counts, length of the
// failures file) is replaced atomically. A rerun starts after the last
// acknowledged batch and cuts the failures file back to the recorded length.
// A batch that was sent but not acknowledged is sent again with the same body
// and the same Idempotency-Key, derived from what it holds, so the server
// replays its first answer instead of importing it twice. A lock file next to
// the state file keeps a second run on the same state out.
import { createHash } from "node:crypto";
import { createReadStream, unlinkSync } from "node:fs";
import { link, open, readFile, rename, stat, truncate, unlink, writeFile } from "node:fs/promises";
import cliProgress from "cli-progress";
import { type Failure, type FailureReason, type Format, type Item, type MigrateKey, readItems } from "./import-records.js";

export interface ImportOptions {
  file: string;
  format: Format;
  apiId: string;
  migrationId: string;
  /** Base URL of the deployment, without a trailing slash. */
  url: string;
  rootKey: string;
  batchSize: number;
  /** Batches in flight at once; they are still acknowledged in file order. */
  concurrency: number;
  statePath: string;
  /** Derived from statePath (failuresPathOf): two imports of one file with their own states keep their own failures. */
  failuresPath: string;
  restart: boolean;
  /** How long a batch's Idempotency-Key may answer "in use" before the batch goes under a new one (IN_USE_WAIT_SECONDS). */
  inUseWaitMs: number;
}

export interface ImportSummary {
  imported: number;
  failed: number;
  /** Records an earlier, interrupted run had already handled (included in imported and failed). */
  skipped?: number;
  durationMs: number;
  failures: Partial<Record<FailureReason, number>>;
}

/** A reason to stop: wrong root key, api or migration, an unreadable file, a server that keeps failing. */
export class ImportError extends Error {}

export const MAX_BATCH = 1000;
/** Well under the server's default 10 MB body limit (in bytes), whatever the records' meta. */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;
const ATTEMPTS = 6;
const REQUEST_TIMEOUT_MS = 120_000;
/**
 * How long, by default, a batch's Idempotency-Key may keep answering "in use"
 * before the batch is sent under a new one (`--in-use-wait`): a request
 * interrupted by a server crash or a database error leaves its key claimed
 * until it expires (24 h by default), while one still running answers within
 * seconds.
 */
export const IN_USE_WAIT_SECONDS = 30;

/** FILE.import-state.json -> FILE.failures.jsonl; any other state path P -> P.failures.jsonl. */
export const failuresPathOf = (statePath: string): string => `${statePath.replace(/\.import-state\.json$/, "")}.failures.jsonl`;

interface Fingerprint {
  size: number;
  sha256: string;
}

interface State {
  version: 1;
  file: Fingerprint;
  apiId: string;
  migrationId: string;
  /** Every line up to this one is done: imported, or written to the failures file. */
  linesDone: number;
  imported: number;
  failed: number;
  failures: Partial<Record<FailureReason, number>>;
  /** The failures file's length when this state was written. */
  failuresBytes: number;
  complete: boolean;
  /**
   * By the last line of a batch not yet done: how many times its Idempotency-Key
   * was replaced because an interrupted request left it claimed. Saved before
   * the new key is used, so a rerun sends under that key too.
   */
  generations?: Record<string, number>;
}

interface Batch {
  keys: Array<{ line: number; key: MigrateKey; start?: string }>;
  failures: Failure[];
  /** The last line this batch accounts for. */
  lastLine: number;
  bytes: number;
}

interface Outcome {
  batch: Batch;
  imported: number;
  failures: Failure[];
}

/** What the requests of one run share. */
interface Run {
  opts: ImportOptions;
  fingerprint: Fingerprint;
  state: State;
  save: () => Promise<void>;
  /** Refusal messages already shown on stderr: each is shown once. */
  shown: Set<string>;
}

const log = (line: string) => process.stderr.write(`keyhold: ${line}\n`);

export async function importKeys(opts: ImportOptions): Promise<ImportSummary> {
  const began = Date.now();
  const unlock = await lock(opts.statePath);
  try {
    return await importLocked(opts, began, unlock);
  } finally {
    unlock();
  }
}

async function importLocked(opts: ImportOptions, began: number, unlock: () => void): Promise<ImportSummary> {
  const scan = await scanFile(opts.file);
  const state = await startState(opts, scan.fingerprint);
  const skipped = state.imported + state.failed;
  const records = opts.format === "csv" ? scan.records - 1 : scan.records; // a CSV's header is no record
  const progress = new Progress(Math.max(records, skipped), skipped);
  const interrupted = () => {
    progress.stop();
    unlock();
    log(`interrupted after line ${state.linesDone}; run the same command again to resume`);
    process.exit(130);
  };
  process.once("SIGINT", interrupted);
  // One write at a time: a batch in flight saves its retry generation while earlier ones commit.
  let saving = Promise.resolve();
  const save = () => {
    const next = saving.then(() => writeState(opts.statePath, state));
    saving = next.catch(() => undefined);
    return next;
  };
  try {
    if (!state.complete) {
      const commit = async (o: Outcome) => {
        await record(opts, state, o, save);
        progress.update(state.imported + state.failed);
      };
      const run: Run = { opts, fingerprint: scan.fingerprint, state, save, shown: new Set() };
      await sendAll(run, batches(readItems(opts.file, opts.format, state.linesDone), opts.batchSize), commit);
      state.complete = true;
      await save();
    }
  } finally {
    progress.stop();
    process.removeListener("SIGINT", interrupted);
  }
  if (state.failed > 0)
    log(`${state.failed} record${state.failed > 1 ? "s were" : " was"} not imported; each is in ${opts.failuresPath} by line, with the reason`);
  return {
    imported: state.imported,
    failed: state.failed,
    ...(skipped > 0 ? { skipped } : {}),
    durationMs: Date.now() - began,
    failures: state.failures,
  };
}

/**
 * Takes STATE.lock for this process: two runs on one state file would write the
 * same files and count batches twice. The lock holds the pid and is created
 * whole (linked from a file already written), so it is never seen empty; one
 * whose process is gone (a kill -9, a crash) is taken over. Returns its release.
 */
async function lock(statePath: string): Promise<() => void> {
  const path = `${statePath}.lock`;
  const mine = `${path}.${process.pid}`;
  await writeFile(mine, `${process.pid}\n`).catch((err: NodeJS.ErrnoException) => {
    throw new ImportError(`cannot write the lock file ${path}: ${err.code ?? err.message}`);
  });
  try {
    for (;;) {
      try {
        await link(mine, path);
        let released = false;
        return () => {
          if (released) return;
          released = true;
          try {
            unlinkSync(path);
          } catch {
            // already gone: nothing to release
          }
        };
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST")
          throw new ImportError(`cannot create the lock file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const text = await readFile(path, "utf8").catch(() => undefined);
      if (text === undefined) continue; // released meanwhile
      const pid = /^[1-9]\d*$/.test(text.trim()) ? Number(text.trim()) : undefined;
      // Our own pid is a lock left by an earlier run that had it (a container's CLI is often pid 1 every time).
      if (pid === undefined || (pid !== process.pid && running(pid))) {
        throw new ImportError(
          `another import${pid === undefined ? "" : ` (pid ${pid})`} is using ${statePath} (its lock is ${path}): wait for it to end, or pass --state PATH for a separate import; remove ${path} only if no import is running`,
        );
      }
      log(`taking over ${path}: the import that held it (pid ${pid}) is no longer running`);
      await unlink(path).catch(() => undefined);
    }
  } finally {
    await unlink(mine).catch(() => undefined);
  }
}

/** Whether a process with this pid exists (EPERM: it does, as another user). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Size, SHA-256 and number of non-blank lines, in one pass. */
async function scanFile(file: string): Promise<{ fingerprint: Fingerprint; records: number }> {
  const hash = createHash("sha256");
  let size = 0;
  let records = 0;
  let content = false;
  try {
    for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
      hash.update(chunk);
      size += chunk.length;
      for (const byte of chunk) {
        if (byte === 10) {
          if (content) records++;
          content = false;
        } else if (byte !== 32 && byte !== 9 && byte !== 13) content = true;
      }
    }
  } catch (err) {
    throw new ImportError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  if (content) records++;
  return { fingerprint: { size, sha256: hash.digest("hex") }, records };
}

async function startState(opts: ImportOptions, fingerprint: Fingerprint): Promise<State> {
  const fresh: State = {
    version: 1,
    file: fingerprint,
    apiId: opts.apiId,
    migrationId: opts.migrationId,
    linesDone: 0,
    imported: 0,
    failed: 0,
    failures: {},
    failuresBytes: 0,
    complete: false,
  };
  const saved = opts.restart ? undefined : await readState(opts.statePath);
  // A run that stopped before its first batch (a wrong root key or api id) left
  // nothing to protect, unless it replaced a batch's claimed Idempotency-Key.
  if (saved === undefined || (saved.linesDone === 0 && saved.generations === undefined)) {
    await writeFile(opts.failuresPath, "");
    await writeState(opts.statePath, fresh);
    return fresh;
  }
  const differs = [
    saved.file.size !== fingerprint.size || saved.file.sha256 !== fingerprint.sha256 ? "the file's content" : undefined,
    saved.apiId !== opts.apiId ? `the api (${saved.apiId})` : undefined,
    saved.migrationId !== opts.migrationId ? `the migration (${saved.migrationId})` : undefined,
  ].filter((d) => d !== undefined);
  if (differs.length > 0) {
    throw new ImportError(
      `${opts.statePath} records another import (${differs.join(", ")} differ${differs.length > 1 ? "" : "s"}): ` +
        "pass --restart to start this file from its first line, or --state PATH to keep that import's state",
    );
  }
  if (saved.complete) {
    log(`${opts.file} was imported completely before (state in ${opts.statePath}); nothing to send (--restart runs it again)`);
    return saved;
  }
  // Failures of a batch written just before a kill, whose state was not, are written again.
  const length = await stat(opts.failuresPath).then(
    (s) => s.size,
    () => undefined,
  );
  if (length === undefined) await writeFile(opts.failuresPath, "");
  else if (length > saved.failuresBytes) await truncate(opts.failuresPath, saved.failuresBytes);
  if (length !== undefined && length < saved.failuresBytes) log(`${opts.failuresPath} is shorter than when it was last written; it misses earlier failures`);
  saved.failuresBytes = Math.min(saved.failuresBytes, length ?? 0);
  log(`resuming ${opts.file} after line ${saved.linesDone} (${saved.imported} imported and ${saved.failed} failed so far)`);
  return saved;
}

async function readState(path: string): Promise<State | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new ImportError(`cannot read the state file ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    const s = JSON.parse(text) as State;
    if (s.version === 1 && typeof s.linesDone === "number" && typeof s.file?.sha256 === "string") return s;
  } catch {
    // reported below
  }
  throw new ImportError(`${path} is not a state file of keyhold keys import; remove it or pass --restart`);
}

/** Written to a temporary file, flushed, then renamed over the old one: a kill leaves the old or the new state, never half of one. */
async function writeState(path: string, state: State): Promise<void> {
  const tmp = `${path}.tmp`;
  const handle = await open(tmp, "w");
  try {
    await handle.writeFile(`${JSON.stringify(state)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, path);
}

/**
 * Records the outcome of the next batch in file order: failures first, flushed
 * to disk, then the state that counts them (a state saying a batch is done
 * after a power loss must not point past failures that were never written).
 */
async function record(opts: ImportOptions, state: State, o: Outcome, save: () => Promise<void>): Promise<void> {
  if (o.failures.length > 0) {
    const text = o.failures
      .sort((a, b) => a.line - b.line)
      .map((f) => `${JSON.stringify(f)}\n`)
      .join("");
    const handle = await open(opts.failuresPath, "a");
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    state.failuresBytes += Buffer.byteLength(text);
    for (const f of o.failures) state.failures[f.reason] = (state.failures[f.reason] ?? 0) + 1;
  }
  state.imported += o.imported;
  state.failed += o.failures.length;
  state.linesDone = o.batch.lastLine;
  if (state.generations !== undefined) {
    for (const line of Object.keys(state.generations)) if (Number(line) <= state.linesDone) delete state.generations[line];
    if (Object.keys(state.generations).length === 0) delete state.generations;
  }
  await save();
}

/** Groups the records into batches of up to `size` keys (and MAX_BATCH_BYTES); invalid records ride along as failures. */
export async function* batches(items: AsyncGenerator<Item>, size: number): AsyncGenerator<Batch> {
  let batch: Batch = { keys: [], failures: [], lastLine: 0, bytes: 0 };
  const seen = new Map<string, number>();
  for await (const item of items) {
    if (!item.ok) {
      batch.failures.push(item.failure);
      batch.lastLine = item.failure.line;
      continue;
    }
    const bytes = Buffer.byteLength(JSON.stringify(item.key)) + 1; // the server's body limit is in bytes, not UTF-16 units
    if (batch.keys.length > 0 && batch.bytes + bytes > MAX_BATCH_BYTES) {
      yield batch;
      batch = { keys: [], failures: [], lastLine: batch.lastLine, bytes: 0 };
      seen.clear();
    }
    const first = seen.get(item.key.hash);
    if (first !== undefined) {
      batch.failures.push({ line: item.line, reason: "duplicate", detail: `the same key as line ${first}`, ...named(item) });
    } else {
      seen.set(item.key.hash, item.line);
      batch.keys.push(item);
      batch.bytes += bytes;
    }
    batch.lastLine = item.line;
    if (batch.keys.length >= size) {
      yield batch;
      batch = { keys: [], failures: [], lastLine: batch.lastLine, bytes: 0 };
      seen.clear();
    }
  }
  if (batch.keys.length > 0 || batch.failures.length > 0) yield batch;
}

/**
 * Sends up to `concurrency` batches at once and commits their outcomes strictly
 * in file order, so the state never counts a batch whose predecessors are not done.
 */
async function sendAll(run: Run, all: AsyncGenerator<Batch>, commit: (o: Outcome) => Promise<void>): Promise<void> {
  const inFlight: Array<Promise<Outcome>> = [];
  try {
    for await (const batch of all) {
      const sent = sendBatch(run, batch);
      sent.catch(() => undefined); // awaited in order below; an early failure must not go unhandled meanwhile
      inFlight.push(sent);
      if (inFlight.length >= run.opts.concurrency) await commit(await (inFlight.shift() as Promise<Outcome>));
    }
    while (inFlight.length > 0) await commit(await (inFlight.shift() as Promise<Outcome>));
  } finally {
    // On a fatal error, let the other requests end before the process reports and exits.
    await Promise.allSettled(inFlight);
  }
}

/**
 * Sends one batch; records the server names as refused are taken out and the
 * rest sent again. A key left claimed by an interrupted request is replaced by
 * the next generation's; that request may have imported some of the batch, so
 * its hashes in use are not necessarily another key's.
 */
async function sendBatch(run: Run, batch: Batch): Promise<Outcome> {
  const { opts, state } = run;
  const failures = [...batch.failures];
  let keys = batch.keys;
  let generation = state.generations?.[batch.lastLine] ?? 0;
  while (keys.length > 0) {
    const answer = await post(opts, idempotencyKey(run, keys, generation), { migrationId: opts.migrationId, apiId: opts.apiId, keys: keys.map((k) => k.key) });
    if (answer.kind === "stuck") {
      generation++;
      state.generations = { ...state.generations, [batch.lastLine]: generation };
      await run.save();
      log(
        `the batch up to line ${batch.lastLine} was left "in use" by an interrupted request for over ${opts.inUseWaitMs / 1000} s; ` +
          "sending it under a new Idempotency-Key (hashes it finds in use are reported as hash_in_use_maybe_by_interrupted_request)",
      );
      continue;
    }
    if (answer.kind === "refused") {
      const refused = new Map(answer.refused);
      if (!keys.some((_, i) => refused.has(i)))
        throw new ImportError(`keys.migrateKeys was refused (400) for records the batch up to line ${batch.lastLine} does not have`);
      keys.forEach((k, i) => {
        const detail = refused.get(i);
        if (detail === undefined) return;
        failures.push({ line: k.line, reason: "refused", detail, ...named(k) });
        showOnce(run, detail, k.line);
      });
      keys = keys.filter((_, i) => !refused.has(i));
      continue;
    }
    const migrated = new Set(answer.migrated);
    const failed = new Set(answer.failed);
    const inUse: Failure["reason"] = generation > 0 ? "hash_in_use_maybe_by_interrupted_request" : "hash_in_use";
    const inUseDetail =
      generation > 0
        ? "a key with this hash already exists; an interrupted earlier request for this batch may have imported it (verify the key to check)"
        : "a key with this hash already exists";
    let imported = 0;
    for (const k of keys) {
      if (migrated.has(k.key.hash)) {
        imported++;
        continue;
      }
      failures.push(
        failed.has(k.key.hash)
          ? { line: k.line, reason: inUse, detail: inUseDetail, ...named(k) }
          : { line: k.line, reason: "not_answered", detail: "the server's answer does not mention this key", ...named(k) },
      );
    }
    return { batch, imported, failures };
  }
  return { batch, imported: 0, failures };
}

/** Each distinct refusal once on stderr (a file of hashes for the wrong algorithm gives the same one for every record). */
function showOnce(run: Run, detail: string, line: number): void {
  if (run.shown.has(detail) || run.shown.size >= 5) return;
  run.shown.add(detail);
  log(`the server refused line ${line}: ${detail} (every refused record is in ${run.opts.failuresPath})`);
}

const named = (k: { key: MigrateKey; start?: string }): { hash: string } | { start: string } =>
  k.start === undefined ? { hash: k.key.hash } : { start: k.start };

/**
 * The same records of the same file into the same api and migration always get
 * the same key, so a batch sent again after a lost answer or a kill is replayed
 * by the server; a different batch size, or records taken out after a refusal,
 * make a different request and so get a different key. A generation above 0
 * (the key before it was left claimed) gives another key, as deterministically.
 */
function idempotencyKey(run: Run, keys: Batch["keys"], generation: number): string {
  const { opts, fingerprint: fp } = run;
  const h = createHash("sha256").update(`${fp.sha256}\n${fp.size}\n${opts.apiId}\n${opts.migrationId}\n${keys.map((k) => k.line).join(",")}`);
  if (generation > 0) h.update(`\n${generation}`);
  return `keyhold-import-${h.digest("hex").slice(0, 48)}`;
}

type Answer = { kind: "ok"; migrated: string[]; failed: string[] } | { kind: "refused"; refused: Array<[number, string]> } | { kind: "stuck" };

interface ErrorBody {
  error?: { title?: string; detail?: string; status?: number; type?: string; errors?: Array<{ location?: string; message?: string; fix?: string }> };
}

/**
 * POSTs keys.migrateKeys, retrying what may succeed later; stops on answers that
 * will not change. "stuck": the key answered "in use" for opts.inUseWaitMs.
 */
async function post(opts: ImportOptions, idemKey: string, body: unknown): Promise<Answer> {
  const payload = JSON.stringify(body);
  let errors = 0; // unreachable, 429 and 5xx: given up after ATTEMPTS
  let inUseSince: number | undefined;
  for (let attempt = 1; ; attempt++) {
    let status: number;
    let json: unknown;
    let retryAfter: string | null = null;
    try {
      const res = await fetch(`${opts.url}/v2/keys.migrateKeys`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${opts.rootKey}`, "idempotency-key": idemKey },
        body: payload,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      status = res.status;
      retryAfter = res.headers.get("retry-after");
      json = await res.json().catch(() => undefined);
    } catch (err) {
      if (++errors >= ATTEMPTS) throw new ImportError(`cannot reach ${opts.url}: ${describeNetworkError(err)} (gave up after ${ATTEMPTS} attempts)`);
      await backoff(attempt, null);
      continue;
    }
    if (status === 200) {
      const data = (json as { data?: { migrated?: Array<{ hash?: string }>; failed?: string[] } } | undefined)?.data;
      if (!Array.isArray(data?.migrated) || !Array.isArray(data?.failed))
        throw new ImportError(`${opts.url} answered keys.migrateKeys without data.migrated and data.failed; is it a keyhold deployment?`);
      return { kind: "ok", migrated: data.migrated.map((m) => String(m.hash)), failed: data.failed.map(String) };
    }
    const error = (json as ErrorBody | undefined)?.error;
    const code = error?.type?.split("/").slice(-3).join(":");
    if (status === 409 && code?.endsWith("idempotency_key_in_use") === true) {
      // The same batch is still running (wait for it), or was interrupted and left its key claimed.
      inUseSince ??= Date.now();
      if (Date.now() - inUseSince >= opts.inUseWaitMs) return { kind: "stuck" };
      await backoff(attempt, retryAfter);
      continue;
    }
    if (status === 429 || status >= 500) {
      if (++errors >= ATTEMPTS)
        throw new ImportError(`${opts.url} keeps answering ${status} ${error?.detail ?? ""} (gave up after ${ATTEMPTS} attempts; rerun to resume)`.trim());
      await backoff(attempt, retryAfter);
      continue;
    }
    if (status === 400) {
      const refused = refusedRecords(error?.errors ?? []);
      if (refused.length > 0) return { kind: "refused", refused };
    }
    throw new ImportError(explain(opts, status, error));
  }
}

/**
 * The records a 400 names, by index, with the server's messages and fixes
 * (without the `keys[i].` of the request: the failure has the line). The server lists up to
 * 100 problems and then says how many more there are; that note names no record.
 */
function refusedRecords(errors: NonNullable<NonNullable<ErrorBody["error"]>["errors"]>): Array<[number, string]> {
  const byIndex = new Map<number, string[]>();
  for (const e of errors) {
    const m = /^body\.keys\[(\d+)\]/.exec(e.location ?? "");
    if (m === null || /^\d+ more problems\b/.test(e.message ?? "")) continue;
    const messages = byIndex.get(Number(m[1])) ?? [];
    messages.push(
      [e.message ?? "refused by the server", e.fix]
        .filter((t) => t !== undefined)
        .join(" ")
        .replace(/\bkeys\[\d+\]\./g, ""),
    );
    byIndex.set(Number(m[1]), messages);
  }
  return [...byIndex].map(([i, messages]) => [i, messages.join(" ")]);
}

function explain(opts: ImportOptions, status: number, error: ErrorBody["error"]): string {
  const said = error?.detail ? ` (${status}: ${error.detail})` : ` (${status})`;
  if (status === 401) return `the root key in KEYHOLD_ROOT_KEY was refused by ${opts.url}${said}`;
  if (status === 403)
    return `the root key in KEYHOLD_ROOT_KEY may not import keys into ${opts.apiId}: it needs apis.*.create_key or apis.${opts.apiId}.create_key${said}`;
  if (status === 404 && error?.type?.endsWith("migration_not_found")) {
    return `migration ${opts.migrationId} does not exist in the root key's workspace; create one with \`keyhold migration create\`${said}`;
  }
  if (status === 404 && error?.type?.endsWith("api_not_found")) return `api ${opts.apiId} does not exist in the root key's workspace${said}`;
  if (status === 404) return `${opts.url} has no keys.migrateKeys; is it a keyhold deployment of this version?${said}`;
  if (status === 413) return `a batch is larger than the server accepts; pass a smaller --batch-size${said}`;
  return `keys.migrateKeys was refused${said}`;
}

const describeNetworkError = (err: unknown): string => {
  const e = err as Error & { cause?: { code?: string } };
  return e.name === "TimeoutError" ? `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` : (e.cause?.code ?? e.message);
};

/** 0.5 s, 1 s, 2 s, … up to 8 s, with jitter; a Retry-After in seconds wins. */
function backoff(attempt: number, retryAfter: string | null): Promise<void> {
  const asked = Number(retryAfter);
  const ms = Number.isFinite(asked) && asked > 0 ? Math.min(asked, 30) * 1000 : Math.min(8000, 500 * 2 ** (attempt - 1)) * (0.75 + Math.random() / 2);
  return new Promise((r) => setTimeout(r, ms));
}

/** A bar on a terminal; elsewhere (CI, a pipe) a line every 2 seconds. */
class Progress {
  private readonly bar: cliProgress.SingleBar | undefined;
  private readonly timer: NodeJS.Timeout | undefined;
  private readonly began = Date.now();
  private done: number;
  private stopped = false;

  constructor(
    private total: number,
    private readonly before: number,
  ) {
    this.done = before;
    if (process.stderr.isTTY) {
      this.bar = new cliProgress.SingleBar(
        { stream: process.stderr, format: "importing [{bar}] {percentage}% | {value}/{total} keys | {rate} keys/s | ETA {eta_formatted}", hideCursor: true },
        cliProgress.Presets.shades_classic,
      );
      this.bar.start(total, before, { rate: 0 });
    } else {
      this.timer = setInterval(() => log(`import: ${this.done}/${this.total} keys, ${this.rate()} keys/s`), 2000);
      this.timer.unref();
    }
  }

  private rate(): number {
    const s = (Date.now() - this.began) / 1000;
    return s > 0 ? Math.round((this.done - this.before) / s) : 0;
  }

  update(done: number): void {
    this.done = done;
    // The first pass counts lines; a CSV field spanning lines makes that an overestimate, never an under one.
    if (done > this.total) this.total = done;
    this.bar?.setTotal(this.total);
    this.bar?.update(done, { rate: this.rate() });
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.bar !== undefined) {
      this.bar.update(this.done, { rate: this.rate() });
      this.bar.stop();
    }
  }
}
