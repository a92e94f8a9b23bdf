// Refills on UTC dates (docs/ratelimits.md, "Credits"): daily at UTC midnight;
// monthly on refillDay, or the month's last day when the month is shorter.
import { describe, expect, it } from "vitest";
import { currentRefillPeriodStart, refillDue } from "./refill.js";

const utc = (iso: string): number => Date.parse(`${iso}Z`);

describe("currentRefillPeriodStart", () => {
  describe("daily", () => {
    const daily = { amount: 10, day: undefined };

    it.each([
      ["2024-03-15T13:45:10.123", "2024-03-15T00:00:00.000"],
      ["2024-03-15T00:00:00.000", "2024-03-15T00:00:00.000"],
      ["2024-03-15T23:59:59.999", "2024-03-15T00:00:00.000"],
      ["2024-01-01T00:00:00.001", "2024-01-01T00:00:00.000"],
    ])("at %s the period started at %s (UTC midnight)", (now, start) => {
      expect(currentRefillPeriodStart(daily, utc(now))).toBe(utc(start));
    });
  });

  describe("monthly", () => {
    it.each<[number, string, string]>([
      [15, "2024-03-20T10:00:00.000", "2024-03-15T00:00:00.000"],
      [15, "2024-03-15T00:00:00.000", "2024-03-15T00:00:00.000"],
      [15, "2024-03-14T23:59:59.999", "2024-02-15T00:00:00.000"],
      [1, "2024-03-01T00:00:00.000", "2024-03-01T00:00:00.000"],
      [1, "2024-02-29T12:00:00.000", "2024-02-01T00:00:00.000"],
      // across the year boundary
      [15, "2024-01-10T00:00:00.000", "2023-12-15T00:00:00.000"],
      // refillDay past the month's end: the month's last day
      [31, "2024-04-30T00:00:01.000", "2024-04-30T00:00:00.000"],
      [31, "2024-04-29T23:00:00.000", "2024-03-31T00:00:00.000"],
      [31, "2024-03-05T00:00:00.000", "2024-02-29T00:00:00.000"],
      [31, "2023-03-05T00:00:00.000", "2023-02-28T00:00:00.000"],
      [30, "2023-02-28T08:00:00.000", "2023-02-28T00:00:00.000"],
      [29, "2024-02-29T08:00:00.000", "2024-02-29T00:00:00.000"],
      [31, "2024-12-31T23:59:59.999", "2024-12-31T00:00:00.000"],
    ])("refillDay %i at %s -> period started %s", (day, now, start) => {
      expect(currentRefillPeriodStart({ amount: 10, day }, utc(now))).toBe(utc(start));
    });
  });
});

describe("refillDue", () => {
  const daily = { amount: 10, day: undefined };
  const monthly = { amount: 10, day: 15 };

  it("a daily refill is due once per UTC day", () => {
    const now = utc("2024-03-15T08:00:00.000");
    expect(refillDue(daily, utc("2024-03-14T23:59:59.999"), now)).toBe(true);
    expect(refillDue(daily, utc("2024-03-15T00:00:00.000"), now)).toBe(false);
    expect(refillDue(daily, utc("2024-03-15T07:00:00.000"), now)).toBe(false);
  });

  it("is due at the very start of the period", () => {
    const start = utc("2024-03-16T00:00:00.000");
    expect(refillDue(daily, start - 1, start)).toBe(true);
  });

  it("a monthly refill is due once per period", () => {
    expect(refillDue(monthly, utc("2024-02-20T00:00:00.000"), utc("2024-03-15T00:00:00.000"))).toBe(true);
    expect(refillDue(monthly, utc("2024-02-20T00:00:00.000"), utc("2024-03-14T23:59:59.999"))).toBe(false);
    expect(refillDue(monthly, utc("2024-03-15T00:00:00.000"), utc("2024-04-14T00:00:00.000"))).toBe(false);
    expect(refillDue(monthly, utc("2024-03-15T00:00:00.000"), utc("2024-04-15T00:00:00.000"))).toBe(true);
  });

  it("a key created (or refilled) earlier in the same period is not due", () => {
    const created = utc("2024-03-15T09:00:00.000");
    expect(refillDue(daily, created, utc("2024-03-15T22:00:00.000"))).toBe(false);
    expect(refillDue(daily, created, utc("2024-03-16T00:00:00.000"))).toBe(true);
  });
});
