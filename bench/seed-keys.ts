// Bulk key generation for the scale bench: rows go straight into MySQL with
// multi-row INSERTs (not through the API), and look like keys created by
// keys.createKey: `bench_` + base58 of 16 bytes, stored as base64 SHA-256.
// The plaintext of key i is derived from (seed, i), so a caller can rebuild any
// key's plaintext without keeping a million strings around.
import { createHash } from "node:crypto";
import bs58 from "bs58";
import type { Pool } from "mysql2/promise";
import { newId } from "../src/core/ids.js";
import { hashKey } from "../src/domain/keys/generate.js";

export interface KeyOwner {
  keyAuthId: string;
  apiId: string;
  workspaceId: string;
}

const PREFIX = "bench";
const BYTE_LENGTH = 16;

/** The plaintext of seeded key number `i`. */
export function seededKey(seed: string, i: number): string {
  const bytes = createHash("sha256").update(`${seed}:${i}`).digest().subarray(0, BYTE_LENGTH);
  return `${PREFIX}_${bs58.encode(bytes)}`;
}

function progress(done: number, total: number, startedAt: number, final = false): void {
  const width = 30;
  const pct = total === 0 ? 1 : done / total;
  const filled = Math.round(pct * width);
  const secs = (Date.now() - startedAt) / 1000;
  const rate = secs > 0 ? done / secs : 0;
  process.stderr.write(
    `\rbench: seeding [${"#".repeat(filled)}${".".repeat(width - filled)}] ${(pct * 100).toFixed(1).padStart(5)}%  ${done}/${total}  ${Math.round(rate)} keys/s` +
      (final ? `  (${secs.toFixed(1)} s)\n` : ""),
  );
}

/**
 * Inserts keys number `from` .. `to - 1` for `owner`, in batches of `batch` rows,
 * `parallel` INSERTs in flight. Returns the insert rate in keys/s.
 */
export async function seedKeys(pool: Pool, owner: KeyOwner, seed: string, from: number, to: number, batch = 5_000, parallel = 2): Promise<number> {
  const total = to - from;
  const startedAt = Date.now();
  let next = from;
  let done = 0;
  let lastDraw = 0;
  progress(0, total, startedAt);
  const worker = async () => {
    const conn = await pool.getConnection();
    try {
      // The hashes are unique by construction; skipping the check lets InnoDB
      // buffer the secondary-index writes.
      await conn.query("SET SESSION unique_checks = 0");
      for (;;) {
        const start = next;
        if (start >= to) break;
        const end = Math.min(to, start + batch);
        next = end;
        const now = Date.now();
        const rows: unknown[][] = [];
        for (let i = start; i < end; i++) {
          const key = seededKey(seed, i);
          const head = key.slice(PREFIX.length + 1, PREFIX.length + 5);
          rows.push([
            newId("key", now),
            owner.keyAuthId,
            owner.apiId,
            owner.workspaceId,
            hashKey(key),
            `${PREFIX}_${head}`,
            PREFIX,
            BYTE_LENGTH,
            1,
            0,
            now,
            now,
          ]);
        }
        await conn.query(
          "INSERT INTO `keys` (id, key_auth_id, api_id, workspace_id, hash, start, prefix, byte_length, enabled, recoverable, last_refill_at_m, created_at_m) VALUES ?",
          [rows],
        );
        done += end - start;
        if (Date.now() - lastDraw > 200) {
          lastDraw = Date.now();
          progress(done, total, startedAt);
        }
      }
    } finally {
      await conn.query("SET SESSION unique_checks = 1").catch(() => undefined);
      conn.release();
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  progress(done, total, startedAt, true);
  return total / Math.max(0.001, (Date.now() - startedAt) / 1000);
}
