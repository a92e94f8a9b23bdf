// Property-based bad input over gRPC (issue 7): every method gets generated
// messages (see grpc-arbitrary.ts) as raw bytes through grpc-js, and answers OK
// or a client-error status (never INTERNAL or UNKNOWN, never a hang) with the
// err:svc code in `error-code`; an invalid_input names the fields in its
// ErrorDetail; a rejected call leaves every table as it was. Malformed wire
// bytes must be refused the same way.
// FUZZ_SEED, FUZZ_RUNS, FUZZ_ONLY and FUZZ_PATH: see guard.ts.
import type { DescMessage } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorDetailOf } from "../grpc-client.js";
import { useHarness } from "../harness.js";
import { clip } from "./body.js";
import { encode, encodeMalformed, type GrpcCase, grpcCaseArb, type Malformed, malformedArb, resolveInit } from "./grpc-arbitrary.js";
import {
  ANSWER_WITHIN_MS,
  allOperations,
  DataGuard,
  fuzz,
  OPERATION_TIMEOUT_MS,
  type Operation,
  operations,
  settings,
  summary,
  type Tally,
  within,
} from "./guard.js";
import { Worlds } from "./world.js";

interface Answer {
  code: grpc.status;
  details: string;
  metadata: grpc.Metadata | undefined;
}

/** Client-error statuses: what a request that is itself wrong may get. */
const REFUSALS = new Set([
  grpc.status.INVALID_ARGUMENT,
  grpc.status.NOT_FOUND,
  grpc.status.ALREADY_EXISTS,
  grpc.status.PERMISSION_DENIED,
  grpc.status.UNAUTHENTICATED,
  grpc.status.FAILED_PRECONDITION,
  grpc.status.RESOURCE_EXHAUSTED,
  grpc.status.OUT_OF_RANGE,
]);

const identity = (b: Buffer): Buffer => b;

function send(client: grpc.Client, path: string, bytes: Buffer, rootKey: string): Promise<Answer> {
  const md = new grpc.Metadata();
  md.set("authorization", `Bearer ${rootKey}`);
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, identity, bytes, md, { deadline: Date.now() + ANSWER_WITHIN_MS }, (err) => {
      resolve(err ? { code: err.code, details: err.details, metadata: err.metadata } : { code: grpc.status.OK, details: "", metadata: undefined });
    });
  });
}

/**
 * OK, or a client-error status with the error code, and field locations for
 * invalid_input (`body` itself only for bytes that may not decode).
 */
function checkAnswer(op: Operation, a: Answer, malformed: boolean): void {
  const show = `${grpc.status[a.code]} ${clip(a.details, 500)}`;
  if (a.code === grpc.status.OK) return;
  expect(REFUSALS.has(a.code), `not a client-error status: ${show}`).toBe(true);
  const code = a.metadata?.get("error-code")[0];
  expect(code, `no error-code metadata: ${show}`).toMatch(/^err:/);
  if (code !== "err:svc:application:invalid_input") return;
  const bin = a.metadata?.get("grpc-status-details-bin")[0];
  expect(bin, `no grpc-status-details-bin: ${show}`).toBeInstanceOf(Buffer);
  const detail = errorDetailOf(bin as Buffer);
  const errors = detail?.errors ?? [];
  expect(errors.length, `invalid_input without errors: ${show}`).toBeGreaterThan(0);
  // Only the request's own fields can be wrong, or (`body`) bytes that do not decode or carry fields it does not have.
  const fields = new Set(op.input.fields.map((f) => f.jsonName));
  const names = (location: string) => (malformed && location === "body") || fields.has(/^body\.([A-Za-z_$][\w$]*)/.exec(location)?.[1] ?? "");
  const bad = errors.find((e) => e.message === "" || !names(e.location));
  expect(bad, `an error without a message or naming no field of the request: ${show} ${JSON.stringify(errors)}`).toBeUndefined();
}

describe("gRPC bad input, every method", () => {
  const h = useHarness();
  let worlds: Worlds;
  let guard: DataGuard;
  let client: grpc.Client;
  const tally: Tally = { operations: 0, tried: 0, accepted: 0, rejected: 0 };

  beforeAll(async () => {
    worlds = await Worlds.seed(h);
    guard = await DataGuard.open(h);
    client = new grpc.Client(`127.0.0.1:${await h.grpcPort()}`, grpc.credentials.createInsecure(), { "grpc.max_receive_message_length": -1 });
  });

  afterAll(async () => {
    client?.close();
    await guard?.close();
    if (tally.operations > 0) console.log(summary("grpc", tally));
  });

  /** Sends the bytes; checks the answer and, for a refusal, that no table changed. */
  async function attempt(op: Operation, bytes: Buffer, malformed = false): Promise<Answer> {
    const { result: a, changed } = await guard.run(
      () => within(send(client, op.grpcPath, bytes, worlds.w.rootKey), op.grpcPath),
      (r) => r.code !== grpc.status.OK,
    );
    tally.tried++;
    checkAnswer(op, a, malformed);
    if (a.code === grpc.status.OK) {
      tally.accepted++;
      if (op.path.includes(".delete")) await worlds.repair();
    } else {
      tally.rejected++;
      expect(changed, `a refused call (${grpc.status[a.code]} ${clip(a.details, 300)}) changed stored data`).toEqual([]);
    }
    return a;
  }

  const ops = operations();
  it.skipIf(settings.only !== undefined)("fuzzes the methods of every registered service", () => {
    expect(ops.length).toBeGreaterThan(0);
    for (const op of ops) expect(op.grpcPath).toMatch(/^\/keyhold\.v2\.\w+Service\/\w+$/);
  });

  const showCase = (input: DescMessage) => (c: GrpcCase) => {
    let shown: string;
    try {
      shown = clip(JSON.stringify(resolveInit(c.init, worlds.w), (_k, v) => (typeof v === "bigint" ? `${v}n` : v)));
    } catch {
      shown = "(unprintable)";
    }
    return `${c.reencode.kind === "none" ? "" : `${JSON.stringify(c.reencode)} `}${input.typeName} ${shown}`;
  };

  for (const op of ops) {
    it(op.grpcPath, { timeout: OPERATION_TIMEOUT_MS }, async () => {
      tally.operations++;
      const check = async (c: GrpcCase) => {
        const unknown = c.reencode.kind === "unknown" ? c.reencode.field : undefined;
        const a = await attempt(op, encode(op.input, c, worlds.w), unknown !== undefined);
        if (unknown === undefined) return;
        // A field this server does not know is refused, never dropped: as on the JSON door, where a
        // misspelt restriction must not create a key without it.
        expect(a.code, `${grpc.status[a.code]} ${clip(a.details, 300)}`).toBe(grpc.status.INVALID_ARGUMENT);
        expect(a.metadata?.get("error-code")[0]).toBe("err:svc:application:invalid_input");
        expect(a.details).toContain(`field number ${unknown}`);
      };
      await fuzz("gRPC", op.path, grpcCaseArb(op.input), check, showCase(op.input));
    });
  }

  it("malformed protobuf bytes are refused as invalid input on every method", { timeout: OPERATION_TIMEOUT_MS }, async () => {
    const all = allOperations();
    const arb = fc.record({ op: fc.constantFrom(...all), bad: malformedArb });
    // Undecodable bytes are the caller's error, not the server's: the same checks as any other call.
    const check = async ({ op, bad }: { op: Operation; bad: Malformed }) => void (await attempt(op, encodeMalformed(op.input, bad), true));
    await fuzz("gRPC", "malformed", arb, check, ({ op, bad }) => `${op.grpcPath} ${JSON.stringify(bad, (_k, v) => (v instanceof Uint8Array ? [...v] : v))}`);
  });
});
