import { describe, expect, it } from "vitest";
import { bestOverride, wildcardMatches } from "./override-match.js";

describe("wildcardMatches", () => {
  it.each([
    ["premium_*", "premium_42", true],
    ["premium_*", "premium_", true], // `*` matches an empty run
    ["premium_*", "premium", false],
    ["*", "", true],
    ["*", "anything at all", true],
    ["a*b*c", "aXXbYYc", true],
    ["a*b*c", "abc", true],
    ["a*b*c", "acb", false],
    ["*_admin", "team_admin", true],
    ["*_admin", "team_admin_x", false],
    ["exact", "exact", true],
    ["exact", "exact2", false],
    ["**", "x", true],
    ["a*", "ba", false], // anchored at both ends
  ])("%s ~ %s -> %s", (pattern, text, want) => {
    expect(wildcardMatches(pattern, text)).toBe(want);
  });

  it("treats regular-expression metacharacters literally", () => {
    expect(wildcardMatches("a.b*", "a.bc")).toBe(true);
    expect(wildcardMatches("a.b*", "aXbc")).toBe(false);
    expect(wildcardMatches("(x)+*", "(x)+y")).toBe(true);
    expect(wildcardMatches("[ab]*", "a")).toBe(false);
    expect(wildcardMatches("^$*", "^$")).toBe(true);
  });

  it("compares whole characters, not UTF-16 halves", () => {
    expect(wildcardMatches("😀*", "😀x")).toBe(true);
    expect(wildcardMatches("x*y", "x😀y")).toBe(true);
  });

  it("stays fast on a pattern full of stars that cannot match", () => {
    const pattern = `${"a*".repeat(250)}b`;
    const text = "a".repeat(512);
    const start = performance.now();
    expect(wildcardMatches(pattern, text)).toBe(false);
    expect(performance.now() - start).toBeLessThan(500);
  });
});

describe("bestOverride", () => {
  const o = (id: string, identifier: string, createdAt = 0) => ({ id, identifier, createdAt });

  it("prefers the exact identifier over any pattern", () => {
    const list = [o("rlor_1", "user_*"), o("rlor_2", "user_42"), o("rlor_3", "*")];
    expect(bestOverride("user_42", list)?.id).toBe("rlor_2");
  });

  it("matches a literal pattern string exactly", () => {
    const list = [o("rlor_1", "user_*"), o("rlor_2", "*")];
    expect(bestOverride("user_*", list)?.id).toBe("rlor_1");
  });

  it("prefers the pattern with the most literal characters", () => {
    const list = [o("rlor_1", "*"), o("rlor_2", "user_*"), o("rlor_3", "user_4*")];
    expect(bestOverride("user_42", list)?.id).toBe("rlor_3");
  });

  it("then the fewest stars", () => {
    const list = [o("rlor_1", "u*er_*"), o("rlor_2", "user*_")];
    // Both have 5 literal characters; "user*_" does not match, "u*er_*" does.
    expect(bestOverride("user_1", list)?.id).toBe("rlor_1");
    const tie = [o("rlor_1", "us*er*"), o("rlor_2", "user*")];
    // 4 literal characters each: one star beats two.
    expect(bestOverride("user_1", tie)?.id).toBe("rlor_2");
  });

  it("then the oldest, then the smallest id", () => {
    // "a*" and "*b" both match "ab" with one literal character and one star.
    expect(bestOverride("ab", [o("rlor_b", "a*", 2), o("rlor_c", "*b", 1)])?.id).toBe("rlor_c");
    expect(bestOverride("aa", [o("rlor_z", "a*", 1), o("rlor_y", "*a", 1)])?.id).toBe("rlor_y");
  });

  it("returns undefined when nothing matches", () => {
    expect(bestOverride("bob", [o("rlor_1", "alice"), o("rlor_2", "al*")])).toBeUndefined();
    expect(bestOverride("bob", [])).toBeUndefined();
  });

  it("ignores rows without a star that are not the identifier", () => {
    expect(bestOverride("user_1", [o("rlor_1", "user_10")])).toBeUndefined();
  });
});
