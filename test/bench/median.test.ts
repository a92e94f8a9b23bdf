// The one median every bench figure is printed with (bench/support.ts): run.ts,
// ab.ts, analytics.ts and the scale part's sustained runs each had a copy, and
// analytics.ts's took the upper middle value of an even count.
import { describe, expect, it } from "vitest";
import { median } from "../../bench/support.js";

describe("bench median", () => {
  it("takes the middle of an odd count, whatever the order", () => {
    expect(median([27.3, 24.9, 19.0])).toBe(24.9);
    expect(median([5])).toBe(5);
  });

  it("takes the mean of the two middle values of an even count", () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it("leaves its argument as it was, and answers NaN for no values", () => {
    const xs = [3, 1, 2];
    median(xs);
    expect(xs).toEqual([3, 1, 2]);
    expect(median([])).toBeNaN();
  });
});
