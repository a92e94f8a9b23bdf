// The README's Python and Go gRPC clients ("A client in another language, from
// `proto/`"), run as a reader runs them, so that a wrong example fails the build:
// every file, template and command comes out of README.md itself (the blocks
// marked `<!-- readme-client: … -->`), the only change being the placeholder
// path of the keyhold checkout. Each program runs against keyhold as a real
// process, with a root key made by the README's own CLI line, and what it prints
// is checked exactly, and against the output the README shows.
//
// The toolchain is Debian's (APT below). Without it the client tests are skipped,
// saying so, except in CI, where they fail: .ci/run installs it.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { uid } from "../contract/shared/helpers.js";
import { describeRun, GO, GO_APT_PACKAGES, GOFMT, goEnv, missingGo, type Run, run } from "../go-toolchain.js";
import { dropDatabase, ROOT, runScript, type ServerProcess, startServer } from "../server-process.js";
import { markedBlocks, type ReadmeBlock, readmeSection, shellWords } from "./readme-blocks.js";

const SECTION = "### A client in another language, from `proto/`";
const MARKER = "readme-client";
/** What the reader replaces with their checkout; the test replaces it with this one. */
const PLACEHOLDER = "path/to/keyhold";
const APT =
  "apt-get install -y -q --no-install-recommends python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc " +
  `protoc-gen-go protoc-gen-go-grpc ${GO_APT_PACKAGES}`;
const EXPECTED_BLOCKS = [
  "root-key.sh",
  "python/buf.gen.python.yaml",
  "python/client.py",
  "python/commands.sh",
  "python/output.txt",
  "go/buf.gen.go.yaml",
  "go/main.go",
  "go/commands.sh",
  "go/output.txt",
];
// Debian's interpreter by path: the `python3` first on a developer's PATH may be
// a pyenv one without grpc (Go's is Debian's too, see go-toolchain.ts).
const PYTHON = "/usr/bin/python3";
const INVALID_INPUT = "err:svc:application:invalid_input";

type Lang = "python" | "go";

/** What `lang`'s client needs and this machine lacks (empty when it can run). */
function missingToolchain(lang: Lang): string[] {
  if (lang === "go") {
    const plugins = ["/usr/bin/protoc-gen-go", "/usr/bin/protoc-gen-go-grpc"].filter((p) => !existsSync(p));
    return [
      ...missingGo([
        "google.golang.org/grpc",
        "google.golang.org/genproto/googleapis/rpc/errdetails",
        "google.golang.org/protobuf",
        "github.com/golang/protobuf",
      ]),
      ...plugins,
    ];
  }
  const missing = [PYTHON, "/usr/bin/protoc", "/usr/bin/grpc_python_plugin"].filter((p) => !existsSync(p));
  if (lang === "python" && missing.length === 0 && spawnSync(PYTHON, ["-c", "import grpc, google.protobuf"]).status !== 0) {
    missing.push(`${PYTHON} without the grpc and google.protobuf modules`);
  }
  return missing;
}

const inCi = (process.env.CI ?? "") !== "";
const missing: Record<Lang, string[]> = { python: missingToolchain("python"), go: missingToolchain("go") };
/** Whether `lang`'s client test runs here (logs why not when it is skipped). */
function clientTestRuns(lang: Lang): boolean {
  const have = missing[lang].length === 0;
  if (!have && !inCi) console.log(`[tests] the README's ${lang} client is not run, missing ${missing[lang].join(", ")} (${APT})`);
  return have || inCi;
}
const runs: Record<Lang, boolean> = { python: clientTestRuns("python"), go: clientTestRuns("go") };

/** The block's lines that are commands (not blank, not comments). */
const commandLines = (block: ReadmeBlock) =>
  block.text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"));

/** The one substitution: the README's placeholder for the checkout, which must be there. */
function withCheckout(text: string, what: string): string {
  expect(text, `${what} names the checkout as ${PLACEHOLDER}`).toContain(PLACEHOLDER);
  return text.replaceAll(PLACEHOLDER, ROOT);
}

/** Writes `lang`'s files (every block `<lang>/<file>` but its commands and output) into `dir`. */
async function writeClientFiles(blocks: Map<string, ReadmeBlock>, lang: Lang, dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const block of blocks.values()) {
    const file = block.name.slice(lang.length + 1);
    if (!block.name.startsWith(`${lang}/`) || file === "commands.sh" || file === "output.txt") continue;
    const text = block.lang === "yaml" ? withCheckout(block.text, block.name) : block.text;
    await writeFile(path.join(dir, file), text);
  }
}

/** Runs a README `buf generate` line in `dir`, the checkout in place of the placeholder. */
async function bufGenerate(line: string, dir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const r = await run("sh", ["-c", withCheckout(line, line)], dir, env, 60_000);
  expect(r.code, `${line}\n${describeRun(r)}`).toBe(0);
}

/**
 * The program's output against the README's: the same number of lines, each
 * equal except where the README shortened it to `…`.
 */
function expectReadmeOutput(stdout: string, shown: ReadmeBlock): void {
  const actual = stdout.trimEnd().split("\n");
  const expected = shown.text.trimEnd().split("\n");
  const literal = (part: string) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = (l: string) => new RegExp(`^${l.split("…").map(literal).join(".+")}$`);
  expect(actual.length, `the README shows ${expected.length} lines:\n${shown.text}\nthe program printed:\n${stdout}`).toBe(expected.length);
  expected.forEach((l, i) => {
    expect(actual[i], `line ${i + 1} of ${shown.name}`).toMatch(pattern(l));
  });
}

/** What both programs print, in this order; only the spelling of `true` and of the status code differs. */
function expectClientOutput(stdout: string, spelling: { valid: string; invalidArgument: string }): void {
  const lines = stdout.trimEnd().split("\n");
  expect(
    lines.map((l) => l.slice(0, l.indexOf(":"))),
    stdout,
  ).toEqual(["verifyKey", "createKey", "ErrorDetail", "ErrorDetail error", "ErrorInfo", "BadRequest"]);
  const [verify = "", created = "", detail = "", detailError = "", info = "", badRequest = ""] = lines;
  expect(verify).toBe(`verifyKey: ${spelling.valid} VALID`);
  expect(created).toMatch(new RegExp(`^createKey: ${spelling.invalidArgument} \\S`));
  const [, code, requestId] = /^ErrorDetail: (\S+) (\S+)$/.exec(detail) ?? [];
  expect(code, detail).toBe(INVALID_INPUT);
  expect(requestId, detail).toMatch(/^req_\w+$/);
  expect(detailError).toMatch(/^ErrorDetail error: body\.apiId \S/);
  // ErrorInfo carries the same code and request id as ErrorDetail.
  expect(info).toBe(`ErrorInfo: ${INVALID_INPUT} keyhold ${requestId}`);
  // BadRequest names the field by its proto path, and so does its description.
  expect(badRequest).toMatch(/^BadRequest: api_id api_id \S/);
}

describe("README: clients generated from proto/ in another language", () => {
  const blocks = markedBlocks(readmeSection(SECTION), MARKER);
  const block = (name: string): ReadmeBlock => {
    const b = blocks.get(name);
    if (b === undefined) throw new Error(`README.md has no block marked ${MARKER}: ${name}`);
    return b;
  };

  it("marks every block the test runs", () => {
    expect([...blocks.keys()].sort()).toEqual([...EXPECTED_BLOCKS].sort());
  });

  describe.runIf(runs.python || runs.go)("run against keyhold", () => {
    // keyhold creates and migrates its database at start, as for any user.
    const database = `keyhold_t_${uid("readme_clients")}`;
    let keyhold: ServerProcess;
    let tmp: string;
    let env: NodeJS.ProcessEnv;

    beforeAll(async () => {
      const u = new URL(inject("mysqlServer"));
      u.pathname = `/${database}`;
      keyhold = await startServer(u.toString());
      tmp = await mkdtemp(path.join(os.tmpdir(), "keyhold-readme-clients-"));

      // The root key, made by the README's own line.
      const [cli = ""] = commandLines(block("root-key.sh"));
      const words = shellWords(cli);
      expect(words.slice(0, 2), cli).toEqual(["npx", "keyhold"]);
      const made = await runScript("bin/keyhold.js", words.slice(2), { ...process.env, DATABASE_URL: u.toString(), LOG_LEVEL: "silent" });
      expect(made.code, made.stderr).toBe(0);
      const { rootKey } = JSON.parse(made.stdout) as { rootKey: string };

      env = { ...process.env, PATH: `/usr/bin:${process.env.PATH ?? ""}`, KEYHOLD_GRPC: `127.0.0.1:${keyhold.grpcPort}`, KEYHOLD_ROOT_KEY: rootKey };
      // Debian's python3 finds its own packages; nothing from the caller's Python setup.
      delete env.PYTHONPATH;
      delete env.PYTHONHOME;
    });

    afterAll(async () => {
      await keyhold?.kill();
      if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
      await dropDatabase(inject("mysqlServer"), database);
    });

    it.runIf(runs.python)(
      "Python: buf.gen.python.yaml, the generate command and client.py, as the README shows them",
      async () => {
        if (missing.python.length > 0) throw new Error(`missing ${missing.python.join(", ")}: ${APT}`);
        const dir = path.join(tmp, "python");
        await writeClientFiles(blocks, "python", dir);
        let output: Run | undefined;
        for (const line of commandLines(block("python/commands.sh"))) {
          if (/\bbuf generate\b/.test(line)) await bufGenerate(line, dir, env);
          // Debian's python3 by its path (see PYTHON).
          else if (line === "python3 client.py") output = await run(PYTHON, ["client.py"], dir, env, 30_000);
          else throw new Error(`python/commands.sh: the test does not know how to run ${line}`);
        }
        if (output === undefined) throw new Error("python/commands.sh never runs client.py");
        expect(output.code, describeRun(output)).toBe(0);
        expectClientOutput(output.stdout, { valid: "True", invalidArgument: "INVALID_ARGUMENT" });
        expectReadmeOutput(output.stdout, block("python/output.txt"));
      },
      60_000,
    );

    it.runIf(runs.go)(
      "Go: buf.gen.go.yaml, the generate command and main.go, as the README shows them",
      async () => {
        if (missing.go.length > 0) throw new Error(`missing ${missing.go.join(", ")}: ${APT}`);
        const lines = commandLines(block("go/commands.sh"));
        const module = lines.map((l) => /^go mod init (\S+)$/.exec(l)?.[1]).find((m) => m !== undefined);
        if (module === undefined) throw new Error("go/commands.sh has no `go mod init <module>`");
        // The README's commands are module mode: `go mod tidy` fetches grpc-go from
        // the Go module proxy, which these machines cannot reach. The same files are
        // built in GOPATH mode instead, against Debian's Go sources, with the
        // program where GOPATH mode looks for its import path.
        const gopath = path.join(tmp, "gopath");
        const dir = path.join(gopath, "src", module);
        await writeClientFiles(blocks, "go", dir);
        let output: Run | undefined;
        for (const line of lines) {
          if (/\bbuf generate\b/.test(line)) await bufGenerate(line, dir, env);
          // GOPATH mode has no go.mod: nothing to init or tidy.
          else if (line.startsWith("go mod init ") || line === "go mod tidy") continue;
          else if (line === "go run .") output = await run(GO, ["run", "."], dir, goEnv(env, gopath), 270_000);
          else throw new Error(`go/commands.sh: the test does not know how to run ${line}`);
        }
        if (output === undefined) throw new Error("go/commands.sh never runs the program");
        expect(output.code, describeRun(output)).toBe(0);
        expectClientOutput(output.stdout, { valid: "true", invalidArgument: "InvalidArgument" });
        expectReadmeOutput(output.stdout, block("go/output.txt"));
        // The README's Go is gofmt's Go.
        const fmt = await run(GOFMT, ["-l", "main.go"], dir, env, 10_000);
        expect(fmt, "gofmt -l main.go lists it when it is not formatted").toEqual({ code: 0, stdout: "", stderr: "" });
      },
      300_000,
    );
  });
});
