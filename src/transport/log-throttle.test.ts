import { describe, expect, it } from "vitest";
import { LogThrottle } from "./log-throttle.js";

describe("LogThrottle", () => {
  it("writes the first line, counts the rest of the interval, and reports the count with the next line", async () => {
    const t = new LogThrottle(50);
    const lines: number[] = [];
    for (let i = 0; i < 100; i++) t.run((n) => lines.push(n));
    expect(lines).toEqual([0]);
    await new Promise((r) => setTimeout(r, 60));
    t.run((n) => lines.push(n));
    expect(lines).toEqual([0, 99]);
  });
});
