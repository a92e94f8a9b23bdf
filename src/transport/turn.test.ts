import { describe, expect, it } from "vitest";
import { endOfTurn } from "./turn.js";

describe("endOfTurn", () => {
  it("is one promise for every caller of a turn, settled after the turn's I/O callbacks and before the next turn's", async () => {
    const order: string[] = [];
    const a = endOfTurn();
    const b = endOfTurn();
    expect(b).toBe(a);
    setImmediate(() => order.push("immediate set after"));
    void a.then(() => order.push("turn ended"));
    await b;
    expect(order).toEqual(["turn ended"]);
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(["turn ended", "immediate set after"]);
  });

  it("gives a caller asking while the turn's promise settles the next turn's, not the settled one", async () => {
    const first = endOfTurn();
    let second: Promise<void> | undefined;
    await first.then(() => {
      second = endOfTurn();
    });
    expect(second).toBeDefined();
    expect(second).not.toBe(first);
    let settled = false;
    void second?.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    await second;
    expect(settled).toBe(true);
  });
});
