import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hashKey } from "../domain/keys/generate.js";
import { BadFileError, csvRow, headerProblem, type Item, parseJsonLine, readItems, safeStart, showableColumn } from "./import-records.js";

const KEY = "prod_3xYzAbCdEfGhJkLmNoPqRsTu";
const HASH = hashKey("legacy_key_1");

function failure(item: Item) {
  expect(item.ok, JSON.stringify(item)).toBe(false);
  if (item.ok) throw new Error("unreachable");
  return item.failure;
}

describe("JSONL records", () => {
  it("hashes a plaintext key locally and sends only the hash, with the other fields as given", () => {
    const item = parseJsonLine(
      3,
      JSON.stringify({
        key: KEY,
        name: "n",
        externalId: "user_1",
        meta: { plan: "pro" },
        roles: ["admin"],
        permissions: ["a.b"],
        expires: 4_000_000_000_000,
        enabled: false,
        credits: { remaining: 5, refill: { interval: "daily", amount: 5 } },
        ratelimits: [{ name: "req", limit: 10, duration: 1000 }],
      }),
    );
    expect(item).toEqual({
      ok: true,
      line: 3,
      start: "prod_3x…",
      key: {
        hash: hashKey(KEY),
        name: "n",
        externalId: "user_1",
        meta: { plan: "pro" },
        roles: ["admin"],
        permissions: ["a.b"],
        expires: 4_000_000_000_000,
        enabled: false,
        credits: { remaining: 5, refill: { interval: "daily", amount: 5 } },
        ratelimits: [{ name: "req", limit: 10, duration: 1000 }],
      },
    });
    expect(JSON.stringify(item.ok && item.key)).not.toContain(KEY);
  });

  it("sends a hash as it is", () => {
    expect(parseJsonLine(1, JSON.stringify({ hash: HASH }))).toEqual({ ok: true, line: 1, key: { hash: HASH } });
  });

  it("reports bad JSON by line without quoting the line (it may hold a key)", () => {
    const f = failure(parseJsonLine(7, `{"key":"${KEY}",`));
    expect(f).toMatchObject({ line: 7, reason: "invalid_json" });
    expect(JSON.stringify(f)).not.toContain("3xYzAbCd");
  });

  it.each<[string, unknown, RegExp]>([
    ["both key and hash", { key: KEY, hash: HASH }, /both key and hash/],
    ["neither key nor hash", { name: "x" }, /neither key nor hash/],
    ["not an object", [1, 2], /not a JSON object/],
    ["an unknown field", { hash: HASH, externalID: "u" }, /unknown field 'externalID'/],
    ["a name that is a number", { hash: HASH, name: 5 }, /name must be a string/],
    ["expires as a string", { hash: HASH, expires: "2030-01-01" }, /expires must be an integer/],
    ["a fractional expires", { hash: HASH, expires: 1.5 }, /expires must be an integer/],
    ["roles not an array of strings", { hash: HASH, roles: "admin" }, /roles must be an array of strings/],
    ["meta that is an array", { hash: HASH, meta: [1] }, /meta must be a JSON object/],
    ["enabled as a string", { hash: HASH, enabled: "yes" }, /enabled must be true or false/],
    ["a rate limit without a duration", { hash: HASH, ratelimits: [{ name: "req", limit: 1 }] }, /ratelimits\[0\]\.duration must be an integer/],
    ["an unknown credits field", { hash: HASH, credits: { remaining: 1, left: 2 } }, /unknown field 'credits\.left'/],
    ["a name over 255 characters", { hash: HASH, name: "n".repeat(256) }, /name must be at most 255 characters/],
    ["expires beyond 2100", { hash: HASH, expires: 4_102_444_800_001 }, /expires must be at most 4102444800000/],
    ["an externalId with a space", { hash: HASH, externalId: "a b" }, /externalId must match/],
    [
      "meta with 101 properties",
      { hash: HASH, meta: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) },
      /meta must have at most 100 properties/,
    ],
    ["101 roles", { hash: HASH, roles: Array.from({ length: 101 }, (_, i) => `r${i}`) }, /roles must have at most 100 items/],
    ["an empty permission", { hash: HASH, permissions: [""] }, /permissions\[0\] must be at least 1 character/],
    ["a refill without remaining", { hash: HASH, credits: { refill: { interval: "daily", amount: 1 } } }, /credits\.remaining` must be provided/],
    ["a weekly refill", { hash: HASH, credits: { remaining: 1, refill: { interval: "weekly", amount: 1 } } }, /interval must be "daily" or "monthly"/],
    ["a one-second-short rate limit", { hash: HASH, ratelimits: [{ name: "req", limit: 1, duration: 999 }] }, /duration must be at least 1000/],
    [
      "two rate limits of one name",
      {
        hash: HASH,
        ratelimits: [
          { name: "req", limit: 1, duration: 1000 },
          { name: "req", limit: 2, duration: 1000 },
        ],
      },
      /already defined/,
    ],
    ["a key over 512 characters", { key: "k".repeat(513) }, /key must be 1 to 512 characters/],
    ["an empty key", { key: "" }, /key must be 1 to 512 characters/],
    ["a hash over 64 characters", { hash: "h".repeat(65) }, /hash must be at most 64 characters/],
    ["a hash of 2 characters", { hash: "hh" }, /hash must be at least 3 characters/],
    ["a hash ending in a space", { hash: "abcd " }, /hash starts or ends with whitespace/],
    ["a hash starting with a space", { hash: ` ${HASH.slice(1)}` }, /hash starts or ends with whitespace/],
    ["a key ending in a newline", { key: `${KEY}\n` }, /key starts or ends with whitespace/],
    ["a key starting with a tab", { key: `\t${KEY}` }, /key starts or ends with whitespace/],
    ["a key ending in a no-break space", { key: `${KEY}\u00a0` }, /key starts or ends with whitespace/],
  ])("refuses %s as invalid_record naming the field", (_label, record, detail) => {
    const f = failure(parseJsonLine(2, JSON.stringify(record)));
    expect(f.reason).toBe("invalid_record");
    expect(f.line).toBe(2);
    expect(f.detail).toMatch(detail);
  });

  it("names a refused plaintext key by a safe prefix only, and a refused hash by the hash", () => {
    const byKey = failure(parseJsonLine(1, JSON.stringify({ key: KEY, name: 7 })));
    expect(byKey.start).toBe(safeStart(KEY));
    expect(byKey.hash).toBeUndefined();
    expect(JSON.stringify(byKey)).not.toContain(KEY.slice(0, 9));
    expect(failure(parseJsonLine(1, JSON.stringify({ hash: HASH, name: 7 }))).hash).toBe(HASH);
  });
});

describe("safeStart", () => {
  it.each(["", "abc", "sk_12345678", KEY, "x".repeat(200)])("shows at most 8 characters and a quarter of %s", (key) => {
    const shown = safeStart(key).replace(/…$/, "");
    expect(key.startsWith(shown)).toBe(true);
    expect(shown.length).toBeLessThanOrEqual(Math.min(8, key.length / 4));
  });
});

describe("CSV rows", () => {
  it("turns columns into the record JSONL would have", () => {
    const item = csvRow(4, {
      hash: HASH,
      name: "n",
      meta: '{"plan":"pro"}',
      roles: "admin; reader",
      permissions: "a.b;c.d",
      expires: "4000000000000",
      enabled: "FALSE",
      "credits.remaining": "10",
      "credits.refill.interval": "monthly",
      "credits.refill.amount": "10",
      "credits.refill.refillDay": "15",
      ratelimits: '[{"name":"req","limit":5,"duration":60000}]',
      externalId: "",
      key: "",
    });
    expect(item).toEqual({
      ok: true,
      line: 4,
      key: {
        hash: HASH,
        name: "n",
        meta: { plan: "pro" },
        roles: ["admin", "reader"],
        permissions: ["a.b", "c.d"],
        expires: 4_000_000_000_000,
        enabled: false,
        credits: { remaining: 10, refill: { interval: "monthly", amount: 10, refillDay: 15 } },
        ratelimits: [{ name: "req", limit: 5, duration: 60000 }],
      },
    });
  });

  it("refuses a key or hash cell with surrounding spaces (`a, b` in CSV) instead of trimming it", () => {
    expect(failure(csvRow(2, { key: ` ${KEY}` }))).toMatchObject({
      line: 2,
      reason: "invalid_record",
      detail: expect.stringMatching(/key starts or ends with whitespace/),
    });
    expect(failure(csvRow(3, { hash: `${HASH} ` }))).toMatchObject({
      line: 3,
      reason: "invalid_record",
      detail: expect.stringMatching(/hash starts or ends with whitespace/),
    });
  });

  it.each<[string, Record<string, string>, RegExp]>([
    ["meta that is not JSON", { hash: HASH, meta: "{plan: pro}" }, /meta is not valid JSON/],
    ["a date for expires", { hash: HASH, expires: "2030-01-01" }, /expires must be a whole number/],
    ["enabled as yes", { hash: HASH, enabled: "yes" }, /enabled must be true or false/],
    [
      "a refill without an amount",
      { hash: HASH, "credits.remaining": "1", "credits.refill.interval": "daily" },
      /credits\.refill\.amount must be at least 1 \(got 0\)/,
    ],
    ["ratelimits that are not a list", { hash: HASH, ratelimits: '{"name":"x"}' }, /ratelimits must be an array/],
  ])("refuses %s", (_label, row, detail) => {
    const f = failure(csvRow(9, row));
    expect(f).toMatchObject({ line: 9, reason: "invalid_record", hash: HASH });
    expect(f.detail).toMatch(detail);
  });
});

describe("reading a file", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "keyhold-import-unit-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function all(file: string, format: "jsonl" | "csv", after = 0): Promise<Item[]> {
    const items: Item[] = [];
    for await (const item of readItems(file, format, after)) items.push(item);
    return items;
  }
  const summary = (items: Item[]) => items.map((i) => (i.ok ? [i.line, "ok"] : [i.failure.line, i.failure.reason]));

  it("JSONL: counts physical lines, skips blank ones and a BOM, starts after the given line", async () => {
    const file = path.join(dir, "a.jsonl");
    writeFileSync(file, `\uFEFF{"hash":"${HASH}"}\r\n\n   \n{oops\n{"key":"k_1234567890"}\n{"hash":"h"}`);
    expect(summary(await all(file, "jsonl"))).toEqual([
      [1, "ok"],
      [4, "invalid_json"],
      [5, "ok"],
      [6, "invalid_record"],
    ]);
    expect(summary(await all(file, "jsonl", 4))).toEqual([
      [5, "ok"],
      [6, "invalid_record"],
    ]);
  });

  it("CSV: rows the parser cannot read are failures at their line, in order with the others", async () => {
    const file = path.join(dir, "a.csv");
    writeFileSync(file, `hash,name\n${HASH},a\nonly\n\n${HASH.replace("=", "A")},"two\nlines"\na,b,c\n"x"y,b\n`);
    expect(summary(await all(file, "csv"))).toEqual([
      [2, "ok"],
      [3, "invalid_csv"],
      [6, "ok"],
      [7, "invalid_csv"],
      [8, "ok"],
    ]);
    expect(summary(await all(file, "csv", 6))).toEqual([
      [7, "invalid_csv"],
      [8, "ok"],
    ]);
  });

  it("CSV: a file mixing \\n and \\r\\n line ends leaves no \\r in the last column", async () => {
    const file = path.join(dir, "mixed.csv");
    writeFileSync(file, `hash,enabled\n${HASH},true\r\n${HASH.replace("=", "B")},false\r\n`);
    expect(await all(file, "csv")).toEqual([
      { ok: true, line: 2, key: { hash: HASH, enabled: true } },
      { ok: true, line: 3, key: { hash: HASH.replace("=", "B"), enabled: false } },
    ]);
  });

  it("CSV: an unknown column stops the import before anything is read", async () => {
    const file = path.join(dir, "b.csv");
    writeFileSync(file, `hash,externalID\n${HASH},u\n`);
    await expect(all(file, "csv")).rejects.toThrow(BadFileError);
    await expect(all(file, "csv")).rejects.toThrow(/1 unknown CSV column: 'externalID' \(known: key, hash,/);
  });

  it("CSV without a header row: asks about the header and never quotes the first row's key", async () => {
    const file = path.join(dir, "headerless.csv");
    writeFileSync(file, `${KEY},acme prod,admin\nprod_9zYxWvUtSrQpOnMlKjIhGf,other,admin\n`);
    const err = await all(file, "csv").then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err).toBeInstanceOf(BadFileError);
    expect(err?.message).toMatch(
      /^no `key` or `hash` column: does the file have a header row\? \(3 unknown CSV columns: 'admin', 2 not shown \(they might be keys\)\)$/,
    );
    expect(err?.message).not.toContain(KEY.slice(0, 9));
  });
});

describe("CSV header problems", () => {
  it("names only cells that read as column names; counts the others", () => {
    expect(headerProblem(["key", "name"])).toBeUndefined();
    expect(headerProblem(["hash", "credits.refill.refillDay"])).toBeUndefined();
    expect(headerProblem(["name", "meta"])).toBe("no `key` or `hash` column: does the file have a header row?");
    expect(headerProblem(["key", "expires_at", "sk_live_8f3kQ9xYz", KEY, HASH])).toBe(
      "4 unknown CSV columns: 'expires_at', 3 not shown (they might be keys) (known: key, hash, name, externalId, meta, roles, permissions, expires, enabled, credits.remaining, credits.refill.interval, credits.refill.amount, credits.refill.refillDay, ratelimits)",
    );
  });

  it.each(["externalID", "expires_at", "credits.refill.day", "Name", "user_email"])("shows %s", (cell) => {
    expect(showableColumn(cell)).toBe(true);
  });

  it.each([
    KEY, // digits
    "sk_live_abcdefghijklmnopq", // a run longer than a word
    "BRTRKFsL_FwqftsmMDHHbJAMEXXHCgG", // many capitals
    "x".repeat(41),
    " key", // a space: not a column name as written
    HASH, // base64
    "a3f9c2", // hex
    "",
  ])("does not show %j", (cell) => {
    expect(showableColumn(cell)).toBe(false);
  });
});
