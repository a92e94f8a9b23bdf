// kill -9 of the server in the middle of a stream of createKey calls, a few
// times over. After a restart on the same database: every key whose creation
// was answered 200 exists, reads back and verifies with what was asked; and no
// key is half-created: every key row in the database, answered or not, has all
// of its rate limits, permissions, roles, identity, credits and encrypted copy.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";
import { type ServerProcess, startServer } from "../server-process.js";
import { type Answer, outcome, post, Tally } from "./client.js";

const ROUNDS = 3;
const CONCURRENCY = 8;
const ENCRYPTION_KEY = randomBytes(32).toString("base64");

interface Sent {
  name: string;
  // biome-ignore lint/suspicious/noExplicitAny: request bodies
  body: any;
  answer: Answer;
}

/** Request i of round r: every part of a key that lives in its own rows, varied per request. */
function createBody(apiId: string, r: number, i: number) {
  const name = `crash-${r}-${i}`;
  return {
    apiId,
    name,
    meta: { marker: name, round: r, n: i, nested: { list: [i, "x"] } },
    ratelimits: [
      { name: "requests", limit: 100 + i, duration: 60_000 },
      ...(i % 2 === 0 ? [{ name: "burst", limit: 5, duration: 1_000, autoApply: false }] : []),
    ],
    permissions: ["crash.shared", `crash.p${i % 5}`, ...(i % 3 === 0 ? [`crash.r${r}.only${i}`] : [])],
    roles: i % 4 === 0 ? [] : i % 4 === 1 ? ["crash-reader"] : ["crash-reader", "crash-writer"],
    credits: { remaining: 1_000 + i, refill: { interval: "daily", amount: 50 + i } },
    ...(i % 3 === 1 ? {} : { externalId: `crash_user_${i % 7}` }),
    recoverable: i % 2 === 1,
  };
}

describe("kill -9 during createKey", () => {
  const h = useHarness();
  const env = { KEYHOLD_ENCRYPTION_KEY: ENCRYPTION_KEY };
  let rk: string;
  let apiId: string;
  let server: ServerProcess | undefined;
  const sent: Sent[] = [];

  beforeAll(async () => {
    rk = await h.rootKey(["*"]);
    server = await startServer(h.config.databaseUrl ?? "", env);
    const api = await post(server.url, "/v2/apis.createApi", { name: "crash" }, rk);
    expect(api.status, api.text).toBe(200);
    apiId = api.body.data.apiId;
    for (const name of ["crash-reader", "crash-writer"]) {
      const role = await post(server.url, "/v2/permissions.createRole", { name }, rk);
      expect(role.status, role.text).toBe(200);
    }
  });

  afterAll(async () => {
    await server?.kill();
  });

  /** Streams createKey calls at CONCURRENCY until the process dies; kills it at a random moment after some succeeded. */
  async function round(r: number, proc: ServerProcess): Promise<Tally> {
    const killAfter = 10 + Math.floor(Math.random() * 40);
    const tally = new Tally();
    let next = 0;
    let ok = 0;
    let dead = false;
    void proc.exited.then(() => {
      dead = true;
    });
    const worker = async () => {
      while (!dead) {
        const body = createBody(apiId, r, next++);
        const answer = await post(proc.url, "/v2/keys.createKey", body, rk, 10_000);
        sent.push({ name: body.name, body, answer });
        tally.add(outcome(answer));
        // A few milliseconds later, so the kill lands among transactions in flight.
        if (answer.status === 200 && ++ok === killAfter) setTimeout(() => proc.proc.kill("SIGKILL"), Math.random() * 15);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    expect(await proc.exited).toBe("SIGKILL");
    return tally;
  }

  it("every answered key is whole after restarts, and no key row is half-created", async () => {
    for (let r = 0; r < ROUNDS; r++) {
      const proc = server ?? (await startServer(h.config.databaseUrl ?? "", env));
      server = undefined;
      const tally = await round(r, proc);
      console.log(`[crash] round ${r}: ${JSON.stringify(tally)}`);
    }
    server = await startServer(h.config.databaseUrl ?? "", env);

    // Until the kill, every answer was a 200; after it, no answer at all (never a half answer or an error).
    const answered = sent.filter((s) => s.answer.failure === undefined);
    expect(new Set(answered.map((s) => s.answer.status))).toEqual(new Set([200]));
    const byName = new Map(sent.map((s) => [s.name, s]));

    // Every key row of the API belongs to one of our requests, and is complete.
    const [keyRows] = await h.db.pool.query(
      "SELECT id, name, meta, identity_id, remaining_requests, refill_amount, refill_day, recoverable FROM `keys` WHERE api_id = ?",
      [apiId],
    );
    const rows = keyRows as Array<Record<string, unknown>>;
    const unanswered = rows.filter((row) => byName.get(String(row.name))?.answer.failure !== undefined).length;
    console.log(`[crash] ${sent.length} createKey calls, ${answered.length} answered 200, ${rows.length} key rows (${unanswered} created without an answer)`);
    for (const row of rows) await expectWholeRow(row, byName.get(String(row.name)));

    // Every 200 is in the database (its id), reads back and verifies with what was asked.
    const ids = new Set(rows.map((row) => String(row.id)));
    for (const s of answered) {
      expect(ids.has(s.answer.body.data.keyId), s.name).toBe(true);
      await expectKeyWorks(s);
    }
  }, 120_000);

  async function expectWholeRow(row: Record<string, unknown>, s: Sent | undefined): Promise<void> {
    expect(s, `a key row no request asked for: ${String(row.name)}`).toBeDefined();
    const body = s?.body;
    const id = String(row.id);
    const q = async (sql: string) => (await h.db.pool.query(sql, [id]))[0] as Array<Record<string, unknown>>;
    const label = `${body.name} (${id})`;
    expect(JSON.parse(String(row.meta)), label).toEqual(body.meta);
    expect([Number(row.remaining_requests), Number(row.refill_amount), row.refill_day], label).toEqual([
      body.credits.remaining,
      body.credits.refill.amount,
      null,
    ]);
    const limits = await q("SELECT name, `limit`, duration, auto_apply FROM ratelimits WHERE key_id = ? ORDER BY name");
    expect(
      limits.map((l) => ({ name: l.name, limit: Number(l.limit), duration: Number(l.duration), autoApply: Boolean(l.auto_apply) })),
      label,
    ).toEqual(
      [...body.ratelimits]
        .sort((a, b) => a.name.localeCompare(b.name))
        .map((l) => ({ name: l.name, limit: l.limit, duration: l.duration, autoApply: l.autoApply ?? true })),
    );
    const perms = await q("SELECT p.slug FROM keys_permissions kp JOIN permissions p ON p.id = kp.permission_id WHERE kp.key_id = ? ORDER BY p.slug");
    expect(
      perms.map((p) => p.slug),
      label,
    ).toEqual([...body.permissions].sort());
    const roles = await q("SELECT r.name FROM keys_roles kr JOIN roles r ON r.id = kr.role_id WHERE kr.key_id = ? ORDER BY r.name");
    expect(
      roles.map((r) => r.name),
      label,
    ).toEqual([...body.roles].sort());
    const identity = await q("SELECT i.external_id FROM `keys` k JOIN identities i ON i.id = k.identity_id WHERE k.id = ?");
    expect(
      identity.map((i) => i.external_id),
      label,
    ).toEqual(body.externalId === undefined ? [] : [body.externalId]);
    expect(row.identity_id === null, label).toBe(body.externalId === undefined);
    const encrypted = await q("SELECT key_id FROM encrypted_keys WHERE key_id = ?");
    expect([Boolean(row.recoverable), encrypted.length], label).toEqual(body.recoverable ? [true, 1] : [false, 0]);
  }

  async function expectKeyWorks(s: Sent): Promise<void> {
    const url = server?.url ?? "";
    const { keyId, key } = s.answer.body.data;
    const got = await post(url, "/v2/keys.getKey", { keyId, decrypt: true }, rk);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data, s.name).toMatchObject({
      keyId,
      name: s.name,
      meta: s.body.meta,
      credits: { remaining: s.body.credits.remaining, refill: { interval: "daily", amount: s.body.credits.refill.amount } },
    });
    expect(got.body.data.plaintext, s.name).toBe(s.body.recoverable ? key : undefined);
    const v = await post(url, "/v2/keys.verifyKey", { key }, rk);
    expect(v.body?.data, s.name).toMatchObject({
      valid: true,
      code: "VALID",
      keyId,
      name: s.name,
      meta: s.body.meta,
      credits: s.body.credits.remaining - 1,
    });
    expect([...v.body.data.permissions].sort(), s.name).toEqual([...s.body.permissions].sort());
    expect([...(v.body.data.roles ?? [])].sort(), s.name).toEqual([...s.body.roles].sort());
    expect(v.body.data.identity?.externalId, s.name).toBe(s.body.externalId);
    expect(v.body.data.ratelimits.map((l: { name: string }) => l.name).sort(), s.name).toEqual(
      s.body.ratelimits
        .filter((l: { autoApply?: boolean }) => l.autoApply !== false)
        .map((l: { name: string }) => l.name)
        .sort(),
    );
  }
});
