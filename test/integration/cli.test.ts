// The `keyhold` command line (bin/keyhold.js -> dist/src/cli/main.js) against the
// harness's own database: one JSON line on stdout per command, progress on
// stderr, usage errors exit 2. Root keys it creates work against the server; a
// revoke reaches a running server through the cache_invalidations table.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { expectError, expectOk, show, uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { runScript } from "../server-process.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe("keyhold CLI", () => {
  const h = useHarness();

  const cli = (args: string[]): Promise<Run> => runScript("bin/keyhold.js", args, { ...process.env, DATABASE_URL: h.config.databaseUrl, LOG_LEVEL: "silent" });

  /** Exactly one line on stdout, and it is JSON. */
  function jsonLine(run: Run): Record<string, unknown> {
    const msg = `exit ${run.code}\nstdout: ${run.stdout}\nstderr: ${run.stderr}`;
    expect(run.code, msg).toBe(0);
    const lines = run.stdout.split("\n").filter((l) => l !== "");
    expect(lines, msg).toHaveLength(1);
    expect(run.stdout.endsWith("\n"), msg).toBe(true);
    return JSON.parse(lines[0] as string) as Record<string, unknown>;
  }

  beforeAll(() => {
    if (!existsSync(path.join(ROOT, "dist", "src", "cli", "main.js"))) {
      execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
    }
  }, 300_000);

  it("root-key create prints one JSON line {workspaceId, keyId, rootKey} and the key works", async () => {
    const workspace = uid("cli_ws");
    const out = jsonLine(await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.create_api"]));
    expect(Object.keys(out).sort()).toEqual(["keyId", "rootKey", "workspaceId"]);
    expect(out.workspaceId).toMatch(/^ws_/);
    expect(out.keyId).toMatch(/^key_/);
    expect(out.rootKey).toMatch(/^svc_\S+$/);
    // The new root key authenticates against the server, with exactly its permissions.
    const rk = out.rootKey as string;
    const created = await h.post("/v2/apis.createApi", { name: "from-cli" }, rk);
    const apiId = expectOk(created).apiId as string;
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, rk), 403, "err:svc:authorization:insufficient_permissions");
  });

  it("the same workspace name reuses its workspaceId; another name gets another one", async () => {
    const workspace = uid("cli_same");
    const a = jsonLine(await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.read_api"]));
    const b = jsonLine(await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.create_api,apis.*.read_api"]));
    const c = jsonLine(await cli(["root-key", "create", "--workspace", `${workspace}_x`, "--permissions", "apis.*.read_api"]));
    expect(b.workspaceId).toBe(a.workspaceId);
    expect(c.workspaceId).not.toBe(a.workspaceId);
    expect(b.rootKey).not.toBe(a.rootKey);
    expect(b.keyId).not.toBe(a.keyId);
    // Keys of one workspace see its APIs; keys of the other do not.
    const apiId = expectOk(await h.post("/v2/apis.createApi", { name: "shared" }, b.rootKey as string)).apiId as string;
    expectOk(await h.post("/v2/apis.getApi", { apiId }, a.rootKey as string));
    expectError(h, await h.post("/v2/apis.getApi", { apiId }, c.rootKey as string), 404, "err:svc:data:api_not_found");
  });

  it("root-key list shows the workspace's live keys without their secrets", async () => {
    const workspace = uid("cli_list");
    const a = jsonLine(await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.read_api"]));
    const b = jsonLine(await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.create_api", "--name", "deploy"]));
    const run = await cli(["root-key", "list", "--workspace", workspace]);
    const out = jsonLine(run);
    const keys = out.keys as Array<{ keyId: string; permissions: string[] }>;
    expect(keys.map((k) => k.keyId).sort()).toEqual([a.keyId, b.keyId].sort());
    expect(keys.find((k) => k.keyId === b.keyId)?.permissions).toEqual(["apis.*.create_api"]);
    expect(run.stdout.includes(a.rootKey as string) || run.stdout.includes(b.rootKey as string), "list must not print root keys").toBe(false);
  });

  it("root-key revoke: after the server's next invalidation poll the key is 401 key_not_found", async () => {
    const workspace = uid("cli_revoke");
    const created = jsonLine(await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.create_api"]));
    const rk = created.rootKey as string;
    expectOk(await h.post("/v2/apis.createApi", { name: "before-revoke" }, rk)); // now cached by the server
    const revoked = jsonLine(await cli(["root-key", "revoke", created.keyId as string]));
    expect(revoked).toEqual({ revoked: created.keyId });
    await h.runtime.invalidations.poll();
    const res = await h.post("/v2/apis.createApi", { name: "after-revoke" }, rk);
    expectError(h, res, 401, "err:svc:authentication:key_not_found");
    // It is gone from the list too, and a second revoke fails (exit 1, message on stderr, nothing on stdout).
    const list = jsonLine(await cli(["root-key", "list", "--workspace", workspace]));
    expect((list.keys as unknown[]).length, show(res)).toBe(0);
    const again = await cli(["root-key", "revoke", created.keyId as string]);
    expect(again.code).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toMatch(/\S/);
  });

  it.each<[string, string[]]>([
    ["no command", []],
    ["an unknown command", ["frobnicate"]],
    ["root-key without a subcommand", ["root-key"]],
    ["an unknown root-key subcommand", ["root-key", "rotate"]],
    ["create without --workspace", ["root-key", "create", "--permissions", "apis.*.read_api"]],
    ["create without --permissions", ["root-key", "create", "--workspace", "w"]],
    ["create with an empty --permissions", ["root-key", "create", "--workspace", "w", "--permissions", " , "]],
    ["create with a permission containing a space", ["root-key", "create", "--workspace", "w", "--permissions", "apis.* create_api"]],
    ["create with a --name over 256 characters", ["root-key", "create", "--workspace", "w", "--permissions", "apis.*.read_api", "--name", "n".repeat(257)]],
    ["list without --workspace", ["root-key", "list"]],
    ["revoke without a keyId", ["root-key", "revoke"]],
  ])("bad usage (%s) -> exit 2 with a usage message on stderr and nothing on stdout", async (_label, args) => {
    const run = await cli(args);
    expect(run.code, `stderr: ${run.stderr}`).toBe(2);
    expect(run.stderr).toMatch(/usage:/i);
    expect(run.stderr).toContain("root-key create");
    expect(run.stdout).toBe("");
  });

  it("bad usage creates nothing", async () => {
    const workspace = uid("cli_nothing");
    expect((await cli(["root-key", "create", "--workspace", workspace, "--permissions", "bad perm"])).code).toBe(2);
    expect((await cli(["root-key", "create", "--workspace", workspace, "--permissions", "apis.*.read_api", "--name", "n".repeat(257)])).code).toBe(2);
    const list = jsonLine(await cli(["root-key", "list", "--workspace", workspace]));
    expect(list.keys).toEqual([]);
  });
});
