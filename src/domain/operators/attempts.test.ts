import { describe, expect, it } from "vitest";
import { SignInAttempts } from "./attempts.js";

describe("SignInAttempts", () => {
  const limits = { perEmail: 3, perIp: 5, windowMs: 60_000 };

  it("refuses the attempt after the limit per email, until the oldest leaves the window", () => {
    const a = new SignInAttempts(limits);
    for (let i = 0; i < 3; i++) expect(a.take("e@x.test", `10.0.0.${i}`, 1_000 + i * 1_000)).toBe(0);
    // The oldest attempt (t=1000) leaves the window at 61000.
    expect(a.take("e@x.test", "10.0.0.9", 31_000)).toBe(30);
    expect(a.take("e@x.test", "10.0.0.9", 60_999)).toBe(1);
    expect(a.take("e@x.test", "10.0.0.9", 61_000)).toBe(0);
    // Another email is not affected.
    expect(a.take("f@x.test", "10.0.0.9", 61_000)).toBe(0);
  });

  it("refuses the attempt after the limit per address, across emails; refused attempts are not counted", () => {
    const a = new SignInAttempts(limits);
    for (let i = 0; i < 5; i++) expect(a.take(`u${i}@x.test`, "10.1.1.1", 1_000)).toBe(0);
    expect(a.take("other@x.test", "10.1.1.1", 2_000)).toBeGreaterThan(0);
    expect(a.take("other@x.test", "10.1.1.2", 2_000)).toBe(0);
    // "other" was refused once from 10.1.1.1 and once admitted: one counted attempt, two more allowed.
    expect(a.take("other@x.test", "10.1.1.3", 2_000)).toBe(0);
    expect(a.take("other@x.test", "10.1.1.4", 2_000)).toBe(0);
    expect(a.take("other@x.test", "10.1.1.5", 2_000)).toBeGreaterThan(0);
  });

  it("forgives a successful attempt, so frequent sign-ins never lock an operator out", () => {
    const a = new SignInAttempts(limits);
    for (let i = 0; i < 10; i++) {
      const at = 1_000 + i;
      expect(a.take("ok@x.test", "10.2.2.2", at)).toBe(0);
      a.forgive("ok@x.test", "10.2.2.2", at);
    }
    expect(a.take("ok@x.test", "10.2.2.2", 2_000)).toBe(0);
  });
  it("keeps a locked email locked through a flood of refused attempts with other emails", () => {
    const a = new SignInAttempts(limits);
    for (let i = 0; i < 3; i++) expect(a.take("victim@x.test", `10.3.0.${i}`, 1_000)).toBe(0);
    expect(a.take("victim@x.test", "10.3.1.1", 2_000)).toBeGreaterThan(0);
    // The attacker's address is full; each further attempt is refused, with a new email every time.
    for (let i = 0; i < 5; i++) expect(a.take(`a${i}@x.test`, "10.3.9.9", 2_000)).toBe(0);
    for (let i = 0; i < 50_001; i++) expect(a.take(`junk${i}@x.test`, "10.3.9.9", 2_000)).toBeGreaterThan(0);
    expect(a.take("victim@x.test", "10.3.1.2", 3_000)).toBeGreaterThan(0);
  });
});
