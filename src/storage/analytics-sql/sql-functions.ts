// The functions an analytics query may call, and what each becomes. Users write
// ClickHouse's names (the @unkey/api SDK's examples do: count(), countIf,
// toStartOfHour, has(tags, ...)); the compiled query runs on MariaDB 10.11 or
// MySQL 8, so every translation uses only SQL both accept. This table is the
// allow-list: a name not in it is refused (query.ts), because a function is
// the one place a SELECT can reach outside its rows (SLEEP, BENCHMARK,
// LOAD_FILE, GET_LOCK, DATABASE(), USER(), ...), and no deny-list would keep up
// with what a server version adds.
//
// Time: `time` columns are DATETIME in UTC. Every translation below is plain
// calendar arithmetic on DATETIME values (DATE_FORMAT, CAST, TIMESTAMPDIFF from a
// fixed epoch, UTC_TIMESTAMP) and never converts through the session's time
// zone, so results are UTC whatever time_zone the connection has (the executor
// sets '+00:00' anyway). UNIX_TIMESTAMP and FROM_UNIXTIME are avoided for that
// reason.

/** One argument, already compiled. */
export interface Arg {
  /** The argument as compiled SQL. */
  sql: string;
  /** Its value, when the argument is a number or string literal as written. */
  literal?: string | number | undefined;
  /** Its name, when the argument is a bare (unqualified) column reference. */
  column?: string | undefined;
  /** Set when the argument is `INTERVAL n UNIT`: the unit (upper case) and n when n is an integer literal. */
  interval?: { unit: string; count?: number | undefined } | undefined;
}

export interface Call {
  /** The name as the user wrote it, for messages. */
  name: string;
  args: readonly Arg[];
  /** `count(DISTINCT ...)`. */
  distinct: boolean;
  /** Refuses the call with a message about its arguments (query.ts adds where it is). */
  refuse(message: string): never;
}

export interface SqlFunction {
  /** Fewest and most arguments. */
  arity: readonly [number, number];
  /** Marks the aggregates, for readers (the server refuses them nested, or without GROUP BY beside plain columns in ONLY_FULL_GROUP_BY). */
  aggregate?: boolean;
  /** Whether `DISTINCT` may precede the arguments (the parser allows it only in count). */
  distinct?: boolean;
  translate(call: Call): string;
}

/** Units `INTERVAL n UNIT` may use, and TIMESTAMPDIFF's units (the same words in both engines). */
export const INTERVAL_UNITS: ReadonlySet<string> = new Set(["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]);

// A DATETIME literal, so that epoch arithmetic does not depend on the session's time zone.
const EPOCH = "CAST('1970-01-01 00:00:00' AS DATETIME)";
const SECONDS_SINCE_EPOCH = (t: string) => `TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', ${t})`;
const FROM_EPOCH_SECONDS = (n: string) => `(${EPOCH} + INTERVAL (${n}) SECOND)`;

const a0 = (c: Call): string => (c.args[0] as Arg).sql;
const a1 = (c: Call): string => (c.args[1] as Arg).sql;
const all = (c: Call): string => c.args.map((a) => a.sql).join(", ");
const plain =
  (fn: string) =>
  (c: Call): string =>
    `${fn}(${all(c)})`;

const startOfMinute = (t: string) => `CAST(DATE_FORMAT(${t}, '%Y-%m-%d %H:%i:00') AS DATETIME)`;
const startOfHour = (t: string) => `CAST(DATE_FORMAT(${t}, '%Y-%m-%d %H:00:00') AS DATETIME)`;
// ClickHouse's toStartOfWeek: Sunday first in modes 0, 2, 4, ... (the default 0), Monday first in odd modes; a Date.
const startOfWeek = (t: string, monday: boolean) =>
  monday ? `DATE_SUB(DATE(${t}), INTERVAL WEEKDAY(${t}) DAY)` : `DATE_SUB(DATE(${t}), INTERVAL (DAYOFWEEK(${t}) - 1) DAY)`;
// n-minute buckets that divide the hour: the same as ClickHouse's epoch-aligned ones.
const startOfMinutes = (n: number) => (c: Call) => `(${startOfHour(a0(c))} + INTERVAL (MINUTE(${a0(c)}) DIV ${n} * ${n}) MINUTE)`;

const SECONDS: Record<string, number> = { SECOND: 1, MINUTE: 60, HOUR: 3600, DAY: 86_400 };
const MONTHS: Record<string, number> = { MONTH: 1, QUARTER: 3, YEAR: 12 };

/**
 * toStartOfInterval(t, INTERVAL n UNIT): ClickHouse aligns buckets to the Unix
 * epoch (UTC), which is what counting whole units since 1970 gives. Weeks are
 * refused: ClickHouse aligns them to a Monday, and an answer that differs
 * from it silently is worse than a clear refusal.
 */
function startOfInterval(c: Call): string {
  const iv = (c.args[1] as Arg).interval;
  if (iv?.count === undefined || iv.count < 1 || iv.count > 1_000_000)
    return c.refuse(`${c.name} needs INTERVAL n UNIT with a whole number n from 1 to 1000000 as its second argument`);
  const t = a0(c);
  const s = SECONDS[iv.unit];
  if (s !== undefined) {
    const step = s * iv.count;
    return FROM_EPOCH_SECONDS(`${SECONDS_SINCE_EPOCH(t)} DIV ${step} * ${step}`);
  }
  const m = MONTHS[iv.unit];
  if (m !== undefined) {
    const step = m * iv.count;
    return `(CAST('1970-01-01' AS DATE) + INTERVAL (TIMESTAMPDIFF(MONTH, '1970-01-01', ${t}) DIV ${step} * ${step}) MONTH)`;
  }
  return c.refuse(`${c.name} supports SECOND, MINUTE, HOUR, DAY, MONTH, QUARTER and YEAR intervals (got ${iv.unit})`);
}

/** A unit given as a string literal ('day'), as ClickHouse's dateDiff takes it. */
function unitOf(c: Call, arg: Arg): string {
  const unit = typeof arg.literal === "string" ? arg.literal.toUpperCase() : undefined;
  if (unit === undefined || !INTERVAL_UNITS.has(unit))
    return c.refuse(`${c.name} takes a unit as a string: one of ${[...INTERVAL_UNITS].map((u) => `'${u.toLowerCase()}'`).join(", ")}`);
  return unit;
}

const addUnit = (unit: string, sign: "+" | "-") => (c: Call) => `(${a0(c)} ${sign} INTERVAL (${a1(c)}) ${unit})`;

// `CASE WHEN c THEN x END` is NULL when c fails, which the aggregates skip: the -If combinators.
const when = (cond: string, value: string) => `CASE WHEN ${cond} THEN ${value} END`;

/**
 * By lower-case name: ClickHouse's names are case-sensitive, but refusing
 * `COUNTIF` or `tostartofday` would only annoy.
 */
export const SQL_FUNCTIONS: ReadonlyMap<string, SqlFunction> = new Map<string, SqlFunction>(
  Object.entries({
    // Aggregates. ClickHouse's sum over no rows is 0 where SQL's is NULL: COALESCE keeps the SDK's numbers.
    count: {
      arity: [1, 16],
      aggregate: true,
      distinct: true,
      translate: (c) => {
        if (c.distinct) return `COUNT(DISTINCT ${all(c)})`;
        if (c.args.length > 1) return c.refuse(`${c.name} takes one argument (or DISTINCT and several)`);
        return `COUNT(${a0(c)})`;
      },
    },
    countif: { arity: [1, 1], aggregate: true, translate: (c) => `COUNT(${when(a0(c), "1")})` },
    sum: { arity: [1, 1], aggregate: true, translate: (c) => `COALESCE(SUM(${a0(c)}), 0)` },
    sumif: { arity: [2, 2], aggregate: true, translate: (c) => `COALESCE(SUM(${when(a1(c), a0(c))}), 0)` },
    avg: { arity: [1, 1], aggregate: true, translate: plain("AVG") },
    avgif: { arity: [2, 2], aggregate: true, translate: (c) => `AVG(${when(a1(c), a0(c))})` },
    min: { arity: [1, 1], aggregate: true, translate: plain("MIN") },
    minif: { arity: [2, 2], aggregate: true, translate: (c) => `MIN(${when(a1(c), a0(c))})` },
    max: { arity: [1, 1], aggregate: true, translate: plain("MAX") },
    maxif: { arity: [2, 2], aggregate: true, translate: (c) => `MAX(${when(a1(c), a0(c))})` },
    // uniq is approximate in ClickHouse; an exact count is a correct answer to it.
    uniq: { arity: [1, 16], aggregate: true, translate: (c) => `COUNT(DISTINCT ${all(c)})` },
    uniqexact: { arity: [1, 16], aggregate: true, translate: (c) => `COUNT(DISTINCT ${all(c)})` },
    uniqif: { arity: [2, 2], aggregate: true, translate: (c) => `COUNT(DISTINCT ${when(a1(c), a0(c))})` },
    uniqexactif: { arity: [2, 2], aggregate: true, translate: (c) => `COUNT(DISTINCT ${when(a1(c), a0(c))})` },

    // Conditionals and NULLs.
    if: { arity: [3, 3], translate: (c) => `CASE WHEN ${a0(c)} THEN ${a1(c)} ELSE ${(c.args[2] as Arg).sql} END` },
    multiif: {
      arity: [3, 63],
      translate: (c) => {
        if (c.args.length % 2 === 0) return c.refuse(`${c.name} takes condition, value pairs and a final else value (an odd number of arguments)`);
        const pairs: string[] = [];
        for (let i = 0; i + 1 < c.args.length; i += 2) pairs.push(`WHEN ${(c.args[i] as Arg).sql} THEN ${(c.args[i + 1] as Arg).sql}`);
        return `CASE ${pairs.join(" ")} ELSE ${(c.args[c.args.length - 1] as Arg).sql} END`;
      },
    },
    coalesce: { arity: [1, 63], translate: plain("COALESCE") },
    ifnull: { arity: [2, 2], translate: plain("COALESCE") },
    nullif: { arity: [2, 2], translate: plain("NULLIF") },
    greatest: { arity: [2, 63], translate: plain("GREATEST") },
    least: { arity: [2, 63], translate: plain("LEAST") },

    // Numbers.
    round: { arity: [1, 2], translate: plain("ROUND") },
    floor: { arity: [1, 1], translate: plain("FLOOR") },
    ceil: { arity: [1, 1], translate: plain("CEIL") },
    ceiling: { arity: [1, 1], translate: plain("CEIL") },
    abs: { arity: [1, 1], translate: plain("ABS") },
    intdiv: { arity: [2, 2], translate: (c) => `(${a0(c)} DIV ${a1(c)})` },
    toint32: { arity: [1, 1], translate: (c) => `CAST(${a0(c)} AS SIGNED)` },
    toint64: { arity: [1, 1], translate: (c) => `CAST(${a0(c)} AS SIGNED)` },
    touint32: { arity: [1, 1], translate: (c) => `CAST(${a0(c)} AS UNSIGNED)` },
    touint64: { arity: [1, 1], translate: (c) => `CAST(${a0(c)} AS UNSIGNED)` },
    tofloat64: { arity: [1, 1], translate: (c) => `CAST(${a0(c)} AS DOUBLE)` },

    // Text.
    lower: { arity: [1, 1], translate: plain("LOWER") },
    upper: { arity: [1, 1], translate: plain("UPPER") },
    lowerutf8: { arity: [1, 1], translate: plain("LOWER") },
    upperutf8: { arity: [1, 1], translate: plain("UPPER") },
    // tags is an Array(String) in ClickHouse, whose length is its element count; here it is JSON text.
    length: { arity: [1, 1], translate: (c) => ((c.args[0] as Arg).column?.toLowerCase() === "tags" ? `JSON_LENGTH(${a0(c)})` : `LENGTH(${a0(c)})`) },
    concat: { arity: [1, 63], translate: plain("CONCAT") },
    substring: { arity: [2, 3], translate: plain("SUBSTRING") },
    substr: { arity: [2, 3], translate: plain("SUBSTRING") },
    tostring: { arity: [1, 1], translate: (c) => `CAST(${a0(c)} AS CHAR)` },
    // has(tags, 'x'): tags is a JSON array of strings; the needle is made a JSON string, so any text matches only itself.
    has: { arity: [2, 2], translate: (c) => `JSON_CONTAINS(${a0(c)}, JSON_QUOTE(CAST(${a1(c)} AS CHAR)))` },

    // Time, in UTC (see the top of this file).
    now: { arity: [0, 0], translate: () => "UTC_TIMESTAMP()" },
    now64: {
      arity: [0, 1],
      translate: (c) => {
        const p = c.args[0]?.literal ?? 3;
        if (typeof p !== "number" || !Number.isInteger(p) || p < 0 || p > 6) return c.refuse(`${c.name} takes a precision from 0 to 6`);
        return `UTC_TIMESTAMP(${p})`;
      },
    },
    current_timestamp: { arity: [0, 0], translate: () => "UTC_TIMESTAMP()" },
    today: { arity: [0, 0], translate: () => "UTC_DATE()" },
    current_date: { arity: [0, 0], translate: () => "UTC_DATE()" },
    yesterday: { arity: [0, 0], translate: () => "(UTC_DATE() - INTERVAL 1 DAY)" },
    tostartofminute: { arity: [1, 1], translate: (c) => startOfMinute(a0(c)) },
    tostartoffiveminutes: { arity: [1, 1], translate: startOfMinutes(5) },
    tostartoffiveminute: { arity: [1, 1], translate: startOfMinutes(5) },
    tostartoftenminutes: { arity: [1, 1], translate: startOfMinutes(10) },
    tostartoffifteenminutes: { arity: [1, 1], translate: startOfMinutes(15) },
    tostartofhour: { arity: [1, 1], translate: (c) => startOfHour(a0(c)) },
    tostartofday: { arity: [1, 1], translate: (c) => `CAST(DATE(${a0(c)}) AS DATETIME)` },
    tostartofweek: {
      arity: [1, 2],
      translate: (c) => {
        const mode = c.args[1];
        if (mode !== undefined && (typeof mode.literal !== "number" || !Number.isInteger(mode.literal) || mode.literal < 0 || mode.literal > 9))
          return c.refuse(`${c.name} takes a week mode from 0 to 9 as its second argument`);
        return startOfWeek(a0(c), mode !== undefined && (mode.literal as number) % 2 === 1);
      },
    },
    tomonday: { arity: [1, 1], translate: (c) => startOfWeek(a0(c), true) },
    tostartofmonth: { arity: [1, 1], translate: (c) => `CAST(DATE_FORMAT(${a0(c)}, '%Y-%m-01') AS DATE)` },
    tostartofquarter: {
      arity: [1, 1],
      translate: (c) => `(CAST(DATE_FORMAT(${a0(c)}, '%Y-01-01') AS DATE) + INTERVAL ((QUARTER(${a0(c)}) - 1) * 3) MONTH)`,
    },
    tostartofyear: { arity: [1, 1], translate: (c) => `CAST(DATE_FORMAT(${a0(c)}, '%Y-01-01') AS DATE)` },
    tostartofinterval: { arity: [2, 2], translate: startOfInterval },
    todate: { arity: [1, 1], translate: (c) => `DATE(${a0(c)})` },
    date: { arity: [1, 1], translate: (c) => `DATE(${a0(c)})` },
    todatetime: {
      arity: [1, 2],
      translate: (c) => {
        const tz = c.args[1];
        if (tz !== undefined && !(typeof tz.literal === "string" && /^(Etc\/)?UTC$/i.test(tz.literal)))
          return c.refuse(`${c.name} accepts only 'UTC' as a time zone: stored times are UTC`);
        // A number is seconds since the epoch in ClickHouse; CAST would read its digits as a date.
        const first = c.args[0] as Arg;
        return typeof first.literal === "number" ? FROM_EPOCH_SECONDS(first.sql) : `CAST(${first.sql} AS DATETIME)`;
      },
    },
    fromunixtimestamp: { arity: [1, 1], translate: (c) => FROM_EPOCH_SECONDS(a0(c)) },
    from_unixtime: { arity: [1, 1], translate: (c) => FROM_EPOCH_SECONDS(a0(c)) },
    tounixtimestamp: { arity: [1, 1], translate: (c) => SECONDS_SINCE_EPOCH(a0(c)) },
    toyear: { arity: [1, 1], translate: plain("YEAR") },
    tomonth: { arity: [1, 1], translate: plain("MONTH") },
    todayofmonth: { arity: [1, 1], translate: plain("DAYOFMONTH") },
    // ClickHouse counts Monday as 1 and Sunday as 7.
    todayofweek: { arity: [1, 1], translate: (c) => `(WEEKDAY(${a0(c)}) + 1)` },
    tohour: { arity: [1, 1], translate: plain("HOUR") },
    tominute: { arity: [1, 1], translate: plain("MINUTE") },
    // ClickHouse's dateDiff('unit', a, b); MySQL's two-argument DATEDIFF(a, b) counts days from b to a.
    datediff: {
      arity: [2, 3],
      translate: (c) =>
        c.args.length === 2 ? `DATEDIFF(${a0(c)}, ${a1(c)})` : `TIMESTAMPDIFF(${unitOf(c, c.args[0] as Arg)}, ${a1(c)}, ${(c.args[2] as Arg).sql})`,
    },
    date_diff: { arity: [3, 3], translate: (c) => `TIMESTAMPDIFF(${unitOf(c, c.args[0] as Arg)}, ${a1(c)}, ${(c.args[2] as Arg).sql})` },
    date_add: { arity: [2, 2], translate: (c) => intervalCall(c, "DATE_ADD") },
    date_sub: { arity: [2, 2], translate: (c) => intervalCall(c, "DATE_SUB") },
    addseconds: { arity: [2, 2], translate: addUnit("SECOND", "+") },
    addminutes: { arity: [2, 2], translate: addUnit("MINUTE", "+") },
    addhours: { arity: [2, 2], translate: addUnit("HOUR", "+") },
    adddays: { arity: [2, 2], translate: addUnit("DAY", "+") },
    addweeks: { arity: [2, 2], translate: addUnit("WEEK", "+") },
    addmonths: { arity: [2, 2], translate: addUnit("MONTH", "+") },
    addyears: { arity: [2, 2], translate: addUnit("YEAR", "+") },
    subtractseconds: { arity: [2, 2], translate: addUnit("SECOND", "-") },
    subtractminutes: { arity: [2, 2], translate: addUnit("MINUTE", "-") },
    subtracthours: { arity: [2, 2], translate: addUnit("HOUR", "-") },
    subtractdays: { arity: [2, 2], translate: addUnit("DAY", "-") },
    subtractweeks: { arity: [2, 2], translate: addUnit("WEEK", "-") },
    subtractmonths: { arity: [2, 2], translate: addUnit("MONTH", "-") },
    subtractyears: { arity: [2, 2], translate: addUnit("YEAR", "-") },
  } satisfies Record<string, SqlFunction>),
);

/** MySQL's DATE_ADD(t, INTERVAL n UNIT) / DATE_SUB: the second argument must be an interval. */
function intervalCall(c: Call, fn: string): string {
  if ((c.args[1] as Arg).interval === undefined) return c.refuse(`${c.name} takes INTERVAL n UNIT as its second argument`);
  return `${fn}(${a0(c)}, ${a1(c)})`;
}
