// A process's CPU time from /proc, for the bench's per-request CPU figures. Kept
// apart from load.ts so that the cold-key generator (cold-load.ts) can read it
// without loading the rest of the bench.
import { execFileSync } from "node:child_process";
import fs from "node:fs";

const CLK_TCK = (() => {
  try {
    return Number(execFileSync("getconf", ["CLK_TCK"]).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** utime+stime of a process in µs (fields 14 and 15 of /proc/<pid>/stat; the name in field 2 may hold spaces). */
export function cpuMicros(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLK_TCK;
}

/**
 * How long a process's main thread (the event loop's, whose thread id is the
 * pid) has waited, runnable, for a CPU, in µs: the second field of
 * /proc/<pid>/task/<pid>/schedstat (ns). Only that thread: Node's other threads
 * (the GC's helpers, libuv's pool) pinned to the same core queue behind it, and
 * summed with it they would count its own work as waiting. On these 2-core
 * machines keyhold is pinned to CPU 0 and the database is not: when the
 * database's threads run on CPU 0, the event loop waits, and its requests with
 * it (bench/README.md, "The miss path's p99 at a paced load"). 0 for a process
 * that is gone, or where /proc has no schedstat (a kernel built without
 * CONFIG_SCHED_INFO).
 */
export function runQueueWaitMicros(pid: number): number {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[1] ?? 0) / 1000;
  } catch {
    return 0;
  }
}
