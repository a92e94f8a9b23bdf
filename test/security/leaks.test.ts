// Plaintext keys and root keys never reach logs, errors or the database. The real
// server runs as a process at the most verbose log level, and is driven over HTTP
// through every path a key takes: created (plain and recoverable), verified in
// every outcome, rerolled, read back, updated, sent where it does not belong, and
// under concurrency. Then everything written is searched for every key created or
// sent: all the process (and the CLI) wrote, every row of every table, and every
// answer except the ones whose job is to return a key. A positive control shows
// the search finds a key where one is meant to be.
import { randomBytes } from "node:crypto";
import type { RowDataPacket } from "mysql2/promise";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateRootKey } from "../../src/domain/auth/root-key.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { runScript, type ServerProcess, startServer } from "../server-process.js";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
type Json = any;

interface Answer {
  path: string;
  /** What was sent: the Authorization header and the body. */
  sent: string;
  status: number;
  text: string;
  headers: string;
  /** createKey, rerollKey and decrypting reads: their job is to return a key. */
  returnsKey: boolean;
}

interface Secret {
  label: string;
  value: string;
}

/** The whole key and the secret part after its prefix (a prefix alone is not secret). */
function secretsOf(label: string, key: string): Secret[] {
  const cut = key.lastIndexOf("_");
  const tail = cut < 0 ? key : key.slice(cut + 1);
  return tail === key
    ? [{ label, value: key }]
    : [
        { label, value: key },
        { label: `${label} (secret part)`, value: tail },
      ];
}

/** The secret as hex, and as base64 at each of the three byte alignments it can have inside a longer value. */
function encodings(secret: string): string[] {
  const raw = Buffer.from(secret, "utf8");
  const out = [raw.toString("hex")];
  for (let shift = 0; shift < 3; shift++) {
    const b64 = Buffer.concat([Buffer.alloc(shift), raw]).toString("base64");
    // Only the characters made of the secret's bits alone.
    out.push(b64.slice(Math.ceil((shift * 4) / 3), Math.floor(((shift + raw.length) * 4) / 3)));
  }
  return out;
}

/** Whether a stored value holds the secret: as is, as raw bytes of a binary value, or hex- or base64-encoded in either. */
function holds(value: unknown, secret: string): boolean {
  if (value === null || value === undefined) return false;
  const text = Buffer.isBuffer(value) ? value.toString("latin1") : String(value);
  if (text.includes(secret) || (Buffer.isBuffer(value) && value.includes(Buffer.from(secret, "utf8")))) return true;
  const lower = text.toLowerCase();
  return encodings(secret).some((e, i) => (i === 0 ? lower.includes(e) : text.includes(e)));
}

describe("plaintext keys and root keys never reach logs, errors or the database", () => {
  const h = useHarness();
  let server: ServerProcess;
  const kek = randomBytes(32).toString("base64");
  const answers: Answer[] = [];
  const cliOutput: string[] = [];
  const secrets: Secret[] = [];
  const created: Array<{ label: string; key: string }> = [];
  let cliStdoutWithKey = "";

  const cli = (args: string[]) =>
    runScript("bin/keyhold.js", args, { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: "trace", KEYHOLD_ENCRYPTION_KEY: kek });

  async function send(
    p: string,
    body: unknown,
    auth: string | undefined,
    opts: { returnsKey?: boolean; headers?: Record<string, string> } = {},
  ): Promise<Json> {
    const res = await fetch(`${server.url}/v2/${p}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...(auth === undefined ? {} : { authorization: auth }), ...opts.headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
    const text = await res.text();
    answers.push({
      path: p,
      sent: `${auth ?? ""} ${typeof body === "string" ? body : JSON.stringify(body)}`,
      status: res.status,
      text,
      headers: JSON.stringify([...res.headers]),
      returnsKey: opts.returnsKey ?? false,
    });
    try {
      return { status: res.status, body: JSON.parse(text) };
    } catch {
      return { status: res.status, body: undefined };
    }
  }

  const bearer = (rk: string) => `Bearer ${rk}`;

  async function data(p: string, body: unknown, rk: string, opts: { returnsKey?: boolean; headers?: Record<string, string> } = {}): Promise<Json> {
    const res = await send(p, body, bearer(rk), opts);
    expect(res.status, `${p}: ${JSON.stringify(res.body)}`).toBe(200);
    return res.body.data;
  }

  async function newKey(label: string, rk: string, body: Record<string, unknown>, headers?: Record<string, string>): Promise<{ keyId: string; key: string }> {
    const k = await data("keys.createKey", body, rk, { returnsKey: true, ...(headers === undefined ? {} : { headers }) });
    created.push({ label, key: k.key });
    secrets.push(...secretsOf(label, k.key));
    return k;
  }

  beforeAll(async () => {
    server = await startServer(h.config.databaseUrl as string, { LOG_LEVEL: "trace", KEYHOLD_ENCRYPTION_KEY: kek });
  }, 120_000);

  afterAll(async () => {
    await server?.kill();
  });

  it("drives every path a key takes through the real server", async () => {
    // Root keys: through the harness, and through the CLI (whose stdout shows the key once, by design).
    const admin = await h.rootKey(["*"]);
    secrets.push(...secretsOf("root key (harness)", admin));
    const ws = uid("leak_ws");
    const made = await cli(["root-key", "create", "--workspace", ws, "--permissions", "*"]);
    expect(made.code, made.stderr).toBe(0);
    cliStdoutWithKey = made.stdout;
    cliOutput.push(made.stderr);
    const cliKey = JSON.parse(made.stdout).rootKey as string;
    const cliKeyId = JSON.parse(made.stdout).keyId as string;
    secrets.push(...secretsOf("root key (CLI)", cliKey));
    const listed = await cli(["root-key", "list", "--workspace", ws]);
    cliOutput.push(listed.stdout, listed.stderr);

    const apiId = (await data("apis.createApi", { name: "leaks" }, admin)).apiId;
    const otherApi = (await data("apis.createApi", { name: "other" }, cliKey)).apiId;
    const verifierOfOther = await h.rootKey([`apis.${otherApi}.verify_key`]);
    secrets.push(...secretsOf("root key (restricted)", verifierOfOther));

    const plain = await newKey("plain key", admin, {
      apiId,
      prefix: "live",
      credits: { remaining: 3 },
      ratelimits: [{ name: "tight", limit: 1, duration: 60_000 }],
      permissions: ["docs.read"],
      externalId: uid("user"),
    });
    const recoverable = await newKey("recoverable key", admin, { apiId, recoverable: true, name: "recoverable" });
    const expired = await newKey("expired key", admin, { apiId, expires: 1 });
    const noPrefix = await newKey("key without prefix", admin, { apiId, byteLength: 32 });
    const idempotent = await newKey("key created with an Idempotency-Key", admin, { apiId, prefix: "idem" }, { "idempotency-key": uid("idem") });
    const disabled = await newKey("disabled key", admin, { apiId, enabled: false });
    const cliMade = await newKey("key made with the CLI's root key", cliKey, { apiId: otherApi, recoverable: true });

    // Verification in every outcome.
    const verify = (key: string, extra: Record<string, unknown> = {}, rk = admin) => data("keys.verifyKey", { key, ...extra }, rk);
    expect((await verify(plain.key)).code).toBe("VALID");
    expect((await verify(plain.key)).code).toBe("RATE_LIMITED");
    expect((await verify(plain.key, { permissions: "docs.write" })).code).toBe("INSUFFICIENT_PERMISSIONS");
    expect((await verify(expired.key)).code).toBe("EXPIRED");
    expect((await verify(disabled.key)).code).toBe("DISABLED");
    expect((await verify(recoverable.key, { credits: { cost: 0 } })).code).toBe("VALID");
    expect((await verify(noPrefix.key)).code).toBe("VALID");
    expect((await verify(`${noPrefix.key}x`)).code).toBe("NOT_FOUND");
    expect((await verify(recoverable.key, {}, verifierOfOther)).code).toBe("NOT_FOUND");
    expect((await verify(cliMade.key, {}, cliKey)).code).toBe("VALID");
    await data("keys.updateCredits", { keyId: plain.keyId, operation: "set", value: 0 }, admin);
    await data("keys.updateKey", { keyId: plain.keyId, ratelimits: [] }, admin);
    expect((await verify(plain.key)).code).toBe("USAGE_EXCEEDED");

    // whoami, reads, updates, rerolls.
    for (const k of [plain, recoverable, expired, disabled, idempotent]) await data("keys.whoami", { key: k.key }, admin);
    await data("keys.getKey", { keyId: recoverable.keyId }, admin);
    expect((await data("keys.getKey", { keyId: recoverable.keyId, decrypt: true }, admin, { returnsKey: true })).plaintext).toBe(recoverable.key);
    await data("keys.listKeys", { apiId }, admin);
    await data("apis.listKeys", { apiId }, admin);
    await data("keys.listKeys", { apiId, decrypt: true }, admin, { returnsKey: true });
    await data("apis.listKeys", { apiId, decrypt: true }, admin, { returnsKey: true });
    await data("keys.updateKey", { keyId: recoverable.keyId, name: "renamed", meta: { note: "x" } }, admin);
    for (const [label, k] of [
      ["rerolled plain key", plain],
      ["rerolled recoverable key", recoverable],
    ] as const) {
      const next = await data("keys.rerollKey", { keyId: k.keyId, expiration: 60_000 }, admin, { returnsKey: true });
      created.push({ label, key: next.key });
      secrets.push(...secretsOf(label, next.key));
      expect((await verify(next.key, { credits: { cost: 0 } })).code, label).toBe("VALID");
    }

    // A stored ciphertext that no longer opens: the server logs it (a path that has the key's record at hand).
    const broken = await newKey("recoverable key with a damaged ciphertext", admin, { apiId, recoverable: true });
    await h.db.pool.query("UPDATE encrypted_keys SET encrypted = ? WHERE key_id = ?", [`v1.${randomBytes(48).toString("base64")}`, broken.keyId]);
    const unreadable = await send("keys.getKey", { keyId: broken.keyId, decrypt: true }, bearer(admin));
    expect(unreadable.body.data?.plaintext).toBeUndefined();

    // Root keys that fail: damaged, unknown, revoked, and an end-user key in their place.
    const unknownRoot = generateRootKey();
    secrets.push(...secretsOf("unknown root key", unknownRoot));
    const flipped = `${admin.slice(0, 10)}${admin.charAt(10) === "a" ? "b" : "a"}${admin.slice(11)}`;
    for (const auth of [
      bearer(admin.slice(0, -1)),
      `bearer ${admin}`,
      `Bearer  ${admin}`,
      `Bearer "${admin}"`,
      `Basic ${admin}`,
      admin,
      bearer(flipped),
      bearer(unknownRoot),
      bearer(plain.key),
      bearer(recoverable.key),
    ]) {
      const res = await send("apis.createApi", { name: "nope" }, auth);
      expect(res.status, auth).toBe(401);
    }
    const revoked = await cli(["root-key", "revoke", cliKeyId]);
    cliOutput.push(revoked.stdout, revoked.stderr);
    await new Promise((r) => setTimeout(r, 600)); // the server's invalidation poll
    expect((await send("apis.getApi", { apiId: otherApi }, bearer(cliKey))).status).toBe(401);

    // Keys in places they do not belong; each of these requests is refused.
    const k = plain.key;
    const bad: Array<[string, unknown]> = [
      ["keys.verifyKey", { key: k, [k]: 1 }],
      ["keys.verifyKey", { key: k, permissions: `${k} and (` }],
      ["keys.verifyKey", { key: k, ratelimits: [{ name: k }] }],
      ["keys.verifyKey", { key: k, credits: { cost: k } }],
      ["keys.verifyKey", { key: [k] }],
      ["keys.verifyKey", { key: `${k}${"x".repeat(600)}` }],
      ["keys.verifyKey", `{"key": "${k}"`],
      ["keys.verifyKey", `{"key": ${k}}`],
      ["keys.verifyKey", JSON.stringify(k)],
      ["keys.whoami", { key: k, extra: k }],
      ["keys.createKey", { apiId: k }],
      ["keys.createKey", { apiId, prefix: k }],
      ["keys.createKey", { apiId, externalId: `${k}!` }],
      ["keys.createKey", { apiId, name: k, byteLength: k }],
      ["keys.createKey", { apiId, roles: [k] }],
      ["keys.addRoles", { keyId: plain.keyId, roles: [k] }],
      ["keys.removePermissions", { keyId: plain.keyId, permissions: [k] }],
      ["permissions.getRole", { role: k }],
      ["keys.getKey", { keyId: k }],
      ["keys.updateKey", { keyId: plain.keyId, name: { k } }],
      ["apis.createApi", { name: k, [k]: k }],
      ["identities.getIdentity", { identity: k }],
      ["ratelimit.limit", { namespace: k, identifier: k, limit: 0, duration: 1 }],
      ["permissions.getPermission", { permission: `${k}!` }],
    ];
    for (const [p, body] of bad) {
      const res = await send(p, body, bearer(admin));
      expect(res.status, `${p} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`).toBeGreaterThanOrEqual(400);
    }
    expect((await send("keys.verifyKey", { key: k }, bearer(admin), { headers: { "content-type": "text/plain" } })).status).toBe(415);

    // Concurrency: many keys verified, created and rerolled at once.
    const burst = await Promise.all(Array.from({ length: 10 }, (_, i) => newKey(`concurrent key ${i}`, admin, { apiId, prefix: `c${i}` })));
    await Promise.all(burst.flatMap((b) => [verify(b.key), data("keys.whoami", { key: b.key }, admin), verify(b.key, {}, verifierOfOther)]));
    await Promise.all(
      burst.slice(0, 5).map(async (b, i) => {
        const next = await data("keys.rerollKey", { keyId: b.keyId, expiration: 0 }, admin, { returnsKey: true });
        created.push({ label: `concurrent reroll ${i}`, key: next.key });
        secrets.push(...secretsOf(`concurrent reroll ${i}`, next.key));
      }),
    );
    secrets.push({ label: "the key-encryption key", value: kek });
    expect(created.length).toBeGreaterThan(20);
  });

  it("positive control: the search finds each key in the answer that created it, and in the CLI's one line", () => {
    const meant = answers.filter((a) => a.returnsKey).map((a) => a.text);
    for (const c of created)
      expect(
        meant.some((t) => t.includes(c.key)),
        c.label,
      ).toBe(true);
    expect(secrets.some((s) => holds(cliStdoutWithKey, s.value))).toBe(true);
    const sample = created[0]?.key as string;
    for (const shift of ["", "x", "xy"]) {
      const bytes = Buffer.from(`${shift}${sample}z`);
      expect(holds(bytes, sample), "raw bytes in a binary column").toBe(true);
      expect(holds(bytes.toString("base64"), sample), `base64, shifted by ${shift.length}`).toBe(true);
      expect(holds(bytes.toString("hex").toUpperCase(), sample), "hex").toBe(true);
    }
    expect(holds("nothing here", sample)).toBe(false);
    expect(server.output()).toContain("keyhold is serving");
  });

  it("nothing the server or the CLI wrote, nor its metrics, holds a key", async () => {
    // The last records (usage write-behind, invalidation polls) are flushed before reading.
    await new Promise((r) => setTimeout(r, 1_500));
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toContain('keyhold_requests_total{transport="http",operation="keys.verifyKey"');
    const written = [server.output(), ...cliOutput, metrics].join("\n");
    expect(written).toContain("could not decrypt a recoverable key");
    const found = secrets.filter((s) => written.includes(s.value)).map((s) => s.label);
    expect(found, "keys found in what the processes wrote").toEqual([]);
  });

  /** Where answers (other than those meant to return a key) hold a key; `echo`: keys the request itself carried. */
  function keysInAnswers(echo: boolean): string[] {
    const found: string[] = [];
    for (const a of answers.filter((x) => !x.returnsKey)) {
      for (const s of secrets) {
        if (a.sent.includes(s.value) !== echo) continue;
        if (a.text.includes(s.value) || a.headers.includes(s.value)) found.push(`${s.label} in ${a.path} ${a.status}: ${a.text.slice(0, 300)}`);
      }
    }
    return found;
  }

  it("no answer holds a key its request did not carry, except the answers whose job is to return one", () => {
    expect(answers.length).toBeGreaterThan(80);
    expect(keysInAnswers(false)).toEqual([]);
  });

  // A key sent where it does not belong (an Authorization header, a role name, a
  // field name) is not repeated in the error: error bodies end up in client logs.
  it("no answer repeats a key its request carried", () => {
    expect(answers.filter((a) => a.status >= 400).length).toBeGreaterThan(20);
    expect(keysInAnswers(true)).toEqual([]);
  });

  it("no row of any table holds a key (text as is; binary as bytes, hex and base64)", async () => {
    const [tables] = await h.db.pool.query<RowDataPacket[]>(
      "SELECT TABLE_NAME AS t FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_TYPE = 'BASE TABLE'",
    );
    expect(tables.length).toBeGreaterThan(10);
    const found: string[] = [];
    let rowsSeen = 0;
    let startsSeen = 0;
    for (const { t } of tables) {
      const [rows] = await h.db.pool.query<RowDataPacket[]>(`SELECT * FROM \`${t}\``);
      for (const row of rows) {
        rowsSeen++;
        for (const [col, v] of Object.entries(row)) {
          for (const s of secrets) if (holds(v, s.value)) found.push(`${s.label} in ${t}.${col}`);
          if (t === "keys" && col === "start" && created.some((c) => c.key.startsWith(String(v)))) startsSeen++;
        }
      }
    }
    // The scan reads the keys table: each key's stored start is the beginning of a created key.
    expect(startsSeen).toBeGreaterThan(10);
    expect(rowsSeen).toBeGreaterThan(50);
    expect(found).toEqual([]);
  });
});
