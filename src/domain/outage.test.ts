import { describe, expect, it } from "vitest";
import { Outage } from "./outage.js";

const unavailable = (): Error => Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
const never = <T>(): Promise<T> => new Promise<T>(() => undefined);

describe("Outage", () => {
  it("answers a held record when the read fails for want of a database, and rethrows other errors", async () => {
    const o = new Outage();
    expect(await o.read("held", () => Promise.reject(unavailable()))).toBe("held");
    await expect(new Outage().read("held", () => Promise.reject(new Error("bug")))).rejects.toThrow("bug");
    await expect(new Outage().read(undefined, () => Promise.reject(unavailable()))).rejects.toThrow("ECONNREFUSED");
  });

  it("after one such failure, held records answer without waiting for a database that does not answer", async () => {
    const o = new Outage();
    await o.read("held", () => Promise.reject(unavailable()));
    let reads = 0;
    // A read that would hang forever (a silent database) is not even started.
    expect(
      await o.read("held", () => {
        reads++;
        return never();
      }),
    ).toBe("held");
    expect(reads).toBe(0);
    // Records not held still go to the database.
    expect(await o.read(undefined, async () => "fresh")).toBe("fresh");
  });

  it("without an outage, every read goes to the database even when a record is held", async () => {
    const o = new Outage();
    expect(await o.read("held", async () => "fresh")).toBe("fresh");
  });
});
