// Reading the file of `keyhold keys import`: JSONL or CSV records, streamed, each
// checked here against the rules keys.migrateKeys enforces (the same
// compiled proto rules and domain checks the server runs) so one bad line becomes one reported failure
// instead of a refused batch. A plaintext `key` is hashed here with the standard
// hash and never kept: only its hash is sent, and failures name it by line and a
// short safe prefix.
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { create, type JsonObject } from "@bufbuild/protobuf";
import { parse } from "csv-parse";
import { MigrateKeyDataSchema, VerifyKeyRequestSchema } from "../../gen/keyhold/v2/keys_service_pb.js";
import { hashKey } from "../domain/keys/generate.js";
import { type CreditsInput, type RatelimitInput, validateCredits, validateMeta, validateRatelimits } from "../domain/keys/input.js";
import { Validator } from "../domain/validate.js";
import { fieldProblems, fieldRule } from "../services/field-rules.js";

export type Format = "jsonl" | "csv";

/** One element of keys.migrateKeys' `keys`. */
export interface MigrateKey {
  hash: string;
  name?: string;
  externalId?: string;
  meta?: Record<string, unknown>;
  roles?: string[];
  permissions?: string[];
  expires?: number;
  enabled?: boolean;
  credits?: { remaining?: number | null; refill?: { interval: string; amount: number; refillDay?: number } };
  ratelimits?: RatelimitInput[];
}

export type FailureReason =
  | "invalid_json"
  | "invalid_csv"
  | "invalid_record"
  | "duplicate"
  | "hash_in_use"
  /** In use, after an interrupted request for the same batch, which may have imported it. */
  | "hash_in_use_maybe_by_interrupted_request"
  | "refused"
  | "not_answered";

/** One line that was not imported, as written to the failures file: never the plaintext key. */
export interface Failure {
  line: number;
  reason: FailureReason;
  detail?: string;
  hash?: string;
  start?: string;
}

export type Item = { ok: true; line: number; key: MigrateKey; start?: string } | { ok: false; failure: Failure };

/** A line longer than this is refused unread: meta may be up to 1 MB, a record needs little more. */
export const MAX_RECORD_CHARS = 2 * 1024 * 1024;

const FIELDS = ["key", "hash", "name", "externalId", "meta", "roles", "permissions", "expires", "enabled", "credits", "ratelimits"] as const;
const MAX_HASH = fieldRule(MigrateKeyDataSchema.field.hash)?.maxLen ?? 64;
/** verifyKey's bounds on a key: a key outside them could never be verified. */
const KEY_RULE = fieldRule(VerifyKeyRequestSchema.field.key);
const KEY_MIN = KEY_RULE?.minLen ?? 1;
const KEY_MAX = KEY_RULE?.maxLen ?? 512;

export const CSV_COLUMNS = [
  "key",
  "hash",
  "name",
  "externalId",
  "meta",
  "roles",
  "permissions",
  "expires",
  "enabled",
  "credits.remaining",
  "credits.refill.interval",
  "credits.refill.amount",
  "credits.refill.refillDay",
  "ratelimits",
] as const;

/**
 * What a failure report may show of a plaintext key: at most its first 8
 * characters and never more than a quarter of it (keyhold's own `start` shows
 * the prefix and 4 characters).
 */
export function safeStart(key: string): string {
  return `${key.slice(0, Math.min(8, Math.floor(key.length / 4)))}…`;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isSafeInteger(v);
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every((x) => typeof x === "string");

/** Type checks the domain validators assume; each problem names its field. */
function typeProblems(raw: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const unknown = Object.keys(raw).filter((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown.length > 0)
    problems.push(`unknown field${unknown.length > 1 ? "s" : ""} ${unknown.map((k) => `'${k}'`).join(", ")} (known: ${FIELDS.join(", ")})`);
  const want = (field: string, ok: (v: unknown) => boolean, what: string) => {
    if (raw[field] !== undefined && !ok(raw[field])) problems.push(`${field} must be ${what}`);
  };
  want("key", (v) => typeof v === "string", "a string");
  want("hash", (v) => typeof v === "string", "a string");
  want("name", (v) => typeof v === "string", "a string");
  want("externalId", (v) => typeof v === "string", "a string");
  want("meta", isObject, "a JSON object");
  want("roles", isStrings, "an array of strings");
  want("permissions", isStrings, "an array of strings");
  want("expires", isInt, "an integer (unix milliseconds)");
  want("enabled", (v) => typeof v === "boolean", "true or false");
  want("credits", isObject, "an object {remaining, refill?}");
  want("ratelimits", Array.isArray, "an array of {name, limit, duration, autoApply?}");
  if (isObject(raw.credits)) problems.push(...creditsProblems(raw.credits));
  if (Array.isArray(raw.ratelimits))
    raw.ratelimits.forEach((r, i) => {
      problems.push(...ratelimitProblems(r, `ratelimits[${i}]`));
    });
  return problems;
}

function creditsProblems(c: Record<string, unknown>): string[] {
  const problems = Object.keys(c)
    .filter((k) => k !== "remaining" && k !== "refill")
    .map((k) => `unknown field 'credits.${k}'`);
  if (c.remaining !== undefined && c.remaining !== null && !isInt(c.remaining)) problems.push("credits.remaining must be an integer or null");
  const refill = c.refill;
  if (refill === undefined) return problems;
  if (!isObject(refill)) return [...problems, "credits.refill must be an object {interval, amount, refillDay?}"];
  for (const k of Object.keys(refill)) if (!["interval", "amount", "refillDay"].includes(k)) problems.push(`unknown field 'credits.refill.${k}'`);
  if (typeof refill.interval !== "string") problems.push('credits.refill.interval must be "daily" or "monthly"');
  if (!isInt(refill.amount)) problems.push("credits.refill.amount must be an integer");
  if (refill.refillDay !== undefined && !isInt(refill.refillDay)) problems.push("credits.refill.refillDay must be an integer");
  return problems;
}

function ratelimitProblems(r: unknown, field: string): string[] {
  if (!isObject(r)) return [`${field} must be an object {name, limit, duration, autoApply?}`];
  const problems = Object.keys(r)
    .filter((k) => !["name", "limit", "duration", "autoApply"].includes(k))
    .map((k) => `unknown field '${field}.${k}'`);
  if (typeof r.name !== "string") problems.push(`${field}.name must be a string`);
  if (!isInt(r.limit)) problems.push(`${field}.limit must be an integer`);
  if (!isInt(r.duration)) problems.push(`${field}.duration must be an integer (milliseconds)`);
  if (r.autoApply !== undefined && typeof r.autoApply !== "boolean") problems.push(`${field}.autoApply must be true or false`);
  return problems;
}

const big = (n: number | undefined): bigint | undefined => (n === undefined ? undefined : BigInt(n));

/** keys.migrateKeys' rules for one key: its proto field rules, then the domain's own checks. */
function boundProblems(k: MigrateKey): string[] {
  const { credits } = k;
  const message = create(MigrateKeyDataSchema, {
    hash: k.hash,
    name: k.name,
    externalId: k.externalId,
    meta: k.meta as JsonObject | undefined,
    roles: k.roles ?? [],
    permissions: k.permissions ?? [],
    expires: big(k.expires),
    credits:
      credits === undefined
        ? undefined
        : {
            remaining: big(credits.remaining ?? undefined),
            refill: credits.refill === undefined ? undefined : { ...credits.refill, amount: BigInt(credits.refill.amount) },
          },
    ratelimits: (k.ratelimits ?? []).map((r) => ({ ...r, limit: BigInt(r.limit), duration: BigInt(r.duration) })),
  });
  const broken = fieldProblems(MigrateKeyDataSchema, message);
  if (broken.length > 0) return broken.map((e) => e.message);
  const v = new Validator();
  validateMeta(v, "meta", k.meta);
  if (k.credits !== undefined) {
    const credits: CreditsInput = k.credits.remaining === null || k.credits.remaining === undefined ? {} : { remaining: k.credits.remaining };
    if (k.credits.refill !== undefined) credits.refill = k.credits.refill;
    validateCredits(v, credits);
  }
  if (k.ratelimits !== undefined) validateRatelimits(v, "ratelimits", k.ratelimits, 0);
  return v.errors.map((e) => e.message);
}

/** One parsed record (a JSON object) as a key to send, or the reason it cannot be. */
export function toItem(line: number, raw: unknown): Item {
  const fail = (detail: string, extra: Partial<Failure> = {}): Item => ({ ok: false, failure: { line, reason: "invalid_record", detail, ...extra } });
  if (!isObject(raw)) return fail("the record is not a JSON object");
  const start = typeof raw.key === "string" ? safeStart(raw.key) : undefined;
  const named = start !== undefined ? { start } : typeof raw.hash === "string" && raw.hash.length <= MAX_HASH ? { hash: raw.hash } : {};
  const problems = typeProblems(raw);
  if (raw.key !== undefined && raw.hash !== undefined) problems.unshift("has both key and hash: give one (key is hashed here, hash is sent as it is)");
  if (raw.key === undefined && raw.hash === undefined) problems.unshift("has neither key nor hash");
  // Not trimmed: a trimmed key is not the key users present, and a hash with a
  // space is not what the old system stored. The file is what needs fixing.
  for (const field of ["key", "hash"] as const) {
    const v = raw[field];
    if (typeof v === "string" && v !== "" && v.trim() !== v) problems.push(`${field} starts or ends with whitespace (sent as it is, it would never match)`);
  }
  if (typeof raw.key === "string" && (raw.key.length < KEY_MIN || raw.key.length > KEY_MAX)) {
    // verifyKey takes at most 512 characters: a longer key could never be verified.
    problems.push(`key must be ${KEY_MIN} to ${KEY_MAX} characters long (got ${raw.key.length})`);
  }
  if (problems.length > 0) return fail(problems.join("; "), named);
  const { key: plaintext, ...rest } = raw;
  const key = { ...rest, hash: typeof plaintext === "string" ? hashKey(plaintext) : (raw.hash as string) } as MigrateKey;
  const bounds = boundProblems(key);
  if (bounds.length > 0) return fail(bounds.join("; "), named);
  return start === undefined ? { ok: true, line, key } : { ok: true, line, key, start };
}

/** One JSONL line (not blank). JSON.parse's message quotes the line, which may hold a key: it is never shown. */
export function parseJsonLine(line: number, text: string): Item {
  if (text.length > MAX_RECORD_CHARS)
    return { ok: false, failure: { line, reason: "invalid_record", detail: `the line is longer than ${MAX_RECORD_CHARS} characters` } };
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, failure: { line, reason: "invalid_json", detail: "the line is not valid JSON" } };
  }
  return toItem(line, raw);
}

/**
 * Whether a header cell that is not a known column may be quoted in a message:
 * a file without a header row has a key there. Only cells that read as a column
 * name are shown; when in doubt, not (digits, long runs, many capitals).
 */
export function showableColumn(cell: string): boolean {
  return (
    cell.length <= 40 && /^[A-Za-z][A-Za-z_.]*$/.test(cell) && cell.split(/[_.]/).every((word) => word.length <= 16 && (word.match(/[A-Z]/g)?.length ?? 0) <= 3)
  );
}

/**
 * Why a header cannot be used, or undefined: a cell that is no column (a typo
 * would drop a field silently), or neither `key` nor `hash` (most likely a file
 * without a header row, whose first record was read as one). Never quotes a
 * cell that might be a key.
 */
export function headerProblem(header: readonly string[]): string | undefined {
  const unknown = header.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  const noKey = !header.includes("key") && !header.includes("hash");
  if (unknown.length === 0 && !noKey) return undefined;
  const shown = unknown.filter(showableColumn);
  const hidden = unknown.length - shown.length;
  const names = [...shown.map((c) => `'${c}'`), ...(hidden > 0 ? [`${hidden} not shown (they might be keys)`] : [])].join(", ");
  const unknownText = unknown.length === 0 ? "" : `${unknown.length} unknown CSV column${unknown.length > 1 ? "s" : ""}: ${names}`;
  if (noKey) return `no \`key\` or \`hash\` column: does the file have a header row?${unknownText === "" ? "" : ` (${unknownText})`}`;
  return `${unknownText} (known: ${CSV_COLUMNS.join(", ")})`;
}

/** A CSV row (strings by column; empty cell = absent) as the record JSONL would have. */
export function csvRow(line: number, row: Record<string, string>): Item {
  const problems: string[] = [];
  const raw: Record<string, unknown> = {};
  const cell = (c: string): string | undefined => (row[c] === undefined || row[c] === "" ? undefined : row[c]);
  const int = (c: string): number | undefined => {
    const s = cell(c);
    if (s === undefined) return undefined;
    if (/^\d{1,16}$/.test(s.trim())) return Number(s.trim());
    problems.push(`${c} must be a whole number`);
    return undefined;
  };
  const json = (c: string): unknown => {
    const s = cell(c);
    if (s === undefined) return undefined;
    try {
      return JSON.parse(s);
    } catch {
      problems.push(`${c} is not valid JSON`);
      return undefined;
    }
  };
  const list = (c: string): string[] | undefined =>
    cell(c)
      ?.split(";")
      .map((s) => s.trim());
  for (const c of ["key", "hash", "name", "externalId"]) if (cell(c) !== undefined) raw[c] = cell(c);
  const put = (field: string, value: unknown) => {
    if (value !== undefined) raw[field] = value;
  };
  put("meta", json("meta"));
  put("roles", list("roles"));
  put("permissions", list("permissions"));
  put("expires", int("expires"));
  const enabled = cell("enabled")?.trim().toLowerCase();
  if (enabled !== undefined) {
    if (enabled === "true" || enabled === "false") raw.enabled = enabled === "true";
    else problems.push("enabled must be true or false");
  }
  const remaining = int("credits.remaining");
  const interval = cell("credits.refill.interval");
  const amount = int("credits.refill.amount");
  const refillDay = int("credits.refill.refillDay");
  if (interval !== undefined || amount !== undefined || refillDay !== undefined) {
    const refill: Record<string, unknown> = { interval: interval ?? "", amount: amount ?? 0 };
    if (refillDay !== undefined) refill.refillDay = refillDay;
    raw.credits = { ...(remaining === undefined ? {} : { remaining }), refill };
  } else if (remaining !== undefined) {
    raw.credits = { remaining };
  }
  put("ratelimits", json("ratelimits"));
  if (problems.length > 0) {
    const key = cell("key");
    const hash = cell("hash");
    const named = key !== undefined ? { start: safeStart(key) } : hash !== undefined && hash.length <= MAX_HASH ? { hash } : {};
    return { ok: false, failure: { line, reason: "invalid_record", detail: problems.join("; "), ...named } };
  }
  return toItem(line, raw);
}

export class BadFileError extends Error {}

/**
 * The file's records after line `afterLine`, in order, one at a time: the
 * stream is paused while the consumer works, so memory holds about one batch.
 */
export function readItems(file: string, format: Format, afterLine: number): AsyncGenerator<Item> {
  return format === "csv" ? readCsv(file, afterLine) : readJsonl(file, afterLine);
}

async function* readJsonl(file: string, afterLine: number): AsyncGenerator<Item> {
  const lines = createInterface({ input: createReadStream(file, { encoding: "utf8" }), crlfDelay: Number.POSITIVE_INFINITY });
  let line = 0;
  for await (const text of lines) {
    line++;
    if (line <= afterLine) continue;
    const body = line === 1 ? text.replace(/^\uFEFF/, "") : text;
    if (body.trim() === "") continue;
    yield parseJsonLine(line, body);
  }
}

async function* readCsv(file: string, afterLine: number): AsyncGenerator<Item> {
  // Rows the parser cannot read are skipped and reported by line and csv-parse's
  // code only: its messages may quote the row.
  const skipped: Failure[] = [];
  let badHeader: string | undefined;
  const parser = createReadStream(file).pipe(
    parse({
      bom: true,
      record_delimiter: ["\r\n", "\n"], // also when a file mixes them (rows appended by another tool)
      columns: (header: string[]) => {
        badHeader = headerProblem(header);
        return header;
      },
      info: true,
      skip_empty_lines: true,
      skip_records_with_error: true,
      // A stray quote inside a field stays part of it: strict quoting would
      // misread every row after it, not just its own.
      relax_quotes: true,
      max_record_size: MAX_RECORD_CHARS,
      on_skip: (err) => {
        skipped.push({
          line: Number(err?.lines ?? 0),
          reason: "invalid_csv",
          detail: `the row ending on this line cannot be read as CSV (${err?.code ?? "CSV_UNKNOWN_ERROR"})`,
        });
        return undefined;
      },
    }),
  );
  const skippedBefore = function* (line: number): Generator<Item> {
    while (skipped[0] !== undefined && skipped[0].line < line) {
      const failure = skipped.shift() as Failure;
      if (failure.line > afterLine) yield { ok: false, failure };
    }
  };
  for await (const { record, info } of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
    if (badHeader !== undefined) {
      parser.destroy();
      throw new BadFileError(badHeader);
    }
    yield* skippedBefore(info.lines);
    if (info.lines <= afterLine) continue;
    yield csvRow(info.lines, record);
  }
  if (badHeader !== undefined) throw new BadFileError(badHeader);
  yield* skippedBefore(Number.POSITIVE_INFINITY);
}
