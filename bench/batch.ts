// npm run bench:batch [OTHER_CHECKOUT]: the CPU keyhold spends building one
// analytics batch's SQL (analyticsBatch, src/storage/analytics.ts), a nanosecond
// figure an event, with no server, database or load generator in the way: the
// part of the hot path's analytics cost that `npm run bench` cannot tell from the
// machine's noise (a few tenths of a µs of a ~30 µs verification). Two batches,
// as the recorder hands them over: a hot key's (2,000 verifications of one key,
// no tags, each request's tags an array of its own, ~40 a millisecond) and keys
// seen once (500 verifications, the cold path). Given another checkout (built,
// e.g. a `git worktree`), its analyticsBatch is timed in the same process, the
// two builds in turn (the order flipped every round), and each round's ratio
// printed; the medians of BENCH_BATCH_ROUNDS (7) rounds of BENCH_BATCH_MS
// (1,500) of CPU time each.
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { VerificationEvent } from "../src/storage/analytics.js";
import { median, root } from "./support.js";

type Build = (v: readonly VerificationEvent[], r: readonly never[], form: "load") => unknown[];

const ROUNDS = Number(process.env.BENCH_BATCH_ROUNDS ?? 7);
const MS = Number(process.env.BENCH_BATCH_MS ?? 1_500);

async function builder(checkout: string): Promise<Build> {
  const mod = (await import(pathToFileURL(path.join(checkout, "dist", "src", "storage", "analytics.js")).href)) as { analyticsBatch: Build };
  return mod.analyticsBatch;
}

/**
 * Four batches of each kind (a key's strings shared, as the cached record's are), so no build sees the same array
 * twice running. Each event an object literal of the recorder's fields in order, as src/domain/keys/verify.ts
 * makes them: built with `{ ...key, keyId }` instead, every build here took ~2,600 ns an event, old and new alike.
 */
function batches(cold: boolean): VerificationEvent[][] {
  const n = cold ? 500 : 2_000;
  const t0 = Date.UTC(2026, 10, 30, 12, 0, 0);
  const key = { workspaceId: "ws_2Tq8Lw3Vb9Nc4Xz", keySpaceId: "ks_7Hd2Mv9Kp4Rt6Yw", apiId: "api_5Gf8Jr2Qs7Wx3Bn", keyId: "key_2Ab3Cd4Ef5Gh6Ij7Kl8M" };
  return Array.from({ length: 4 }, (_, b) =>
    Array.from({ length: n }, (_, i) => ({
      requestId: `req_1ChWquiHVegBEkZds3N${String(b * n + i).padStart(5, "0")}`,
      time: t0 + b * 60 + Math.floor(i / 40),
      workspaceId: key.workspaceId,
      keySpaceId: key.keySpaceId,
      apiId: key.apiId,
      keyId: cold ? `key_2Ab3Cd4Ef5Gh6I${String(b * n + i).padStart(6, "0")}` : key.keyId,
      identityId: "",
      externalId: "",
      outcome: "VALID",
      region: "local",
      tags: [],
      spentCredits: 0,
    })),
  );
}

/** CPU ns an event, building batches until `MS` of CPU time has passed. */
function time(build: Build, sets: VerificationEvent[][]): number {
  let events = 0;
  let made = 0;
  const start = process.cpuUsage();
  let used = 0;
  for (let i = 0; used < MS * 1000; i++) {
    const set = sets[i % sets.length] as VerificationEvent[];
    made += build(set, [], "load").length;
    events += set.length;
    if (i % 8 === 7) {
      const c = process.cpuUsage(start);
      used = c.user + c.system;
    }
  }
  if (made === 0) throw new Error("no statements built");
  return (used * 1000) / events;
}

async function main(): Promise<void> {
  const other = process.argv[2];
  const builds: Array<[string, Build]> = [[root, await builder(root)]];
  if (other !== undefined) builds.unshift([path.resolve(other), await builder(path.resolve(other))]);
  for (const cold of [false, true]) {
    const sets = batches(cold);
    for (const [, build] of builds) time(build, sets.slice(0, 1)); // warm-up, each build's code optimized before its first round
    const figures = builds.map(() => [] as number[]);
    const ratios: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      // The order flipped every round: the build timed second inherits the first one's garbage.
      const order = r % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => builds.length - 1 - i);
      for (const i of order) figures[i]?.push(time((builds[i] as [string, Build])[1], sets));
      if (builds.length === 2) ratios.push((figures[1]?.[r] as number) / (figures[0]?.[r] as number));
    }
    const what = cold ? "keys seen once (500 a batch)" : "a hot key (2,000 a batch)";
    builds.forEach(([dir], i) => {
      console.log(
        `${what.padEnd(30)} ${dir.padEnd(24)} ${median(figures[i] as number[])
          .toFixed(0)
          .padStart(6)} ns an event`,
      );
    });
    if (ratios.length > 0)
      console.log(`${what.padEnd(30)} ${root} against ${builds[0]?.[0]}: ×${median(ratios).toFixed(3)} (rounds ${ratios.map((x) => x.toFixed(3)).join(" ")})`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
