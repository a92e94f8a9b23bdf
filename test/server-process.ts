// A real keyhold server as a child process (dist/src/main.js, built by `npm test`
// before vitest runs), for tests that need what an in-process server cannot show:
// kill -9, SIGTERM draining, what the process writes to stdout/stderr.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import mysql from "mysql2/promise";

export const ROOT = path.resolve(import.meta.dirname, "..");
const MAIN = path.join(ROOT, "dist", "src", "main.js");

/** Builds dist/ when it is missing (a vitest run started without `npm test`). */
export function ensureBuilt(): void {
  if (!existsSync(MAIN)) execFileSync("npm", ["run", "build", "--silent"], { cwd: ROOT, stdio: "inherit" });
}

export interface ServerProcess {
  /** http://127.0.0.1:<port> */
  url: string;
  port: number;
  grpcPort: number;
  proc: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (or signal name) when the process ends. */
  exited: Promise<number | string>;
  /** SIGKILL if still running; resolves when gone. */
  kill(): Promise<void>;
}

/**
 * Starts the server on free ports against `databaseUrl` and waits until it says
 * it is serving. `env` adds or overrides variables (LOG_LEVEL defaults to info).
 */
export async function startServer(databaseUrl: string, env: Record<string, string> = {}, timeoutMs = 30_000): Promise<ServerProcess> {
  ensureBuilt();
  const proc = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: "info", ...env, DATABASE_URL: databaseUrl, PORT: env.PORT ?? "0", GRPC_PORT: env.GRPC_PORT ?? "0", HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  proc.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | string>((resolve) => proc.once("exit", (code, signal) => resolve(code ?? signal ?? "unknown")));
  const started = Date.now();
  for (;;) {
    const line = out.split("\n").find((l) => l.includes('"keyhold is serving"'));
    if (line !== undefined) {
      const rec = JSON.parse(line) as { port: number; grpcPort: number };
      return {
        url: `http://127.0.0.1:${rec.port}`,
        port: rec.port,
        grpcPort: rec.grpcPort,
        proc,
        output: () => out,
        exited,
        kill: async () => {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
          await exited;
        },
      };
    }
    if (proc.exitCode !== null || Date.now() - started > timeoutMs) {
      if (proc.exitCode === null) proc.kill("SIGKILL");
      throw new Error(`keyhold did not start (exit ${proc.exitCode}):\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface ProcessRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a node script of the checkout (e.g. bin/keyhold.js) to its end with exactly this environment, and `input` on its stdin. */
export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, script), ...args], {
      cwd: ROOT,
      env,
      stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
    });
    child.stdin?.end(input);
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** This process's environment without the key-encryption settings (so a test states its own). */
export function envWithoutKeys(): NodeJS.ProcessEnv {
  const base = { ...process.env };
  for (const name of ["KEYHOLD_ENCRYPTION_KEY", "KEYHOLD_PREVIOUS_ENCRYPTION_KEYS", "KEYHOLD_ENV", "NODE_ENV"]) delete base[name];
  return base;
}

/** Drops a database a server process was started on (serverUrl: the MySQL server, without a database). */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  const conn = await mysql.createConnection(serverUrl);
  try {
    await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await conn.end();
  }
}
