// `keyhold admin create`: a dashboard operator from the command line, the
// password read from stdin (never a flag), stored as an scrypt string, and
// linked to a workspace (created when missing). The operator can then sign in.
import type { RowDataPacket } from "mysql2/promise";
import { beforeAll, describe, expect, it } from "vitest";
import { verifyPassword } from "../../src/domain/operators/password.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { ensureBuilt, type ProcessRun as Run, runScript } from "../server-process.js";

describe("keyhold admin create", () => {
  const h = useHarness();

  /** Runs the CLI with `input` piped to its stdin. */
  const cli = (args: string[], input: string): Promise<Run> =>
    runScript("bin/keyhold.js", args, { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: "silent" }, input);

  const operatorRow = async (email: string) => {
    const [rows] = await h.db.pool.query<RowDataPacket[]>("SELECT id, password_hash FROM operators WHERE email = ?", [email]);
    return rows[0];
  };

  beforeAll(() => ensureBuilt());

  it("creates an operator from a piped password, linked to a new workspace, who can then sign in", async () => {
    const email = `${uid("admin")}@Example.test`;
    const workspace = uid("dash_ws");
    const password = "a long enough passphrase";
    const run = await cli(["admin", "create", "--email", email, "--workspace", workspace, "--password-stdin"], `${password}\n`);
    expect(run.code, run.stderr).toBe(0);
    const out = JSON.parse(run.stdout.trim()) as { operatorId: string; email: string; workspaceId: string };
    expect(out).toEqual({ operatorId: expect.stringMatching(/^op_/), email: email.toLowerCase(), workspaceId: expect.stringMatching(/^ws_/) });
    expect(run.stdout + run.stderr).not.toContain(password);

    const row = await operatorRow(email.toLowerCase());
    expect(String(row?.password_hash)).toMatch(/^scrypt\$32768\$8\$1\$/);
    // The trailing newline of the pipe is not part of the password.
    expect(await verifyPassword(password, String(row?.password_hash))).toBe(true);
    const [links] = await h.db.pool.query<RowDataPacket[]>(
      "SELECT w.name FROM operator_workspaces ow JOIN workspaces w ON w.id = ow.workspace_id WHERE ow.operator_id = ?",
      [out.operatorId],
    );
    expect(links.map((l) => l.name)).toEqual([workspace]);

    const signIn = await h.app.inject({
      method: "POST",
      url: "/dashboard/api/sign-in",
      headers: { host: "localhost", origin: "http://localhost", "content-type": "application/json" },
      payload: JSON.stringify({ email, password }),
    });
    expect(signIn.statusCode, signIn.body).toBe(200);
    expect(JSON.parse(signIn.body).workspaces).toEqual([{ id: out.workspaceId, name: workspace }]);
  });

  it("links an existing workspace without creating another, and works without --workspace", async () => {
    const email = `${uid("admin")}@example.test`;
    const run = await cli(["admin", "create", "--email", email, "--password-stdin"], "another long passphrase");
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim())).toEqual({ operatorId: expect.stringMatching(/^op_/), email });

    const [ws] = await h.db.pool.query<RowDataPacket[]>("SELECT name FROM workspaces WHERE id = ?", [h.workspaceId]);
    const second = `${uid("admin")}@example.test`;
    const linked = await cli(["admin", "create", "--email", second, "--workspace", String(ws[0]?.name), "--password-stdin"], "yet another passphrase");
    expect(linked.code, linked.stderr).toBe(0);
    expect(JSON.parse(linked.stdout.trim()).workspaceId).toBe(h.workspaceId);
  });

  it("refuses a short password, a duplicate email, a bad email, and a password flag", async () => {
    const email = `${uid("admin")}@example.test`;
    const short = await cli(["admin", "create", "--email", email, "--password-stdin"], "short pass\n");
    expect(short.code).toBe(2);
    expect(short.stderr).toContain("at least 12 characters");
    expect(await operatorRow(email)).toBeUndefined();

    expect((await cli(["admin", "create", "--email", email, "--password-stdin"], "long enough password")).code).toBe(0);
    const dup = await cli(["admin", "create", "--email", email.toUpperCase(), "--password-stdin"], "long enough password");
    expect(dup.code).toBe(2);
    expect(dup.stderr).toContain("already exists");

    const bad = await cli(["admin", "create", "--email", "not-an-email", "--password-stdin"], "long enough password");
    expect(bad.code).toBe(2);
    const flag = await cli(["admin", "create", "--email", `x${email}`, "--password", "long enough password"], "");
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("--password");
    expect(await operatorRow(`x${email}`)).toBeUndefined();
  });

  it("without --password-stdin and no terminal, says how to pipe the password", async () => {
    const email = `${uid("admin")}@example.test`;
    const run = await cli(["admin", "create", "--email", email], "long enough password");
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("--password-stdin");
    expect(await operatorRow(email)).toBeUndefined();
  });
});
