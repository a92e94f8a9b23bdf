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
