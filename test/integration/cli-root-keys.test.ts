// `keyhold root-key disable|enable|set-permissions|set-expiry|rotate|revoke` and
// `keyhold audit list`, run as the real CLI process against the harness's own
// database. Every change is checked three ways: the row in root_keys, the answer
// of the harness's server (which may hold the key in its cache: the CLI writes a
// cache_invalidations row, and the test runs the server's poll as a running
// server would on its timer), and the record the change leaves in the audit log,
// whose actor is the CLI (type "system", id "cli").
//
// The lifecycle tests share one root key and run in order; the usage and
// not-found tests after them check that a refused command changes nothing.
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectOk, uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { ensureBuilt, type ProcessRun as Run, runScript } from "../server-process.js";

interface AuditLog {
  id: string;
  workspaceId: string;
  time: number;
  actorType: string;
  actorId: string;
  action: string;
  resources: Array<{ type: string; id: string }>;
  description: string;
}

interface AuditPage {
  logs: AuditLog[];
  cursor?: string;
}

interface Listed {
  keyId: string;
  name: string;
  permissions: string[];
  enabled: boolean;
  expiresAt?: number;
}

describe("keyhold root-key changes and audit list", () => {
  const h = useHarness();

  const cli = (args: string[]): Promise<Run> => runScript("bin/keyhold.js", args, { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: "silent" });

  const describeRun = (args: string[], run: Run) => `keyhold ${args.join(" ")}\nexit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;

  /** Runs a command that must succeed: exit 0 and exactly one JSON line on stdout. */
  async function ok<T = Record<string, unknown>>(args: string[]): Promise<T> {
    const run = await cli(args);
    const msg = describeRun(args, run);
    expect(run.code, msg).toBe(0);
    const lines = run.stdout.split("\n").filter((l) => l !== "");
    expect(lines, msg).toHaveLength(1);
    return JSON.parse(lines[0] as string) as T;
  }

  /** Runs a command that must fail with `code`, a message on stderr and nothing on stdout. */
  async function fails(args: string[], code: number, message: RegExp): Promise<Run> {
    const run = await cli(args);
    const msg = describeRun(args, run);
    expect(run.code, msg).toBe(code);
    expect(run.stdout, msg).toBe("");
    expect(run.stderr, msg).toMatch(message);
    return run;
  }

  /** The root_keys row as stored (deleted rows too). */
  async function row(keyId: string): Promise<{ enabled: boolean; expiresAt: number | null; deletedAt: number | null; permissions: string[] }> {
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT enabled, expires_at_m, deleted_at_m, permissions FROM root_keys WHERE id = ?", [keyId]);
    const r = rows[0];
    expect(r, `root_keys row ${keyId}`).toBeDefined();
    return {
      enabled: Boolean(r?.enabled),
      expiresAt: r?.expires_at_m === null ? null : Number(r?.expires_at_m),
      deletedAt: r?.deleted_at_m === null ? null : Number(r?.deleted_at_m),
      permissions: (typeof r?.permissions === "string" ? JSON.parse(r.permissions) : r?.permissions) as string[],
    };
  }

  /** What a running server does on its timer: read the invalidation rows the CLI wrote and evict. */
  const poll = () => h.runtime.invalidations.poll();

  const listed = async (workspace: string, keyId: string): Promise<Listed | undefined> =>
    (await ok<{ keys: Listed[] }>(["root-key", "list", "--workspace", workspace])).keys.find((k) => k.keyId === keyId);

  /** How many audit records and root keys (live or not) the database holds: a refused command adds neither. */
  async function counts(): Promise<{ audit: number; rootKeys: number }> {
    const [a] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM audit_logs");
    const [k] = await h.db.pool.query<RowDataPacket[]>("SELECT COUNT(*) AS n FROM root_keys");
    return { audit: Number(a[0]?.n), rootKeys: Number(k[0]?.n) };
  }

  beforeAll(() => ensureBuilt(), 300_000);

  const workspace = uid("cli_rk");
  // The key under test: created, then rotated twice.
  let first: { keyId: string; rootKey: string };
  let second: { keyId: string; rootKey: string };
  let third: { keyId: string; rootKey: string };
  let apiId: string;

  it("create --expires <ISO time> stores the expiry, lists it, and the key works", async () => {
    const expires = Date.now() + 3_600_000;
    const out = await ok<{ workspaceId: string; keyId: string; rootKey: string }>([
      "root-key",
      "create",
      "--workspace",
      workspace,
      "--permissions",
      "apis.*.create_api,apis.*.read_api",
      "--name",
      "lifecycle",
      "--expires",
      new Date(expires).toISOString(),
    ]);
    first = { keyId: out.keyId, rootKey: out.rootKey };
    expect(await row(first.keyId)).toEqual({ enabled: true, expiresAt: expires, deletedAt: null, permissions: ["apis.*.create_api", "apis.*.read_api"] });
    expect(await listed(workspace, first.keyId)).toMatchObject({ name: "lifecycle", enabled: true, expiresAt: expires });
    // Used once here, so the harness's server has it in its cache from now on.
    apiId = expectOk(await h.post("/v2/apis.createApi", { name: "cli-lifecycle" }, first.rootKey)).apiId as string;
  });

  it("create --expires <Unix ms> stores that instant too", async () => {
    const expires = Date.now() + 7_200_000;
    const out = await ok<{ keyId: string; rootKey: string }>([
      "root-key",
      "create",
      "--workspace",
      uid("cli_rk_ms"),
      "--permissions",
      "apis.*.read_api",
      "--expires",
      String(expires),
    ]);
    expect((await row(out.keyId)).expiresAt).toBe(expires);
  });

  it("disable: the row is disabled and, after the server's poll, the key is 403 key_disabled", async () => {
    const out = await ok<Record<string, unknown>>(["root-key", "disable", first.keyId]);
    expect(out).toMatchObject({ keyId: first.keyId, enabled: false });
    expect((await row(first.keyId)).enabled).toBe(false);
    expect((await listed(workspace, first.keyId))?.enabled).toBe(false);
    await poll();
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, first.rootKey), 403, "err:svc:authorization:key_disabled");
    // What a change prints is the key as `list` shows it: the stored hash (what the
    // server looks root keys up by) belongs on stdout no more than the secret does.
    expect(JSON.stringify(out)).not.toContain(first.rootKey);
    expect(out, `printed fields: ${Object.keys(out).sort().join(", ")}`).not.toHaveProperty("hash");
  });

  it("enable: after the poll the key answers 200 again", async () => {
    expect(await ok(["root-key", "enable", first.keyId])).toMatchObject({ keyId: first.keyId, enabled: true });
    expect((await row(first.keyId)).enabled).toBe(true);
    await poll();
    expectOk(await h.post("/v2/apis.getApi", { apiId }, first.rootKey));
  });

  it("set-permissions narrows: a call needing the removed grant is 403, one the remaining grant covers is 200", async () => {
    expectOk(await h.post("/v2/apis.createApi", { name: "before-narrowing" }, first.rootKey)); // cached with both grants
    expect(await ok(["root-key", "set-permissions", first.keyId, "--permissions", "apis.*.read_api"])).toMatchObject({
      keyId: first.keyId,
      permissions: ["apis.*.read_api"],
    });
    expect((await row(first.keyId)).permissions).toEqual(["apis.*.read_api"]);
    await poll();
    expectError(h, await h.post("/v2/apis.createApi", { name: "after-narrowing" }, first.rootKey), 403, "err:svc:authorization:insufficient_permissions");
    expectOk(await h.post("/v2/apis.getApi", { apiId }, first.rootKey));
  });

  it("set-expiry <time> stores a new expiry; set-expiry never clears it", async () => {
    const expires = Date.now() + 1_800_000;
    expect(await ok(["root-key", "set-expiry", first.keyId, "--expires", String(expires)])).toMatchObject({ keyId: first.keyId, expiresAt: expires });
    expect((await row(first.keyId)).expiresAt).toBe(expires);

    const cleared = await ok<Record<string, unknown>>(["root-key", "set-expiry", first.keyId, "--expires", "never"]);
    expect(cleared.keyId).toBe(first.keyId);
    expect(cleared.expiresAt).toBeUndefined();
    expect((await row(first.keyId)).expiresAt).toBeNull();
    expect((await listed(workspace, first.keyId))?.expiresAt).toBeUndefined();
    await poll();
    expectOk(await h.post("/v2/apis.getApi", { apiId }, first.rootKey));
  });

  it("rotate --grace-ms 60000: a new secret; the old one works on and its row expires ~60 s ahead", async () => {
    const before = Date.now();
    const out = await ok<{ keyId: string; rootKey: string; previousExpires: number }>(["root-key", "rotate", first.keyId, "--grace-ms", "60000"]);
    const after = Date.now();
    expect(Object.keys(out).sort()).toEqual(["keyId", "previousExpires", "rootKey"]);
    expect(out.keyId).toMatch(/^key_/);
    expect(out.keyId).not.toBe(first.keyId);
    expect(out.rootKey).toMatch(/^svc_\S+$/);
    expect(out.previousExpires).toBeGreaterThanOrEqual(before + 60_000);
    expect(out.previousExpires).toBeLessThanOrEqual(after + 60_000);
    second = { keyId: out.keyId, rootKey: out.rootKey };

    expect(await row(first.keyId)).toMatchObject({ expiresAt: out.previousExpires, deletedAt: null, enabled: true });
    // The new key has the old one's name, grants, state and (cleared) expiry.
    expect(await row(second.keyId)).toEqual({ enabled: true, expiresAt: null, deletedAt: null, permissions: ["apis.*.read_api"] });
    expect((await listed(workspace, second.keyId))?.name).toBe("lifecycle");

    await poll();
    expectOk(await h.post("/v2/apis.getApi", { apiId }, first.rootKey));
    expectOk(await h.post("/v2/apis.getApi", { apiId }, second.rootKey));
  });

  it("rotate with no --grace-ms: the old secret is revoked at once (401 after the poll), the new one works", async () => {
    expectOk(await h.post("/v2/apis.getApi", { apiId }, second.rootKey)); // cached
    const before = Date.now();
    const out = await ok<{ keyId: string; rootKey: string; previousExpires: number }>(["root-key", "rotate", second.keyId]);
    expect(out.previousExpires).toBeGreaterThanOrEqual(before);
    expect(out.previousExpires).toBeLessThanOrEqual(Date.now());
    third = { keyId: out.keyId, rootKey: out.rootKey };
    expect((await row(second.keyId)).deletedAt).not.toBeNull();
    await poll();
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, second.rootKey), 401, "err:svc:authentication:key_not_found");
    expectOk(await h.post("/v2/apis.getApi", { apiId }, third.rootKey));
    // The first secret's grace period is its own: untouched by rotating its successor.
    expectOk(await h.post("/v2/apis.getApi", { apiId }, first.rootKey));
  });

  it("revoke: 401 key_not_found after the poll, and the key leaves the list", async () => {
    expect(await ok(["root-key", "revoke", third.keyId])).toEqual({ revoked: third.keyId });
    expect((await row(third.keyId)).deletedAt).not.toBeNull();
    await poll();
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, third.rootKey), 401, "err:svc:authentication:key_not_found");
    expect(await listed(workspace, third.keyId)).toBeUndefined();
  });

  // Newest first: every change above, the workspace `root-key create` made, and
  // the two APIs the key itself created (those are the root key's records, not the CLI's).
  const EXPECTED = () => [
    { action: "root_key.delete", about: [third.keyId], by: "cli" },
    { action: "root_key.rotate", about: [second.keyId, third.keyId], by: "cli" },
    { action: "root_key.rotate", about: [first.keyId, second.keyId], by: "cli" },
    { action: "root_key.update", about: [first.keyId], by: "cli" }, // set-expiry never
    { action: "root_key.update", about: [first.keyId], by: "cli" }, // set-expiry <time>
    { action: "root_key.update", about: [first.keyId], by: "cli" }, // set-permissions
    { action: "api.create", about: [], by: first.keyId }, // before-narrowing
    { action: "root_key.update", about: [first.keyId], by: "cli" }, // enable
    { action: "root_key.update", about: [first.keyId], by: "cli" }, // disable
    { action: "api.create", about: [apiId], by: first.keyId },
    { action: "root_key.create", about: [first.keyId], by: "cli" },
    { action: "workspace.create", about: [], by: "cli" },
  ];

  it("audit list: every change, newest first, by the actor system/cli", async () => {
    const page = await ok<AuditPage>(["audit", "list", "--workspace", workspace]);
    expect(page.cursor).toBeUndefined();
    const want = EXPECTED();
    expect(page.logs.map((l) => [l.action, l.actorType, l.actorId])).toEqual(want.map((w) => [w.action, w.by === "cli" ? "system" : "root_key", w.by]));
    page.logs.forEach((log, i) => {
      const ids = log.resources.map((r) => r.id);
      for (const id of want[i]?.about ?? []) expect(ids, `${log.action} #${i}`).toContain(id);
      if (i > 0) expect(log.time).toBeLessThanOrEqual(page.logs[i - 1]?.time ?? 0);
    });
    const ws = page.logs.at(-1);
    expect(ws?.resources).toEqual([{ type: "workspace", id: ws?.workspaceId }]);
    // --actor filters by actor id.
    const byCli = await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--actor", "cli"]);
    expect(byCli.logs.map((l) => l.id)).toEqual(page.logs.filter((l) => l.actorId === "cli").map((l) => l.id));
    expect((await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--actor", "key_someone_else"])).logs).toEqual([]);
  });

  it("audit list --action filters by action (one or a comma list)", async () => {
    const rotations = await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--action", "root_key.rotate"]);
    expect(rotations.logs.map((l) => l.action)).toEqual(["root_key.rotate", "root_key.rotate"]);
    expect(rotations.logs[0]?.resources.map((r) => r.id)).toEqual(expect.arrayContaining([second.keyId, third.keyId]));
    const two = await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--action", "root_key.rotate,root_key.delete"]);
    expect(two.logs.map((l) => l.action)).toEqual(["root_key.delete", "root_key.rotate", "root_key.rotate"]);
  });

  it("audit list --resource <keyId> gives that key's records only", async () => {
    const page = await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--resource", first.keyId]);
    expect(page.logs.map((l) => l.action)).toEqual(
      EXPECTED()
        .filter((w) => w.about.includes(first.keyId))
        .map((w) => w.action),
    );
    for (const log of page.logs) expect(log.resources.map((r) => r.id)).toContain(first.keyId);
    const third_ = await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--resource", third.keyId]);
    expect(third_.logs.map((l) => l.action)).toEqual(["root_key.delete", "root_key.rotate"]);
  });

  it("audit list --limit 1 gives a cursor; following --cursor walks the whole log once, newest first", async () => {
    const all = (await ok<AuditPage>(["audit", "list", "--workspace", workspace])).logs;
    const walked: AuditLog[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages <= all.length; pages++) {
      const page = await ok<AuditPage>(["audit", "list", "--workspace", workspace, "--limit", "1", ...(cursor === undefined ? [] : ["--cursor", cursor])]);
      expect(page.logs.length).toBeLessThanOrEqual(1);
      walked.push(...page.logs);
      if (pages === 0) expect(page.cursor, "the first page of many names the next").toEqual(expect.any(String));
      cursor = page.cursor;
      if (cursor === undefined) break;
    }
    expect(cursor, "the walk ends").toBeUndefined();
    expect(walked.map((l) => l.id)).toEqual(all.map((l) => l.id));
  }, 120_000);

  describe("usage errors exit 2 with a message, and change nothing", () => {
    let victim: { keyId: string; rootKey: string };
    const ws = uid("cli_rk_usage");

    beforeAll(async () => {
      victim = await ok<{ keyId: string; rootKey: string }>(["root-key", "create", "--workspace", ws, "--permissions", "apis.*.read_api"]);
    });

    it.each<[string, (keyId: string) => string[], RegExp]>([
      [
        "create with a past --expires (ISO)",
        () => ["root-key", "create", "--workspace", ws, "--permissions", "apis.*.read_api", "--expires", "2020-01-01T00:00:00Z"],
        /--expires/,
      ],
      [
        "create with a past --expires (ms)",
        () => ["root-key", "create", "--workspace", ws, "--permissions", "apis.*.read_api", "--expires", "1000"],
        /--expires/,
      ],
      [
        "create with an --expires that is no time",
        () => ["root-key", "create", "--workspace", ws, "--permissions", "apis.*.read_api", "--expires", "soon"],
        /--expires/,
      ],
      ["set-expiry to a past time", (k) => ["root-key", "set-expiry", k, "--expires", "2020-01-01T00:00:00Z"], /future/],
      ["set-expiry without --expires", (k) => ["root-key", "set-expiry", k], /--expires/],
      ["set-permissions without --permissions", (k) => ["root-key", "set-permissions", k], /--permissions/],
      ["set-permissions with a permission containing a space", (k) => ["root-key", "set-permissions", k, "--permissions", "apis.* read_api"], /permissions/],
      ["rotate --grace-ms -1", (k) => ["root-key", "rotate", k, "--grace-ms", "-1"], /--grace-ms/],
      ["rotate --grace-ms=-1", (k) => ["root-key", "rotate", k, "--grace-ms=-1"], /--grace-ms/],
      ["rotate --grace-ms that is no whole number", (k) => ["root-key", "rotate", k, "--grace-ms", "1.5"], /--grace-ms/],
      ["rotate --grace-ms over 30 days", (k) => ["root-key", "rotate", k, "--grace-ms", String(31 * 86_400_000)], /gracePeriodMs|grace/i],
      ["an unknown root-key flag", (k) => ["root-key", "disable", k, "--bogus"], /--bogus/],
      ["disable without a keyId", () => ["root-key", "disable"], /keyId/],
      ["enable without a keyId", () => ["root-key", "enable"], /keyId/],
      ["set-permissions without a keyId", () => ["root-key", "set-permissions", "--permissions", "apis.*.read_api"], /keyId/],
      ["set-expiry without a keyId", () => ["root-key", "set-expiry", "--expires", "never"], /keyId/],
      ["rotate without a keyId", () => ["root-key", "rotate"], /keyId/],
      ["revoke without a keyId", () => ["root-key", "revoke"], /keyId/],
      ["audit list with an unknown action", () => ["audit", "list", "--workspace", ws, "--action", "root_key.frobnicate"], /root_key\.frobnicate/],
      ["audit list with a --cursor it never gave", () => ["audit", "list", "--workspace", ws, "--cursor", "not-a-cursor"], /cursor/],
      ["audit list with --limit 0", () => ["audit", "list", "--workspace", ws, "--limit", "0"], /--limit/],
      ["audit list without --workspace", () => ["audit", "list"], /--workspace/],
      ["audit list with an unknown flag", () => ["audit", "list", "--workspace", ws, "--bogus", "1"], /--bogus/],
    ])("%s", async (_label, args, message) => {
      const stored = await row(victim.keyId);
      const before = await counts();
      const run = await fails(args(victim.keyId), 2, message);
      expect(run.stderr, "the usage text follows the message").toMatch(/usage:/i);
      expect(await row(victim.keyId)).toEqual(stored);
      expect(await counts()).toEqual(before);
    });
  });

  describe("an unknown keyId or workspace exits 1", () => {
    it.each<[string, string[]]>([
      ["disable", []],
      ["enable", []],
      ["set-permissions", ["--permissions", "apis.*.read_api"]],
      ["set-expiry", ["--expires", "never"]],
      ["rotate", ["--grace-ms", "1000"]],
      ["revoke", []],
    ])("root-key %s key_unknown -> exit 1 'no live root key'", async (sub, extra) => {
      const keyId = uid("key_unknown");
      await fails(["root-key", sub, keyId, ...extra], 1, new RegExp(`no live root key ${keyId}`));
    });

    it("a key revoked before (by rotation) is unknown to every change", async () => {
      await fails(["root-key", "enable", second.keyId], 1, /no live root key/);
      await fails(["root-key", "rotate", third.keyId], 1, /no live root key/);
    });

    it("audit list of a workspace that does not exist -> exit 1 'no workspace named'", async () => {
      await fails(["audit", "list", "--workspace", uid("cli_nowhere")], 1, /no workspace named/);
    });
  });
});
