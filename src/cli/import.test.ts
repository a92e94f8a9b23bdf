import { describe, expect, it } from "vitest";
import { hashKey } from "../domain/keys/generate.js";
import { batches, failuresPathOf, MAX_BATCH_BYTES } from "./import.js";
import type { Item } from "./import-records.js";

describe("batches", () => {
  it("counts a batch's size in bytes, as the server's body limit does, not in UTF-16 units", async () => {
    // 3,000 CJK characters are 3,000 UTF-16 units but 9,000 bytes of JSON each:
    // 1,000 of them fit 4 MB as units and are over 8 MB as bytes.
    async function* items(): AsyncGenerator<Item> {
      for (let line = 1; line <= 1000; line++) yield { ok: true, line, key: { hash: hashKey(`k${line}`), meta: { note: "語".repeat(3000) } } };
    }
    const sizes: number[] = [];
    let keys = 0;
    for await (const b of batches(items(), 1000)) {
      sizes.push(Buffer.byteLength(JSON.stringify({ keys: b.keys.map((k) => k.key) })));
      keys += b.keys.length;
    }
    expect(keys).toBe(1000);
    expect(sizes.length).toBeGreaterThan(1);
    for (const size of sizes) expect(size).toBeLessThanOrEqual(MAX_BATCH_BYTES);
  });
});

describe("failuresPathOf", () => {
  it("keeps FILE.failures.jsonl for the default state and gives any other state its own", () => {
    expect(failuresPathOf("keys.jsonl.import-state.json")).toBe("keys.jsonl.failures.jsonl");
    expect(failuresPathOf("/tmp/run-a.json")).toBe("/tmp/run-a.json.failures.jsonl");
    expect(failuresPathOf("/tmp/run-b.json")).not.toBe(failuresPathOf("/tmp/run-a.json"));
  });
});
