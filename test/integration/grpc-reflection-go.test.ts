// gRPC server reflection as Go tools use it. grpcurl and most reflection-based
// tools are Go programs that build descriptors with google.golang.org/protobuf's
// protodesc, which rejects more than Node's loaders (grpc-reflection.test.ts):
// an unresolvable name or a declared import that never arrives is an error. Since
// grpcurl is not packaged in Debian, test/fixtures/go-reflection/main.go does
// what it does, built from Debian's Go packages: it lists the services, builds
// each one's descriptors strictly (as `grpcurl describe` does), calls VerifyKey
// with a dynamic message, and decodes a failed GetKey's details with types
// fetched by reflection.
//
// Without Go (see go-toolchain.ts) the test is skipped, saying so, except in CI,
// where it fails.
import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { uid } from "../contract/shared/helpers.js";
import { describeRun, GO, GO_APT_PACKAGES, GOFMT, goEnv, missingGo, type Run, run } from "../go-toolchain.js";
import { KEYHOLD_SERVICES } from "../grpc-client.js";
import { dropDatabase, ROOT, runScript, type ServerProcess, startServer } from "../server-process.js";

const PROGRAM = path.join(ROOT, "test", "fixtures", "go-reflection", "main.go");
/** Where GOPATH mode finds the program (any path will do; it imports nothing of its own). */
const IMPORT_PATH = "keyhold.test/go-reflection";
const missing = missingGo([
  "google.golang.org/grpc/reflection/grpc_reflection_v1alpha",
  "google.golang.org/genproto/googleapis/rpc/status",
  "google.golang.org/protobuf/reflect/protodesc",
  "google.golang.org/protobuf/types/dynamicpb",
  "github.com/golang/protobuf",
]);
const inCi = (process.env.CI ?? "") !== "";
const runs = missing.length === 0 || inCi;
if (!runs) console.log(`[tests] the Go reflection client is not run, missing ${missing.join(", ")} (apt-get install ${GO_APT_PACKAGES})`);

const KEY_NOT_FOUND = "err:svc:data:key_not_found";

/** A string field of a message printed by prototext (which may space its output differently from run to run). */
const textField = (text: string, name: string) => new RegExp(`\\b${name}:\\s*"([^"]*)"`).exec(text)?.[1];

describe.runIf(runs)("gRPC reflection from Go: protodesc builds what keyhold sends", () => {
  // keyhold creates and migrates its database at start, as for any user.
  const database = `keyhold_t_${uid("grpc_reflection_go")}`;
  let keyhold: ServerProcess;
  let tmp: string;
  let output: Run;
  /** The program's lines starting with `prefix: `, without it. */
  const lines = (prefix: string) =>
    output.stdout
      .split("\n")
      .filter((l) => l.startsWith(`${prefix}: `))
      .map((l) => l.slice(prefix.length + 2));

  beforeAll(async () => {
    if (missing.length > 0) throw new Error(`missing ${missing.join(", ")}: apt-get install ${GO_APT_PACKAGES}`);
    const u = new URL(inject("mysqlServer"));
    u.pathname = `/${database}`;
    keyhold = await startServer(u.toString());
    const made = await runScript(
      "bin/keyhold.js",
      ["root-key", "create", "--workspace", uid("reflection"), "--permissions", "apis.*.create_api,apis.*.create_key,apis.*.verify_key,apis.*.read_key"],
      { ...process.env, DATABASE_URL: u.toString(), LOG_LEVEL: "silent" },
    );
    expect(made.code, made.stderr).toBe(0);
    const { rootKey } = JSON.parse(made.stdout) as { rootKey: string };
    const post = async (op: string, body: unknown) => {
      const res = await fetch(`${keyhold.url}/v2/${op}`, {
        method: "POST",
        headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { data: Record<string, string> };
      expect(res.status, JSON.stringify(json)).toBe(200);
      return json.data;
    };
    const { apiId } = await post("apis.createApi", { name: uid("reflection") });
    const { key } = await post("keys.createKey", { apiId });

    tmp = await mkdtemp(path.join(os.tmpdir(), "keyhold-go-reflection-"));
    const gopath = path.join(tmp, "gopath");
    const dir = path.join(gopath, "src", IMPORT_PATH);
    await mkdir(dir, { recursive: true });
    await copyFile(PROGRAM, path.join(dir, "main.go"));
    const env = goEnv({ ...process.env, PATH: `/usr/bin:${process.env.PATH ?? ""}` }, gopath);
    const built = await run(GO, ["build", "-o", path.join(tmp, "go-reflection"), "."], dir, env, 270_000);
    expect(built.code, describeRun(built)).toBe(0);
    output = await run(
      path.join(tmp, "go-reflection"),
      [],
      tmp,
      { ...env, KEYHOLD_GRPC: `127.0.0.1:${keyhold.grpcPort}`, KEYHOLD_ROOT_KEY: rootKey, KEYHOLD_KEY: key },
      30_000,
    );
  }, 300_000);

  afterAll(async () => {
    await keyhold?.kill();
    if (tmp !== undefined) await rm(tmp, { recursive: true, force: true });
    await dropDatabase(inject("mysqlServer"), database);
  });

  it("runs to its end: every descriptor builds with protodesc, no unresolvable name", () => {
    expect(output.code, describeRun(output)).toBe(0);
    expect(output.stderr).toBe("");
  });

  it("lists the gRPC port's services, and not the Connect-only dashboard", () => {
    expect(lines("service")).toEqual(["grpc.health.v1.Health", ...KEYHOLD_SERVICES]);
  });

  // The health service's file included: grpc-health-check's own, as proto-loader
  // rebuilds it, names the entry of `map<string, HealthCheckResponse> statuses`
  // "Statuses" instead of "StatusesEntry", and protodesc refused it ('message
  // field "grpc.health.v1.HealthListResponse.statuses" is an invalid map:
  // incorrect implicit map entry name'); keyhold now serves its own copy.
  it("builds each listed service's descriptors alone, as grpcurl describes one", () => {
    expect(lines("describe"), describeRun(output)).toEqual(["grpc.health.v1.Health", ...KEYHOLD_SERVICES].map((s) => `${s} ok`));
  });

  it("calls VerifyKey with messages built from the reflected descriptors", () => {
    expect(lines("verify"), describeRun(output)).toEqual(["valid=true code=VALID"]);
  });

  it("decodes a failed call's details with types resolved by reflection", () => {
    expect(lines("getKey"), describeRun(output)).toEqual(["NotFound"]);
    const details = lines("detail");
    expect(
      details.map((d) => d.split(" ")[0]),
      describeRun(output),
    ).toEqual(["keyhold.v2.ErrorDetail", "google.rpc.ErrorInfo"]);
    const [detail = "", info = ""] = details;
    expect(textField(detail, "code")).toBe(KEY_NOT_FOUND);
    const requestId = textField(detail, "request_id");
    expect(requestId, detail).toMatch(/^req_\w+$/);
    expect(textField(info, "reason")).toBe(KEY_NOT_FOUND);
    expect(textField(info, "domain")).toBe("keyhold");
    // ErrorInfo's metadata is a map: one entry, the same request id as ErrorDetail's.
    expect(info.match(/\bmetadata:/g)?.length, info).toBe(1);
    expect(info, info).toMatch(new RegExp(`\\bmetadata:\\s*\\{\\s*key:\\s*"requestId"\\s+value:\\s*"${requestId}"\\s*\\}`));
  });

  // Each answer holds the file asked for and the imports the stream has not sent
  // yet; grpcurl asks for a missing one by name, but keyhold sends every import a
  // file declares (options-only ones included), so no tool has to.
  it("never has to fetch an import keyhold left out", () => {
    expect(output.stdout).toContain("verify: ");
    expect(output.stdout).not.toContain("fetched missing import");
  });

  it("is gofmt's Go", async () => {
    const fmt = await run(GOFMT, ["-l", PROGRAM], tmp, process.env, 10_000);
    expect(fmt, "gofmt -l lists main.go when it is not formatted").toEqual({ code: 0, stdout: "", stderr: "" });
  });
});
