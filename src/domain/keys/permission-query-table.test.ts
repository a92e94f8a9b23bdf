// The verifyKey permission query language as one table (docs/permissions.md, "The
// permission query of `keys.verifyKey`" and "Wildcards"):
// every row is a query, the grants a key holds, and what must come out. Grants
// containing `*` are anchored globs (`*` matches any run, dots included); a `*`
// in the query is a literal character.
import { describe, expect, it } from "vitest";
import { AppError } from "../../core/errors.js";
import { evaluateQuery, parseQuery, parseQueryCached } from "./permission-query.js";

const holds = (query: string, grants: readonly string[]): boolean => evaluateQuery(parseQuery(query), grants);

describe("permission queries: evaluation table", () => {
  it.each<[label: string, query: string, grants: string[], expected: boolean]>([
    // single permissions
    ["an exact grant", "documents.read", ["documents.read"], true],
    ["a different grant", "documents.read", ["documents.write"], false],
    ["no grants at all", "documents.read", [], false],
    ["grants are case-sensitive", "Documents.Read", ["documents.read"], false],
    ["every permission character", "A-z_0.9:x/y", ["A-z_0.9:x/y"], true],

    // precedence: AND binds tighter than OR, so `a OR b AND c` is `a OR (b AND c)`
    ["a OR b AND c, holding a", "a OR b AND c", ["a"], true],
    ["a OR b AND c, holding b", "a OR b AND c", ["b"], false],
    ["a OR b AND c, holding c", "a OR b AND c", ["c"], false],
    ["a OR b AND c, holding b and c", "a OR b AND c", ["b", "c"], true],
    ["a AND b OR c, holding c", "a AND b OR c", ["c"], true],
    ["a AND b OR c, holding a", "a AND b OR c", ["a"], false],
    ["a AND b OR c AND d, holding c and d", "a AND b OR c AND d", ["c", "d"], true],
    ["a AND b OR c AND d, holding a and d", "a AND b OR c AND d", ["a", "d"], false],
    ["chained AND, one missing", "a AND b AND c", ["a", "b"], false],
    ["chained AND, all held", "a AND b AND c", ["a", "b", "c"], true],
    ["chained OR, the last held", "a OR b OR c", ["c"], true],

    // parentheses override precedence
    ["(a OR b) AND c, holding a", "(a OR b) AND c", ["a"], false],
    ["(a OR b) AND c, holding a and c", "(a OR b) AND c", ["a", "c"], true],
    ["a AND (b OR c), holding a and c", "a AND (b OR c)", ["a", "c"], true],
    ["a AND (b OR c), holding b and c", "a AND (b OR c)", ["b", "c"], false],
    ["redundant parentheses", "((a))", ["a"], true],
    ["nested groups", "(a OR (b AND (c OR d))) AND e", ["b", "d", "e"], true],
    ["nested groups, inner AND fails", "(a OR (b AND (c OR d))) AND e", ["b", "e"], false],
    ["parentheses without spaces", "(a)AND(b)", ["a", "b"], true],

    // AND / OR in any case
    ["lower-case and", "a and b", ["a", "b"], true],
    ["mixed-case And", "a And b", ["a"], false],
    ["mixed-case aNd", "a aNd b", ["a", "b"], true],
    ["lower-case or", "a or b", ["b"], true],
    ["mixed-case Or", "a Or b", ["b"], true],
    ["mixed-case oR", "a oR b", [], false],
    ["lower-case precedence", "a or b and c", ["b"], false],

    // words that contain "and" / "or" are permissions, not operators
    ["android.read", "android.read", ["android.read"], true],
    ["order.create", "order.create", ["order.create"], true],
    ["android.read AND order.create", "android.read AND order.create", ["android.read", "order.create"], true],
    ["android.read AND order.create, one missing", "android.read AND order.create", ["android.read"], false],
    ["oracle OR andromeda", "oracle OR andromeda", ["andromeda"], true],
    ["upper-case ANDROID", "ANDROID", ["ANDROID"], true],
    ["upper-case ORDERS or brand", "ORDERS or brand", ["brand"], true],
    ["and.read (the word with a dot)", "and.read", ["and.read"], true],
    ["color.or (ends in or)", "color.or AND sandor", ["color.or", "sandor"], true],

    // wildcard grants: `*` in a grant matches any run of characters, dots included
    ["documents.* covers documents.read", "documents.read", ["documents.*"], true],
    ["documents.* covers documents.write", "documents.write", ["documents.*"], true],
    ["documents.* covers documents.a.b", "documents.a.b", ["documents.*"], true],
    ["documents.* does not cover documents", "documents", ["documents.*"], false],
    ["documents.* does not cover documentsX.read", "documentsX.read", ["documents.*"], false],
    ["documents.* does not cover billing.read", "billing.read", ["documents.*"], false],
    ["documents.* is anchored at the start", "my.documents.read", ["documents.*"], false],
    ["a star in the middle of a grant", "api.v1.read", ["api.*.read"], true],
    ["a star in the middle, other action", "api.v1.write", ["api.*.read"], false],
    ["a star in the middle spans dots", "api.v1.beta.read", ["api.*.read"], true],
    ["* covers everything", "anything.at.all", ["*"], true],
    ["* covers a whole expression", "x.y AND (z OR w.v)", ["*"], true],
    ["a wildcard grant inside AND", "documents.read AND billing.read", ["documents.*", "billing.read"], true],
    ["a wildcard grant inside AND, other side missing", "documents.read AND billing.write", ["documents.*", "billing.read"], false],
    ["a wildcard grant inside OR", "billing.write OR documents.share", ["documents.*"], true],

    // a `*` in the query is literal
    ["query documents.* against grant documents.*", "documents.*", ["documents.*"], true],
    ["query documents.* against grant documents.read", "documents.*", ["documents.read"], false],
    ["query documents.* against grant *", "documents.*", ["*"], true],
    ["query * against grant *", "*", ["*"], true],
    ["query * against grant a", "*", ["a"], false],
    ["query billing.* against grant documents.*", "billing.*", ["documents.*"], false],

    // whitespace
    ["tabs and line breaks between tokens", " \t(a\r\nAND\tb)\n", ["a", "b"], true],
  ])("%s: %s", (_label, query, grants, expected) => {
    expect(holds(query, grants)).toBe(expected);
    // The cached parse used by verifyKey gives the same answer.
    expect(evaluateQuery(parseQueryCached(query), grants)).toBe(expected);
  });
});

describe("permission queries: syntax error table", () => {
  it.each<[label: string, query: string, detail: RegExp]>([
    // empty
    ["an empty query", "", /empty/i],
    ["whitespace only", " \t\r\n ", /empty/i],

    // a character outside the permission set
    ["an ampersand", "a & b", /Invalid character '&' found in query at position 2/],
    ["a bad character first", "#a", /Invalid character '#' found in query at position 0/],
    ["a double quote", '"documents.read"', /Invalid character '"'/],
    ["a comma", "a,b", /Invalid character ',' found in query at position 1/],
    ["a non-ASCII letter", "café.read", /Invalid character 'é' found in query at position 3/],
    ["a pipe as OR", "a || b", /Invalid character '\|'/],

    // empty parentheses
    ["empty parentheses", "()", /Empty parentheses at position 0/],
    ["empty parentheses after AND", "a AND ()", /Empty parentheses at position 6/],
    ["empty parentheses with spaces inside", "( )", /Empty parentheses/],

    // a missing `)`
    ["a missing )", "(a OR b", /Missing '\)' for the '\(' at position 0/],
    ["a missing ) when nested", "((a)", /Missing '\)' for the '\(' at position 0/],
    ["a missing ) after AND", "a AND (b", /Missing '\)' for the '\(' at position 6/],
    ["an opening parenthesis alone", "(", /ends unexpectedly/],

    // an operator at the start, at the end, or twice
    ["AND at the start", "AND a", /Unexpected token 'AND' at position 0/],
    ["OR at the start", "OR a", /Unexpected token 'OR' at position 0/],
    ["lower-case and at the start", "and a", /Unexpected token 'and' at position 0/],
    ["AND at the end", "a AND", /ends unexpectedly/],
    ["or at the end", "a or", /ends unexpectedly/],
    ["AND then OR", "a AND OR b", /Unexpected token 'OR' at position 6/],
    ["OR then OR", "a OR OR b", /Unexpected token 'OR' at position 5/],
    ["AND then AND", "a AND AND b", /Unexpected token 'AND' at position 6/],
    ["an operator alone", "AND", /Unexpected token 'AND' at position 0/],
    ["an operator right after (", "(AND a)", /Unexpected token 'AND' at position 1/],
    ["an operator right before )", "(a AND)", /Unexpected token '\)' at position 6/],

    // leftover tokens after a complete expression
    ["two permissions without an operator", "a b", /Unexpected token 'b' at position 2/],
    ["a stray closing parenthesis", "a)", /Unexpected token '\)' at position 1/],
    ["a group followed by a permission", "(a) b", /Unexpected token 'b' at position 4/],
    ["a permission followed by a group", "a (b)", /Unexpected token '\(' at position 2/],
    ["one closing parenthesis too many", "(a))", /Unexpected token '\)' at position 3/],
    ["a complete expression, then more", "a AND b c OR d", /Unexpected token 'c' at position 8/],
  ])("%s: %j -> permissions_query_syntax_error", (_label, query, detail) => {
    let caught: unknown;
    try {
      parseQuery(query);
    } catch (err) {
      caught = err;
    }
    expect(caught, `expected ${JSON.stringify(query)} to be rejected`).toBeInstanceOf(AppError);
    const err = caught as AppError;
    expect(err.code).toBe("err:user:bad_request:permissions_query_syntax_error");
    expect(err.detail).toMatch(detail);
    // Syntax errors are not cached: the cached parser rejects the same way every time.
    expect(() => parseQueryCached(query)).toThrow(AppError);
    expect(() => parseQueryCached(query)).toThrow(AppError);
  });
});
