// Debian's Go toolchain, for the tests that build and run Go programs against
// keyhold (the README's Go client, the reflection client): where it is, what is
// missing, and the environment that builds without the Go module proxy, which
// these machines cannot reach.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// Debian's compiler by path: it is the one that matches the Go sources in GOCODE.
export const GO = "/usr/bin/go";
export const GOFMT = "/usr/bin/gofmt";
/** Debian's Go sources (golang-*-dev packages), a GOPATH entry. */
export const GOCODE = "/usr/share/gocode";
/** The Debian packages that give GO and the Go sources these tests import. */
export const GO_APT_PACKAGES = "golang-go golang-google-grpc-dev golang-github-golang-protobuf-1-5-dev";
// Go's first build of grpc takes a while; its compiled packages are kept between runs.
const GOCACHE = path.join(os.tmpdir(), "keyhold-go-cache");

/** What of GO, GOFMT and these import paths under GOCODE this machine lacks (empty when a test can build). */
export function missingGo(importPaths: string[]): string[] {
  return [GO, GOFMT, ...importPaths.map((p) => `${GOCODE}/src/${p}`)].filter((p) => !existsSync(p));
}

/**
 * `env` set to build in GOPATH mode against Debian's sources: `gopath` first (a
 * program lives in `<gopath>/src/<its import path>`), no go.mod, no proxy, and
 * the shared build cache.
 */
export function goEnv(env: NodeJS.ProcessEnv, gopath: string): NodeJS.ProcessEnv {
  return { ...env, GO111MODULE: "off", GOPATH: `${gopath}:${GOCODE}`, GOPROXY: "off", GOFLAGS: "", GOCACHE };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`); never rejects, the caller asserts on the result. */
export function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], timeout: timeoutMs, killSignal: "SIGKILL" });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", (e) => resolve({ code: null, stdout, stderr: `${stderr}${e.message}` }));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

export const describeRun = (r: Run) => `exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`;
