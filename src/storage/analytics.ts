// The analytics store (migrations/0009_analytics.sql): raw verification and
// rate-limit events and their roll-ups per minute, hour, day and month. Written
// only by the recorder (src/domain/analytics/recorder.ts), a batch at a time:
// the raw rows and the roll-ups' increments commit together, in one round trip,
// so a roll-up never counts an event its raw table lacks (or the reverse).
import { createHash } from "node:crypto";
import { escape as escapeValue } from "mysql2";
import { commitInOneTrip, exec, type Pool, type Queryable, rows, type Statement } from "./sql.js";

/** One verification, as recorded. */
export interface VerificationEvent {
  requestId: string;
  /** Unix ms. */
  time: number;
  workspaceId: string;
  /** The API's key space; "" when no key was found. */
  keySpaceId: string;
  /** The API (keyhold's own column beside the key space); "" when no key was found. */
  apiId: string;
  keyId: string;
  identityId: string;
  externalId: string;
  outcome: string;
  region: string;
  tags: readonly string[];
  spentCredits: number;
}

/** One rate-limit check of ratelimit.limit / multiLimit. */
export interface RatelimitEvent {
  requestId: string;
  time: number;
  workspaceId: string;
  namespaceId: string;
  identifier: string;
  passed: boolean;
}

export const ROLLUPS = ["minute", "hour", "day", "month"] as const;
export type Rollup = (typeof ROLLUPS)[number];

/** The start of t's bucket, Unix ms, in UTC. */
export function bucketStart(t: number, g: Rollup): number {
  switch (g) {
    case "minute":
      return t - (t % 60_000);
    case "hour":
      return t - (t % 3_600_000);
    case "day":
      return t - (t % 86_400_000);
    case "month": {
      const d = new Date(t);
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
    }
  }
}

/** "2026-11-26 13:45:12.345": DATETIME text in UTC (sent as text, so no driver time-zone conversion applies). */
export function sqlTime(t: number, millis = true): string {
  const iso = new Date(t).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, millis ? 23 : 19)}`;
}

/**
 * A batch's SQL is written as text here rather than as placeholders for mysql2 to
 * fill: at 40,000 verifications a second, filling ~12 placeholders an event
 * (mysql2's format, its escaping, the parameter arrays and their garbage) and a
 * toISOString per event cost keyhold's hot path ~12 µs of CPU a verification
 * (profile of verifyJson, bench/README.md). Strings made only of id and tag
 * characters go in quoted as they are; anything else through mysql2's escape.
 * Sessions never have NO_BACKSLASH_ESCAPES (storage/db.ts, ESCAPING_SAFE).
 */
const PLAIN = /^[A-Za-z0-9_.:=/ -]*$/;
const lit = (v: string): string => (PLAIN.test(v) ? `'${v}'` : escapeValue(v));

/** sqlTime with the seconds' text reused: the events of one batch share a few seconds. */
class Times {
  private second = Number.NaN;
  private text = "";
  private last = Number.NaN;
  private lastText = "";
  /** The DATETIME(3) text, unquoted; the last one's again for the same millisecond (a hot key's events share them by tens). */
  at(t: number): string {
    if (t === this.last) return this.lastText;
    const s = t - (t % 1000);
    if (s !== this.second) {
      this.second = s;
      this.text = sqlTime(s, false);
    }
    this.last = t;
    this.lastText = `${this.text}.${String(t - s).padStart(3, "0")}`;
    return this.lastText;
  }
}

/**
 * A value as a field of LOAD DATA's tab-separated text (FIELDS TERMINATED BY '\t'
 * ESCAPED BY '\\' LINES TERMINATED BY '\n'): the backslash and the characters
 * that would end a field or a line escaped, NUL and CR too so that no byte of a
 * value is read as anything but itself. An empty field is the empty string.
 */
const TSV_SPECIAL = /[\\\t\n\r\0]/;
const TSV_ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0" };
export const tsvField = (v: string): string => (TSV_SPECIAL.test(v) ? v.replace(/[\\\t\n\r\0]/g, (c) => TSV_ESCAPES[c] as string) : v);

/**
 * SQL literals of one batch, each value's made once: the same workspace, key,
 * outcome and region recur in event after event, and a Map lookup of a string
 * that came from the same record (its hash kept in the string) is cheaper than
 * testing and quoting it again.
 */
class Lits {
  private readonly made = new Map<string, string>();
  /** lit by default; tsvField for the rows LOAD DATA reads. */
  constructor(private readonly form: (v: string) => string = lit) {}
  of(v: string): string {
    let t = this.made.get(v);
    if (t === undefined) this.made.set(v, (t = this.form(v)));
    return t;
  }
}

/**
 * Small integers for tuples of strings, found through one Map per part: a key
 * joined from the parts would be a new string per event, hashed in full each
 * time. Built per batch; tuples share their leading parts (the workspace, the key).
 */
class TupleIds {
  private readonly root = new Map<string, unknown>();
  private next = 0;
  id(parts: readonly string[]): number {
    let m = this.root;
    const last = parts.length - 1;
    for (let i = 0; i < last; i++) {
      let n = m.get(parts[i] as string) as Map<string, unknown> | undefined;
      if (n === undefined) m.set(parts[i] as string, (n = new Map()));
      m = n;
    }
    let id = m.get(parts[last] as string) as number | undefined;
    if (id === undefined) m.set(parts[last] as string, (id = this.next++));
    return id;
  }
}

const tagsText = (tags: readonly string[]): string => (tags.length === 0 ? "[]" : JSON.stringify(tags));

/**
 * How a batch's raw rows reach the database. "load": LOAD DATA LOCAL INFILE of
 * tab-separated text that keyhold hands over itself (the server names the file
 * and gets only that text; it can read nothing else of this machine). Measured on
 * MariaDB 10.11, rows of the raw verifications table 220 a transaction: 4.0-4.9 µs
 * of the database's CPU a row against 6.1-6.5 for the same rows as one INSERT's
 * SQL (its parser goes over every literal); 3.5-4.0 against 5.3-5.9 at 500 a
 * transaction. "insert": the INSERT, for servers that refuse LOAD DATA LOCAL
 * (MySQL 8 has local_infile off by default).
 */
export type RawForm = "load" | "insert";

/**
 * A raw table's rows: each is its request id, its time, the columns it shares
 * with other rows of the batch (a tuple) and one number of its own.
 */
interface RawTableRows<E extends { requestId: string; time: number }> {
  table: RawTable;
  /** The shared columns, in the order of each tuple's values. */
  shared: readonly string[];
  /** The row's number column (spent_credits, passed). */
  last: string;
  events: readonly E[];
  /** Each event's tuple number (an index into `tuples`). */
  tupleOf: Int32Array;
  tuples: ReadonlyArray<readonly string[]>;
  lastOf(e: E): number;
}

/**
 * At most this many tuples a row, a batch's raw rows go to LOAD DATA as their
 * own values and their tuple's number, and the statement fills the shared
 * columns from the number: `SET workspace_id = ELT(@t, 'ws_a', 'ws_b'), …`, one
 * ELT of the batch's tuples a column, each value written once. A hot key's
 * verifications share everything but the request id, the time and the credits
 * spent, so a row of ~200 bytes becomes ~50 to send and to read. Measured with
 * `npm run bench:ab` (verifyJson, 12 rounds of 2 s, against whole rows; the
 * machine's MariaDB 10.11), three runs: the database's CPU a verification
 * ×0.861, ×0.865 and ×0.882, keyhold's ×0.960, ×0.971 and ×0.891, req/s ×1.07,
 * ×1.03 and ×1.08 (ratelimit.limit: ×0.891, ×0.962, ×1.04). What is left of
 * the database's CPU is mostly InnoDB writing the rows (`ha_write_row` ~45%
 * of mariadbd's samples under that load, perf), which the row's width, not
 * its text, decides. Batches of keys seen once (the cold path) keep whole
 * rows: there the tuples' values would be SQL literals for the server's
 * parser, which reads one at a higher cost than LOAD DATA reads a field.
 */
const TUPLES_A_ROW_AT_MOST = 0.25;

/** A raw table's rows as one statement of the batch. */
function rawRows<E extends { requestId: string; time: number }>(r: RawTableRows<E>, form: RawForm, times: Times, lits: Lits): Statement {
  const { table, shared, last, events, tupleOf, tuples, lastOf } = r;
  const load = form === "load";
  // With LOCAL a value that does not fit its column is cut with a warning instead of
  // failing the statement (the server cannot stop the client mid-file): values are
  // checked at the doors, well within the columns.
  const loadData = (columns: string, lines: string[]): Statement => ({
    sql: `LOAD DATA LOCAL INFILE '${table}' INTO TABLE ${table} CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' ESCAPED BY '\\\\' LINES TERMINATED BY '\\n' ${columns}`,
    params: [],
    text: true,
    infile: { name: table, data: Buffer.from(`${lines.join("\n")}\n`) },
  });
  if (load && tuples.length <= events.length * TUPLES_A_ROW_AT_MOST) {
    // A line's end (its tuple and number) is the last line's again in a run of a hot key's events.
    let tuple = -1;
    let value = Number.NaN;
    let end = "";
    const lines = events.map((e, i) => {
      const t = tupleOf[i] as number;
      const v = Math.trunc(lastOf(e));
      if (t !== tuple || v !== value) {
        tuple = t;
        value = v;
        end = `\t${t + 1}\t${v}`;
      }
      return `${tsvField(e.requestId)}\t${times.at(e.time)}${end}`;
    });
    const set = shared.map((column, j) => `${column} = ELT(@t, ${tuples.map((t) => lits.of(t[j] as string)).join(",")})`).join(", ");
    return loadData(`(request_id, \`time\`, @t, ${last}) SET ${set}`, lines);
  }
  const { sep, open, close, q } = load ? { sep: "\t", open: "", close: "", q: "" } : { sep: ",", open: "(", close: ")", q: "'" };
  const field = load ? new Lits(tsvField) : lits;
  // Each tuple's values as text once.
  const texts = tuples.map((t) => t.map((v) => field.of(v)).join(sep));
  const rows = events.map(
    (e, i) =>
      `${open}${load ? tsvField(e.requestId) : lit(e.requestId)}${sep}${q}${times.at(e.time)}${q}${sep}${texts[tupleOf[i] as number]}${sep}${Math.trunc(lastOf(e))}${close}`,
  );
  const columns = `(request_id, \`time\`, ${shared.join(", ")}, ${last})`;
  return load ? loadData(columns, rows) : { sql: `INSERT INTO ${table} ${columns} VALUES ${rows.join(",")}`, params: [], text: true };
}

/**
 * Each event's tuple number and each tuple's values (its first event's), found
 * through `parts` (TupleIds: the part most often new last) unless `same` says
 * the event's tuple is the last event's, and written in the shared columns'
 * order by `values`.
 */
function tuplesOf<E>(
  events: readonly E[],
  same: (a: E, b: E) => boolean,
  parts: (e: E) => readonly string[],
  values: (e: E) => string[],
): { tupleOf: Int32Array; tuples: string[][] } {
  const ids = new TupleIds();
  const tupleOf = new Int32Array(events.length);
  const tuples: string[][] = [];
  let prev: E | undefined;
  let t = -1;
  events.forEach((e, i) => {
    // A hot key's events come in runs of one tuple: the last event's, by its strings, before any Map.
    if (prev === undefined || !same(prev, e)) {
      t = ids.id(parts(e));
      if (t === tuples.length) tuples.push(values(e));
    }
    tupleOf[i] = t;
    prev = e;
  });
  return { tupleOf, tuples };
}

/**
 * A tuple with at least this many events in a batch (a hot key's, a hot
 * identifier's) is written packed, one row of analytics_verifications_packed
 * or analytics_ratelimits_packed (migrations/0015, 0016) for its events,
 * instead of a row each: measured against the machine's MariaDB 10.11
 * (bench/README.md, 2026-12-01), 0.25-0.42 µs of the database's CPU an event
 * packed against 3.3-4.3 as rows, 43 bytes of table against 212. Below this
 * the rows stay: a pack is read back through JSON_TABLE, whose cost a pack is
 * worth paying only for many events, and the cold path's keys (seen once a
 * batch) would gain nothing.
 */
export const PACK_AT_LEAST = 32;
/** And at most this many events a pack (a longer run is cut in several): ~80 KB of JSON. */
export const PACK_AT_MOST = 2_000;

/** A raw table's events, for rawStatements: rows (rawRows) or, a hot tuple's, packed (packs). */
interface RawEvents<E extends { requestId: string; time: number }> {
  table: RawTable;
  /** Its packed table (migrations/0015, 0016). */
  packed: RawTable;
  shared: readonly string[];
  last: string;
  events: readonly E[];
  /** As tuplesOf takes them. */
  same: (a: E, b: E) => boolean;
  parts: (e: E) => readonly string[];
  values: (e: E) => string[];
  lastOf(e: E): number;
}

/**
 * A raw table's statements: the events of hot tuples packed (one INSERT of
 * every pack) and the rest as rows (rawRows), or rows only when no tuple has
 * PACK_AT_LEAST events in the batch.
 */
function rawStatements<E extends { requestId: string; time: number }>(r: RawEvents<E>, form: RawForm, times: Times, lits: Lits): Statement[] {
  const rows = (events: readonly E[], numbered: { tupleOf: Int32Array; tuples: ReadonlyArray<readonly string[]> }) =>
    rawRows({ table: r.table, shared: r.shared, last: r.last, events, ...numbered, lastOf: r.lastOf }, form, times, lits);
  const numbered = tuplesOf(r.events, r.same, r.parts, r.values);
  const packed = packs(r, numbered.tupleOf, numbered.tuples, times, lits);
  if (packed === undefined) return [rows(r.events, numbered)];
  // The rest's tuples numbered again: rawRows' ELT lists only theirs.
  return [...(packed.rest.length > 0 ? [rows(packed.rest, tuplesOf(packed.rest, r.same, r.parts, r.values))] : []), packed.statement];
}

/**
 * The batch's hot tuples as packs and the events left for rows; undefined
 * when no tuple has PACK_AT_LEAST events. A pack's events are `[request id, ms
 * after the pack's time, the last column's value]`, in the batch's order; its
 * time and last_time are its earliest and latest event's.
 */
function packs<E extends { requestId: string; time: number }>(
  r: RawEvents<E>,
  tupleOf: Int32Array,
  tuples: ReadonlyArray<readonly string[]>,
  times: Times,
  lits: Lits,
): { statement: Statement; rest: E[] } | undefined {
  const { events, lastOf } = r;
  const counts = new Int32Array(tuples.length);
  let any = false;
  for (let i = 0; i < events.length; i++) {
    const t = tupleOf[i] as number;
    const n = (counts[t] as number) + 1;
    counts[t] = n;
    if (n === PACK_AT_LEAST) any = true;
  }
  if (!any) return undefined;
  const rest: E[] = [];
  const members = new Map<number, E[]>();
  events.forEach((e, i) => {
    const t = tupleOf[i] as number;
    if ((counts[t] as number) < PACK_AT_LEAST) {
      rest.push(e);
      return;
    }
    let m = members.get(t);
    if (m === undefined) members.set(t, (m = []));
    m.push(e);
  });
  const values: string[] = [];
  for (const [t, all] of members) {
    const shared = (tuples[t] as readonly string[]).map((v) => lits.of(v)).join(",");
    for (let from = 0; from < all.length; from += PACK_AT_MOST) {
      const pack = all.slice(from, from + PACK_AT_MOST);
      let first = Number.POSITIVE_INFINITY;
      let last = Number.NEGATIVE_INFINITY;
      let plain = true;
      for (const e of pack) {
        if (e.time < first) first = e.time;
        if (e.time > last) last = e.time;
        if (plain && !PLAIN.test(e.requestId)) plain = false;
      }
      // Ids of PLAIN characters (keyhold's own: "req_…") need no escaping in JSON nor, then, in
      // SQL's single quotes (no quote, no backslash): the array is the literal as it is.
      const json = `[${pack.map((e) => `[${plain ? `"${e.requestId}"` : JSON.stringify(e.requestId)},${e.time - first},${Math.trunc(lastOf(e))}]`).join(",")}]`;
      values.push(`('${times.at(first)}','${times.at(last)}',${shared},${pack.length},${plain ? `'${json}'` : escapeValue(json)})`);
    }
  }
  return {
    statement: { sql: `INSERT INTO ${r.packed} (\`time\`, last_time, ${r.shared.join(", ")}, n, events) VALUES ${values.join(",")}`, params: [], text: true },
    rest,
  };
}

/** Whether two rate-limit checks share their tuple (and their roll-ups' identity). */
const sameLimit = (a: RatelimitEvent, b: RatelimitEvent): boolean =>
  a.identifier === b.identifier && a.namespaceId === b.namespaceId && a.workspaceId === b.workspaceId;

const VERIFICATION_SHARED = ["workspace_id", "key_space_id", "api_id", "key_id", "identity_id", "external_id", "outcome", "region", "tags"] as const;
const RATELIMIT_SHARED = ["workspace_id", "namespace_id", "identifier"] as const;

/**
 * The statements that write one batch: raw rows, then each roll-up's
 * increments. Roll-up rows are sorted by primary key so that instances
 * flushing the same buckets lock them in the same order. The SQL is complete
 * text (no placeholders): commitInOneTrip sends it as it is.
 */
export function analyticsBatch(verifications: readonly VerificationEvent[], ratelimits: readonly RatelimitEvent[], form: RawForm = "insert"): Statement[] {
  const out: Statement[] = [];
  const times = new Times();
  if (verifications.length > 0) {
    const tagTexts = new Map<readonly string[], string>();
    // Each request's tags are an array of its own: most are empty, and not kept in the Map.
    const tagsOf = (e: VerificationEvent): string => {
      if (e.tags.length === 0) return "[]";
      let t = tagTexts.get(e.tags);
      if (t === undefined) tagTexts.set(e.tags, (t = tagsText(e.tags)));
      return t;
    };
    // Whether two verifications share their raw rows' tuple (every shared column): stricter than
    // the roll-ups' identity (no API, external id or region there), so it serves both.
    const same = (a: VerificationEvent, b: VerificationEvent): boolean =>
      a.keyId === b.keyId &&
      a.outcome === b.outcome &&
      a.identityId === b.identityId &&
      a.externalId === b.externalId &&
      a.workspaceId === b.workspaceId &&
      a.keySpaceId === b.keySpaceId &&
      a.apiId === b.apiId &&
      a.region === b.region &&
      (a.tags === b.tags || tagsOf(a) === tagsOf(b));
    const lits = new Lits();
    const raw: RawEvents<VerificationEvent> = {
      table: "analytics_verifications",
      packed: "analytics_verifications_packed",
      shared: VERIFICATION_SHARED,
      last: "spent_credits",
      events: verifications,
      same,
      // The key last: a key seen once in the batch (the cold path) then adds an entry to a Map, not Maps of its own.
      parts: (e) => [e.workspaceId, e.keySpaceId, e.apiId, e.identityId, e.externalId, e.outcome, e.region, tagsOf(e), e.keyId],
      values: (e) => [e.workspaceId, e.keySpaceId, e.apiId, e.keyId, e.identityId, e.externalId, e.outcome, e.region, tagsOf(e)],
      lastOf: (e) => e.spentCredits,
    };
    out.push(...rawStatements(raw, form, times, lits));
    out.push(...verificationRollups(verifications, same, tagsOf, lits));
  }
  if (ratelimits.length > 0) {
    // One LOAD DATA a query: mysql2 (3.24.5) leaves the socket listeners of every
    // LOCAL INFILE but a query's last one in place, a pair a batch, on a pooled
    // connection that lives for days. With verifications in the batch (they are
    // the most rows), rate-limit checks go as an INSERT.
    const lits = new Lits();
    const parts = (e: RatelimitEvent): string[] => [e.workspaceId, e.namespaceId, e.identifier];
    const raw: RawEvents<RatelimitEvent> = {
      table: "analytics_ratelimits",
      packed: "analytics_ratelimits_packed",
      shared: RATELIMIT_SHARED,
      last: "passed",
      events: ratelimits,
      same: sameLimit,
      parts,
      values: parts,
      lastOf: (e) => (e.passed ? 1 : 0),
    };
    out.push(...rawStatements(raw, verifications.length > 0 ? "insert" : form, times, lits));
    out.push(...ratelimitRollups(ratelimits, lits));
  }
  return out;
}

interface Sum {
  /** The bucket's start, Unix ms. */
  start: number;
  /** Its identity's number (TupleIds), the same in every roll-up; Rolled.first has the identity's columns. */
  id: number;
  count: number;
  /** verifications: spent credits; rate limits: checks passed. */
  extra: number;
}

/** Sums by bucket start, then by identity number. */
class Sums {
  private readonly byStart = new Map<number, Map<number, Sum>>();
  readonly all: Sum[] = [];
  /** Adds to the sum of (start, id), made if new; returns it. */
  add(start: number, id: number, count: number, extra: number): Sum {
    let row = this.byStart.get(start);
    if (row === undefined) this.byStart.set(start, (row = new Map()));
    const sum = row.get(id);
    if (sum === undefined) {
      const created = { start, id, count, extra };
      row.set(id, created);
      this.all.push(created);
      return created;
    }
    sum.count += count;
    sum.extra += extra;
    return sum;
  }
}

/** A batch's roll-ups: the sums of each granularity, and the first event of each identity, by its number. */
interface Rolled<E> {
  sums: Map<Rollup, Sum[]>;
  first: E[];
}

/**
 * Sums per minute first (one identity looked up per event), then the hours,
 * days and months from the minutes (one per minute group): events of a batch
 * share few minutes, so the coarser roll-ups cost next to nothing.
 */
function rollUp<E extends { time: number }>(
  events: readonly E[],
  same: (a: E, b: E) => boolean,
  identity: (e: E) => readonly string[],
  extra: (e: E) => number,
): Rolled<E> {
  const ids = new TupleIds();
  const first: E[] = [];
  const minutes = new Sums();
  let prev: E | undefined;
  let id = -1;
  let sum: Sum | undefined;
  for (const e of events) {
    // As in tuplesOf: an event like the last one (`same` at least as strict as `identity`) has its
    // identity, and in the same minute its sum.
    if (prev === undefined || !same(prev, e)) {
      id = ids.id(identity(e));
      if (id === first.length) first.push(e);
      sum = undefined;
    }
    prev = e;
    const minute = bucketStart(e.time, "minute");
    if (sum !== undefined && sum.start === minute) {
      sum.count++;
      sum.extra += extra(e);
    } else sum = minutes.add(minute, id, 1, extra(e));
  }
  const sums = new Map<Rollup, Sum[]>([["minute", minutes.all]]);
  for (const g of ["hour", "day", "month"] as const) {
    const coarser = new Sums();
    for (const m of minutes.all) coarser.add(bucketStart(m.start, g), m.id, m.count, m.extra);
    sums.set(g, coarser.all);
  }
  return { sums, first };
}

// Binary comparison, as the utf8mb4_bin columns compare.
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * A roll-up's rows in its primary key's order, (workspace, key space or
 * namespace, time, the rest of the identity), with the identities' strings
 * compared once a batch rather than in every roll-up's sort: the identities are
 * sorted by `byIdentity` (which orders by workspace and key space or namespace
 * first; `sameGroup` tells whether two identities share those), then each
 * roll-up sorts by numbers. On the cold path (each key seen once) the sorts were
 * most of the batch's CPU: 2,000 cold verifications took 16-48 ms to write as
 * SQL, in one piece, while every request waited (9-10 ms now).
 */
function inKeyOrder<E>(rolled: Rolled<E>, byIdentity: (a: E, b: E) => number, sameGroup: (a: E, b: E) => boolean): (rows: Sum[]) => Sum[] {
  const order = rolled.first.map((_, id) => id).sort((a, b) => byIdentity(rolled.first[a] as E, rolled.first[b] as E));
  const rank = new Int32Array(order.length);
  const groupOf = new Int32Array(order.length);
  let g = -1;
  let last: E | undefined;
  order.forEach((id, i) => {
    const e = rolled.first[id] as E;
    rank[id] = i;
    if (last === undefined || !sameGroup(last, e)) g++;
    last = e;
    groupOf[id] = g;
  });
  return (rows) =>
    rows.sort((a, b) => (groupOf[a.id] as number) - (groupOf[b.id] as number) || a.start - b.start || (rank[a.id] as number) - (rank[b.id] as number));
}

/** sqlTime of bucket starts, each made once: a batch's rows share a few. */
function bucketTimes(): (start: number) => string {
  const made = new Map<number, string>();
  return (start) => {
    let t = made.get(start);
    if (t === undefined) made.set(start, (t = `'${sqlTime(start, false)}'`));
    return t;
  };
}

function verificationRollups(
  events: readonly VerificationEvent[],
  same: (a: VerificationEvent, b: VerificationEvent) => boolean,
  tagsOf: (e: VerificationEvent) => string,
  lits: Lits,
): Statement[] {
  const hashes = new Map<string, string>();
  const hashOf = (tags: string): string => {
    let h = hashes.get(tags);
    if (h === undefined) hashes.set(tags, (h = createHash("md5").update(tags).digest("hex")));
    return h;
  };
  const rolled = rollUp(
    events,
    same,
    // The key last, as in the raw rows' tuples.
    (e) => [e.workspaceId, e.keySpaceId, e.identityId, e.outcome, hashOf(tagsOf(e)), e.keyId],
    (e) => e.spentCredits,
  );
  // In primary-key order: (workspace_id, key_space_id, time, key_id, identity_id, outcome, tags_hash).
  const sorted = inKeyOrder(
    rolled,
    (a, b) =>
      cmp(a.workspaceId, b.workspaceId) ||
      cmp(a.keySpaceId, b.keySpaceId) ||
      cmp(a.keyId, b.keyId) ||
      cmp(a.identityId, b.identityId) ||
      cmp(a.outcome, b.outcome) ||
      cmp(hashOf(tagsOf(a)), hashOf(tagsOf(b))),
    (a, b) => a.workspaceId === b.workspaceId && a.keySpaceId === b.keySpaceId,
  );
  // An identity's columns (those of its first event), as text once for the four roll-ups.
  // Joined, so one flat string: a template literal leaves a chain of its pieces that each
  // roll-up's join walked again; on the cold path (each key an identity of its own) the
  // batch's SQL took ×0.75 the time once joined (`npm run bench:batch`, 500 keys seen once).
  const texts = rolled.first.map((e) => {
    const tags = tagsOf(e);
    return [
      lits.of(e.workspaceId),
      lits.of(e.keySpaceId),
      lits.of(e.apiId),
      // Seen once by the roll-ups of a batch, and on the cold path by the whole batch: no Map entry.
      lit(e.keyId),
      lits.of(e.identityId),
      lits.of(e.externalId),
      lits.of(e.outcome),
      lits.of(tags),
      `'${hashOf(tags)}'`,
    ].join(",");
  });
  const timeOf = bucketTimes();
  return ROLLUPS.map((g) => {
    const values = sorted(rolled.sums.get(g) as Sum[]).map((s) => `(${timeOf(s.start)},${texts[s.id]},${s.count},${Math.trunc(s.extra)})`);
    return {
      // VALUES(x) rather than MySQL 8's row alias: MariaDB has no row alias.
      sql: `INSERT INTO analytics_verifications_per_${g} (\`time\`, workspace_id, key_space_id, api_id, key_id, identity_id, external_id, outcome, tags, tags_hash, count, spent_credits) VALUES ${values.join(",")} ON DUPLICATE KEY UPDATE count = count + VALUES(count), spent_credits = spent_credits + VALUES(spent_credits)`,
      params: [],
      text: true,
    };
  });
}

function ratelimitRollups(events: readonly RatelimitEvent[], lits: Lits): Statement[] {
  const rolled = rollUp(
    events,
    sameLimit,
    (e) => [e.workspaceId, e.namespaceId, e.identifier],
    (e) => (e.passed ? 1 : 0),
  );
  const sorted = inKeyOrder(
    rolled,
    (a, b) => cmp(a.workspaceId, b.workspaceId) || cmp(a.namespaceId, b.namespaceId) || cmp(a.identifier, b.identifier),
    (a, b) => a.workspaceId === b.workspaceId && a.namespaceId === b.namespaceId,
  );
  // The identifier is the client's string, often seen once: quoted without the cache.
  const texts = rolled.first.map((e) => [lits.of(e.workspaceId), lits.of(e.namespaceId), lit(e.identifier)].join(","));
  const timeOf = bucketTimes();
  return ROLLUPS.map((g) => {
    const values = sorted(rolled.sums.get(g) as Sum[]).map((s) => `(${timeOf(s.start)},${texts[s.id]},${s.extra},${s.count})`);
    return {
      sql: `INSERT INTO analytics_ratelimits_per_${g} (\`time\`, workspace_id, namespace_id, identifier, passed, total) VALUES ${values.join(",")} ON DUPLICATE KEY UPDATE passed = passed + VALUES(passed), total = total + VALUES(total)`,
      params: [],
      text: true,
    };
  });
}

/**
 * The errors of a server (or a client) that does not take LOAD DATA LOCAL: MySQL
 * 3948 (local_infile off, MySQL 8's default), MariaDB 4166, 1148 of older servers.
 */
const LOCAL_INFILE_REFUSED = new Set([1148, 3948, 4166]);

/** Pools whose server refused LOAD DATA LOCAL: their raw rows go as INSERTs from then on. */
const refusesLoad = new WeakSet<Pool>();

/**
 * Writes one batch, raw rows and roll-ups, in one transaction and one round trip.
 * Raw rows go by LOAD DATA LOCAL (RawForm) unless the server refused it once; a
 * refused batch is written again at once as INSERTs, so nothing is lost to it.
 */
export async function writeAnalytics(pool: Pool, verifications: readonly VerificationEvent[], ratelimits: readonly RatelimitEvent[]): Promise<void> {
  if (verifications.length === 0 && ratelimits.length === 0) return;
  if (!refusesLoad.has(pool)) {
    try {
      await commitInOneTrip(pool, analyticsBatch(verifications, ratelimits, "load"));
      return;
    } catch (err) {
      if (!LOCAL_INFILE_REFUSED.has((err as { errno?: number }).errno ?? 0)) throw err;
      refusesLoad.add(pool);
    }
  }
  await commitInOneTrip(pool, analyticsBatch(verifications, ratelimits, "insert"));
}

/** Whether this pool's raw rows go as INSERTs because its server refused LOAD DATA LOCAL (logged once, src/server/deps.ts). */
export const rawRowsInserted = (pool: Pool): boolean => refusesLoad.has(pool);

export const RAW_TABLES = ["analytics_verifications", "analytics_verifications_packed", "analytics_ratelimits", "analytics_ratelimits_packed"] as const;
export type RawTable = (typeof RAW_TABLES)[number];

/** The column after workspace_id in a raw table's primary key (workspace, this, time, pk). */
const SPACE_COLUMN: Record<RawTable, string> = {
  analytics_verifications: "key_space_id",
  analytics_verifications_packed: "key_space_id",
  analytics_ratelimits: "namespace_id",
  analytics_ratelimits_packed: "namespace_id",
};
/** And the one after that: a pack is ordered, and swept, by its last event's time. */
const TIME_COLUMN: Record<RawTable, string> = {
  analytics_verifications: "`time`",
  analytics_verifications_packed: "last_time",
  analytics_ratelimits: "`time`",
  analytics_ratelimits_packed: "last_time",
};

/** A workspace's key space (verifications) or namespace (rate limits): a leading part of a raw table's primary key. */
export interface RawGroup {
  workspaceId: string;
  spaceId: string;
}

/**
 * The groups of `table` holding rows older than `before` (Unix ms). The raw
 * tables have no index on `time` alone (migrations/0010): this reads the
 * primary key's first row of each group (MariaDB and MySQL answer a GROUP BY of
 * its leading columns with MIN of the next by jumping from group to group).
 */
export async function rawGroupsBefore(db: Queryable, table: RawTable, before: number): Promise<RawGroup[]> {
  const space = SPACE_COLUMN[table];
  const rs = await rows(db, `SELECT workspace_id, ${space} AS space_id FROM ${table} GROUP BY workspace_id, ${space} HAVING MIN(${TIME_COLUMN[table]}) < ?`, [
    sqlTime(before),
  ]);
  return rs.map((r) => ({ workspaceId: String(r.workspace_id), spaceId: String(r.space_id) }));
}

/**
 * Deletes up to `batch` of one group's raw rows older than `before` (Unix ms),
 * oldest first, a range of the primary key; the roll-ups stay (they are what
 * long ranges read). A pack goes once its last event is older: one that holds
 * the bound stays whole until a later sweep. Returns the rows deleted (a pack
 * is one).
 */
export async function deleteRawAnalyticsBefore(db: Queryable, table: RawTable, group: RawGroup, before: number, batch: number): Promise<number> {
  const time = TIME_COLUMN[table];
  const r = await exec(
    db,
    `DELETE FROM ${table} WHERE workspace_id = ? AND ${SPACE_COLUMN[table]} = ? AND ${time} < ? ORDER BY ${time} LIMIT ${Math.floor(batch)}`,
    [group.workspaceId, group.spaceId, sqlTime(before)],
  );
  return r.affectedRows;
}

/** Why a user's query failed at the database. */
export type QueryFailure = "timeout" | "invalid" | "unavailable";

export class AnalyticsQueryFailed extends Error {
  constructor(
    readonly failure: QueryFailure,
    message: string,
  ) {
    super(message);
  }
}

// MariaDB limits a statement by max_statement_time (seconds), MySQL 8 by
// max_execution_time (milliseconds, SELECTs only): whichever this server knows.
let timeLimitVariable: "max_statement_time" | "max_execution_time" | undefined;
const TIMEOUT_ERRNOS = new Set([1969 /* MariaDB ER_STATEMENT_TIMEOUT */, 3024 /* MySQL ER_QUERY_TIMEOUT */]);
const UNKNOWN_VARIABLE = 1193;

/**
 * Runs one compiled analytics query on the read-only pool, limited in time; at
 * most maxRows + 1 rows come back (the compiler caps them). Database errors are
 * sorted into the caller's fault (a query the server refuses), a timeout, and
 * the database being unreachable.
 */
export async function runAnalyticsQuery(pool: Pool, sql: string, timeoutMs: number): Promise<Record<string, unknown>[]> {
  let conn: Awaited<ReturnType<Pool["getConnection"]>>;
  try {
    conn = await pool.getConnection();
  } catch (err) {
    throw new AnalyticsQueryFailed("unavailable", (err as Error).message);
  }
  try {
    await setTimeLimit(conn, timeoutMs);
    // And a deadline of the client's own, for a server that stops answering at all
    // (mysql2 then closes the connection): the query cannot hold one of the 4 forever.
    const [rows] = await conn.query({ sql, rowsAsArray: false, timeout: timeoutMs + 5_000 });
    return rows as Record<string, unknown>[];
  } catch (err) {
    const e = err as { errno?: number; sqlMessage?: string; fatal?: boolean; message: string };
    if (
      (e.errno !== undefined && TIMEOUT_ERRNOS.has(e.errno)) ||
      /max(imum)?[ _]statement[ _]time|max_execution_time|maximum statement execution time/i.test(e.message)
    )
      throw new AnalyticsQueryFailed("timeout", "the query ran longer than allowed");
    if ((e as { code?: string }).code === "PROTOCOL_SEQUENCE_TIMEOUT") throw new AnalyticsQueryFailed("unavailable", "the database did not answer in time");
    if (e.fatal === true || e.errno === undefined) throw new AnalyticsQueryFailed("unavailable", e.message);
    throw new AnalyticsQueryFailed("invalid", e.sqlMessage ?? e.message);
  } finally {
    conn.release();
  }
}

async function setTimeLimit(conn: Awaited<ReturnType<Pool["getConnection"]>>, timeoutMs: number): Promise<void> {
  for (const variable of timeLimitVariable === undefined ? (["max_statement_time", "max_execution_time"] as const) : [timeLimitVariable]) {
    const value = variable === "max_statement_time" ? timeoutMs / 1000 : Math.ceil(timeoutMs);
    try {
      await conn.query(`SET SESSION ${variable} = ${Number(value)}`);
      timeLimitVariable = variable;
      return;
    } catch (err) {
      if ((err as { errno?: number }).errno !== UNKNOWN_VARIABLE) throw err;
    }
  }
  throw new Error("the database limits statements by neither max_statement_time nor max_execution_time");
}

/** Every API of the workspace (deleted ones too: their events stay) with its key space. */
export async function keySpacesOf(db: Queryable, workspaceId: string): Promise<Array<{ apiId: string; keySpaceId: string }>> {
  const rs = await rows(db, "SELECT id, key_auth_id FROM apis WHERE workspace_id = ?", [workspaceId]);
  return rs.map((r) => ({ apiId: String(r.id), keySpaceId: String(r.key_auth_id) }));
}

/** Every rate-limit namespace id of the workspace, deleted ones too. */
export async function namespaceIdsOf(db: Queryable, workspaceId: string): Promise<string[]> {
  const rs = await rows(db, "SELECT id FROM ratelimit_namespaces WHERE workspace_id = ?", [workspaceId]);
  return rs.map((r) => String(r.id));
}
