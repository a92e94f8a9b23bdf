// Readiness: can this instance do its work? The database answers a trivial
// statement within 2 s and, with REDIS_URL, the shared counters are reachable.
// Served at GET /readyz (200 or 503) and reflected in gRPC health.
import type { Deps } from "../domain/deps.js";
import { ping } from "../storage/db.js";

const CHECK_TIMEOUT_MS = 2_000;

export interface Readiness {
  ready: boolean;
  checks: Record<string, "ok" | "unreachable">;
}

export async function readiness(deps: Pick<Deps, "pool" | "degraded">, redisConfigured: boolean): Promise<Readiness> {
  const checks: Readiness["checks"] = {};
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timed out")), CHECK_TIMEOUT_MS);
  });
  try {
    await Promise.race([ping(deps.pool), timeout]);
    checks.database = "ok";
  } catch {
    checks.database = "unreachable";
  } finally {
    clearTimeout(timer);
  }
  if (redisConfigured) checks.redis = deps.degraded().includes("redis") ? "unreachable" : "ok";
  return { ready: Object.values(checks).every((c) => c === "ok"), checks };
}
