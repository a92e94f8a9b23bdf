// The interner keeps one copy of each distinct string it is given, and stays bounded.
import { describe, expect, it } from "vitest";
import { Interner } from "./intern.js";

/** A string equal to `s` but a different object (as two database rows' values are). */
const copy = (s: string): string => Buffer.from(s).toString();

describe("Interner", () => {
  it("keeps one entry per distinct string, and returns a string equal to the one asked for", () => {
    const i = new Interner();
    const first = copy("api_1");
    expect(i.of(first)).toBe(first);
    const again = i.of(copy("api_1"));
    expect(again).toBe("api_1");
    // Which copy comes back cannot be seen from JavaScript (equal strings are ===); the count shows one was kept.
    expect(i.size).toBe(1);
    expect(i.of("api_2")).toBe("api_2");
    expect(i.size).toBe(2);
  });

  it("forgets everything once it holds `max` strings, and keeps answering", () => {
    const i = new Interner(3);
    for (const s of ["a", "b", "c"]) i.of(s);
    expect(i.size).toBe(3);
    expect(i.of("d")).toBe("d");
    expect(i.size).toBe(1);
    expect(i.of("a")).toBe("a");
    expect(i.size).toBe(2);
  });
});
