// Wildcard grants (docs/permissions.md, "Wildcards"): a granted string containing
// `*` is an anchored glob where `*` matches any run of characters, dots included;
// everything else is literal. The same rule authorises root keys.
import { describe, expect, it } from "vitest";
import { anyGrantCovers, grantCovers } from "./wildcard.js";

describe("grantCovers", () => {
  it.each<[string, string, boolean]>([
    // exact matches
    ["documents.read", "documents.read", true],
    ["documents.read", "documents.write", false],
    ["documents.read", "documents.read.all", false],
    ["documents.read", "documents", false],
    // a trailing wildcard covers every sub-permission
    ["documents.*", "documents.read", true],
    ["documents.*", "documents.write", true],
    ["documents.*", "documents.a.b.c", true],
    ["documents.*", "documents", false],
    ["documents.*", "documentsX.read", false],
    ["documents.*", "other.documents.read", false],
    ["documents.*", "billing.read", false],
    // * alone covers everything
    ["*", "documents.read", true],
    ["*", "apis.api_1.create_key", true],
    ["*", "x", true],
    // a wildcard in the middle (root-key style)
    ["apis.*.create_key", "apis.api_1.create_key", true],
    ["apis.*.create_key", "apis.*.create_key", true],
    ["apis.*.create_key", "apis.api_1.read_key", false],
    ["apis.*.create_key", "apis.api_1.create_key_extra", false],
    ["apis.*.create_key", "xapis.api_1.create_key", false],
    ["api.*.read", "api.v1.read", true],
    // several wildcards
    ["*.*.read", "a.b.read", true],
    ["a*b", "ab", true],
    ["a*b", "aXYZb", true],
    ["a*b", "aXYZbc", false],
    // everything but * is literal, regex metacharacters included
    ["a.b", "aXb", false],
    ["a+b.*", "aab.x", false],
    ["a+b.*", "a+b.x", true],
    ["(x|y).*", "x.read", false],
    ["(x|y).*", "(x|y).read", true],
    ["docs?.*", "doc.read", false],
    ["[ab].*", "a.read", false],
    ["$a^.*", "$a^.b", true],
    ["a\\.*", "a\\.x", true],
    // a * in the wanted string is literal: only a grant that covers that literal string satisfies it
    ["documents.read", "documents.*", false],
    ["documents.*", "documents.*", true],
  ])("grant %j covers %j: %s", (grant, wanted, expected) => {
    expect(grantCovers(grant, wanted)).toBe(expected);
  });

  it("matches across line breaks in a wanted string (dots included, nothing special)", () => {
    expect(grantCovers("a.*", "a.x\ny")).toBe(true);
  });

  it("stays correct when the same grant is used many times (compiled patterns are cached)", () => {
    for (let i = 0; i < 20_000; i++) {
      expect(grantCovers(`p${i % 50}.*`, `p${i % 50}.read`)).toBe(true);
      expect(grantCovers(`p${i % 50}.*`, `q${i % 50}.read`)).toBe(false);
    }
  });
});

describe("anyGrantCovers", () => {
  it("is true when any grant covers the wanted permission", () => {
    expect(anyGrantCovers(["billing.read", "documents.*"], "documents.write")).toBe(true);
    expect(anyGrantCovers(["billing.read", "documents.*"], "billing.read")).toBe(true);
    expect(anyGrantCovers(["billing.read", "documents.*"], "billing.write")).toBe(false);
  });

  it("is false for no grants", () => {
    expect(anyGrantCovers([], "anything")).toBe(false);
  });
});

describe("grantCovers on hostile patterns", () => {
  // A regular-expression matcher backtracks exponentially here and stalls the
  // whole process; the scan must answer at once (a regression hangs this test).
  it("a*a*…*c against a long run of a's is simply false", () => {
    expect(grantCovers(`${"a*".repeat(40)}c`, "a".repeat(5000))).toBe(false);
    expect(grantCovers(`${"a*".repeat(40)}a`, "a".repeat(5000))).toBe(true);
  });
});
