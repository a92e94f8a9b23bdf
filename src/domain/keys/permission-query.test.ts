// The verifyKey permission query language (docs/permissions.md, "The permission query of `keys.verifyKey`").
import { describe, expect, it } from "vitest";
import { AppError } from "../../core/errors.js";
import { evaluateQuery, parseQuery } from "./permission-query.js";

const holds = (query: string, granted: string[]): boolean => evaluateQuery(parseQuery(query), granted);

function syntaxError(query: string): AppError {
  try {
    parseQuery(query);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error(`expected a syntax error for ${JSON.stringify(query)}`);
}

describe("parseQuery", () => {
  it("parses a single permission", () => {
    expect(parseQuery("documents.read")).toEqual({ kind: "perm", name: "documents.read" });
  });

  it("AND binds tighter than OR", () => {
    expect(parseQuery("a OR b AND c")).toEqual({
      kind: "or",
      children: [
        { kind: "perm", name: "a" },
        {
          kind: "and",
          children: [
            { kind: "perm", name: "b" },
            { kind: "perm", name: "c" },
          ],
        },
      ],
    });
  });

  it("parentheses group", () => {
    expect(parseQuery("(a OR b) AND c")).toEqual({
      kind: "and",
      children: [
        {
          kind: "or",
          children: [
            { kind: "perm", name: "a" },
            { kind: "perm", name: "b" },
          ],
        },
        { kind: "perm", name: "c" },
      ],
    });
  });

  it("AND and OR are case-insensitive whole words", () => {
    expect(parseQuery("a and b")).toEqual(parseQuery("a AND b"));
    expect(parseQuery("a Or b")).toEqual(parseQuery("a OR b"));
    expect(parseQuery("android.read")).toEqual({ kind: "perm", name: "android.read" });
    expect(parseQuery("oracle.read or andy")).toEqual({
      kind: "or",
      children: [
        { kind: "perm", name: "oracle.read" },
        { kind: "perm", name: "andy" },
      ],
    });
  });

  it("permissions may use letters, digits, . _ - * : and /", () => {
    expect(parseQuery("A-z_0.9:*/x")).toEqual({ kind: "perm", name: "A-z_0.9:*/x" });
  });

  it("skips spaces, tabs and line breaks", () => {
    expect(parseQuery(" \t(a\r\nAND\tb) ")).toEqual(parseQuery("a AND b"));
  });

  it("chains of the same operator are flat", () => {
    expect(parseQuery("a AND b AND c")).toEqual({ kind: "and", children: ["a", "b", "c"].map((name) => ({ kind: "perm", name })) });
  });

  it.each([
    ["an empty query", ""],
    ["whitespace only", "  \t\n"],
    ["an invalid character", "documents.read & billing"],
    ["a quote", '"documents.read"'],
    ["empty parentheses", "()"],
    ["a missing closing parenthesis", "(a OR b"],
    ["a stray closing parenthesis", "a)"],
    ["an opening parenthesis alone", "("],
    ["an operator at the start", "AND a"],
    ["an operator at the end", "a OR"],
    ["two operators in a row", "a AND OR b"],
    ["an operator alone", "AND"],
    ["two permissions without an operator", "a b"],
    ["a parenthesis directly after a permission", "a (b)"],
  ])("rejects %s with permissions_query_syntax_error", (_label, query) => {
    const err = syntaxError(query);
    expect(err.code).toBe("err:user:bad_request:permissions_query_syntax_error");
    expect(err.detail ?? "").not.toBe("");
  });

  it("names the bad character and its position", () => {
    const err = syntaxError("ab & c");
    expect(err.detail).toContain("'&'");
    expect(err.detail).toContain("3");
  });
});

describe("evaluateQuery", () => {
  const granted = ["documents.*", "billing.read", "admin"];

  it.each<[string, boolean]>([
    ["billing.read", true],
    ["billing.write", false],
    ["documents.read", true],
    ["documents.a.b", true],
    ["documents", false],
    ["admin", true],
    ["billing.read AND admin", true],
    ["billing.read AND billing.write", false],
    ["billing.write OR admin", true],
    ["billing.write OR other", false],
    ["billing.write AND other OR admin", true],
    ["billing.write AND (other OR admin)", false],
    ["(billing.write OR documents.x) AND (admin OR nope)", true],
    // a * in the query is literal
    ["documents.*", true],
    ["billing.*", false],
  ])("%s -> %s", (query, expected) => {
    expect(holds(query, granted)).toBe(expected);
  });

  it("nothing holds without grants", () => {
    expect(holds("a OR b", [])).toBe(false);
  });

  it("the grant * satisfies any query", () => {
    expect(holds("x.y AND (z OR w.v)", ["*"])).toBe(true);
  });
});
