// npm run bench:cache-pauses: how long one insertion into the key cache can hold
// the event loop, with the cache whole and cut into shards (src/cache/shards.ts).
// A RecordCache of CACHE_PAUSES_ENTRIES (1,000,000) key records is filled, then
// churned by as many again (each new record evicting the least recently used, as
// a cold key does when the cache is full), each record tagged as a key's is
// (`key:`, `api:`, `ws:`). Every set() is timed; printed are the largest, how
// many took over 1 and 5 ms, and the sum. Each variant runs in a process of its
// own, in turn, CACHE_PAUSES_ROUNDS (2) times each; the keys are SHA-256 digests
// made before the clock starts and the record is one object, so that what the
// garbage collector adds is the cache's own. A set() that a collection ran in
// (Node's `gc` performance entries) is counted apart: in a loop that never
// yields, V8 finishes a full collection of a heap of this size in one pause of
// hundreds of ms, which a server, marking between requests, does not.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { RecordCache } from "../src/cache/verification-cache.js";

const ENTRIES = Number(process.env.CACHE_PAUSES_ENTRIES ?? 1_000_000);
const ROUNDS = Number(process.env.CACHE_PAUSES_ROUNDS ?? 2);

async function measure(sharded: boolean): Promise<string> {
  const collections: Array<[number, number]> = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) collections.push([e.startTime, e.startTime + e.duration]);
  });
  observer.observe({ entryTypes: ["gc"] });
  const keys = Array.from({ length: ENTRIES * 2 }, (_, i) => createHash("sha256").update(`k${i}`).digest("base64"));
  const tags = keys.map((_, i) => [`key:key_${i}`, "api:api_1", "ws:ws_1"]);
  const record = { v: 1 };
  const cache = new RecordCache<{ v: number }>(
    { maxEntries: ENTRIES, maxBytes: Number.MAX_SAFE_INTEGER, ttlMs: 0, negativeTtlMs: 2_000, groups: ["api:", "ws:"], digestKeys: sharded },
    () => 100,
  );
  const starts = new Float64Array(keys.length);
  const pauses = new Float64Array(keys.length);
  for (let i = 0; i < keys.length; i++) {
    const t = performance.now();
    cache.set(keys[i] as string, record, tags[i]);
    starts[i] = t;
    pauses[i] = performance.now() - t;
  }
  // The observer is handed the loop's collections once the loop yields.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  const collected = new Uint8Array(keys.length);
  for (const [from, to] of collections) {
    // The last set() that began at or before the collection's end, and those before it that it overlaps.
    let lo = 0;
    let hi = keys.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if ((starts[mid] as number) <= to) lo = mid;
      else hi = mid - 1;
    }
    for (let i = lo; i >= 0 && (starts[i] as number) + (pauses[i] as number) >= from; i--) collected[i] = 1;
  }
  const clean = Array.from(pauses)
    .filter((_, i) => collected[i] === 0)
    .sort((a, b) => b - a);
  const withCollection = Array.from(pauses)
    .filter((_, i) => collected[i] === 1)
    .sort((a, b) => b - a);
  const over = (ms: number) => clean.filter((p) => p > ms).length;
  const top = (xs: number[]) =>
    xs
      .slice(0, 5)
      .map((p) => p.toFixed(1))
      .join(" ");
  const sum = pauses.reduce((a, b) => a + b, 0);
  return `${sharded ? `sharded (${cache.shardCount})` : "whole"}: without a collection in them, largest set() ${top(clean)} ms, over 1 ms ${over(1)}, over 5 ms ${over(5)}; with one (${withCollection.length}), largest ${top(withCollection)} ms; all ${keys.length} set()s ${sum.toFixed(0)} ms`;
}

const variant = process.argv[2];
if (variant === "whole" || variant === "sharded") {
  process.stdout.write(`${await measure(variant === "sharded")}\n`);
} else {
  console.log(
    `bench: ${ENTRIES} key records set into a RecordCache of ${ENTRIES}, then ${ENTRIES} more (each evicting one); ${ROUNDS} rounds, each variant in a process of its own`,
  );
  const self = fileURLToPath(import.meta.url);
  for (let r = 0; r < ROUNDS; r++) {
    for (const v of r % 2 === 0 ? ["whole", "sharded"] : ["sharded", "whole"]) {
      process.stdout.write(`round ${r + 1}: ${execFileSync(process.execPath, ["--max-old-space-size=8192", self, v], { env: process.env }).toString()}`);
    }
  }
}
