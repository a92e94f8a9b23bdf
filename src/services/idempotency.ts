// Idempotency-Key: a mutating request sent with the header runs at most once per
// workspace and key while its record lives; a retry of the same request gets the
// first response again (credits spent once, one rate-limit decision, one key).
// Every front door passes the header in the Call, so JSON, Connect and gRPC
// callers share records. Records belong to the root key that made them (another
// root key, even of the same workspace, never gets its answers), and responses
// are stored encrypted by the workspace's data key: a createKey answer holds the
// new plaintext key. Only successes are kept: a request that failed changed
// nothing, so its retry simply runs.

import { hash } from "node:crypto";
import { create, type DescMessage, type DescService, fromBinary, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import { AppError, invalidInput } from "../core/errors.js";
import type { Deps } from "../domain/deps.js";
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  findIdempotencyRecord,
  type IdempotencyScope,
  releaseIdempotencyKey,
  sweepIdempotencyRecords,
} from "../storage/idempotency.js";
import type { Answer, Call, ServiceEntry } from "./types.js";

/** Operations that change nothing: the header is accepted and has no effect. */
export const isReadOnly = (method: string): boolean => /^(get|list)[A-Z]/.test(method) || method === "whoami";

/** Visible ASCII and inner spaces, 1 to 255 characters. */
export const KEY_FORMAT = /^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/;

const SWEEP_EVERY_MS = 60_000;
const SWEEP_BATCH = 1_000;
const sweptAt = new WeakMap<Deps, number>();

const sha256 = (data: string | Uint8Array): string => hash("sha256", data, "hex");

/** Wraps every mutating operation of every service with Idempotency-Key handling. */
export function withIdempotency(deps: Deps, entries: ServiceEntry[]): ServiceEntry[] {
  return entries.map(({ service, ops }) => ({ service, ops: wrapOps(deps, service, ops) }));
}

function wrapOps(deps: Deps, service: DescService, ops: ServiceEntry["ops"]): ServiceEntry["ops"] {
  const wrapped: ServiceEntry["ops"] = { ...ops };
  for (const method of service.methods) {
    const op = ops[method.localName];
    if (op === undefined || isReadOnly(method.localName)) continue;
    const operation = `${service.typeName}/${method.name}`;
    wrapped[method.localName] = (req, call) =>
      call.idempotencyKey === undefined ? op(req, call) : once(deps, operation, method.input, method.output, op, req, call, call.idempotencyKey);
  }
  return wrapped;
}

async function once(
  deps: Deps,
  operation: string,
  input: DescMessage,
  output: DescMessage,
  // biome-ignore lint/suspicious/noExplicitAny: operations of different shapes
  op: (req: any, call: Call) => Answer<any>,
  req: unknown,
  call: Call,
  key: string,
): Promise<unknown> {
  if (!KEY_FORMAT.test(key)) {
    throw invalidInput([
      {
        location: "header.idempotency-key",
        message: "Idempotency-Key must be 1 to 255 visible ASCII characters (inner spaces allowed).",
        fix: "Send a fresh UUID per logical request.",
      },
    ]);
  }
  const scope: IdempotencyScope = { workspaceId: call.principal.workspaceId, rootKeyId: call.principal.rootKeyId, keyHash: sha256(key) };
  const requestHash = sha256(canonicalJson(toJson(input, create(input, req as never))));
  const now = deps.clock.now();
  sweepNowAndThen(deps, now);

  for (let attempt = 0; attempt < 3; attempt++) {
    const claimed = await claimIdempotencyKey(deps.pool, scope, { operation, requestHash, now, expiresAt: now + deps.idempotencyTtlMs });
    if (claimed) return run(deps, output, op, req, call, scope);
    const prior = await findIdempotencyRecord(deps.pool, scope, now);
    if (prior === undefined) continue; // released or expired between the two statements: claim again
    if (prior.operation !== operation || prior.requestHash !== requestHash) {
      throw new AppError(
        "err:user:unprocessable_entity:idempotency_key_reused",
        `This Idempotency-Key was used for a different request (${prior.operation === operation ? "other fields" : prior.operation}). Use a new key for a new request.`,
      );
    }
    if (!prior.done || prior.response === undefined) {
      throw new AppError(
        "err:user:conflict:idempotency_key_in_use",
        "A request with this Idempotency-Key is still running, or was interrupted by a restart of the server. Retry later, or check the outcome with a read before using a new key.",
      );
    }
    const stored = await deps.vault.decrypt(scope.workspaceId, prior.response.encrypted, prior.response.encryptionKeyId);
    call.replayed = true;
    return fromBinary(output, Buffer.from(stored, "base64"));
  }
  throw new AppError("err:svc:application:service_unavailable", "The Idempotency-Key could not be claimed; try again.");
}

async function run(
  deps: Deps,
  output: DescMessage,
  // biome-ignore lint/suspicious/noExplicitAny: operations of different shapes
  op: (req: any, call: Call) => Answer<any>,
  req: unknown,
  call: Call,
  scope: IdempotencyScope,
): Promise<unknown> {
  let response: unknown;
  try {
    response = await op(req, call);
  } catch (err) {
    // A refusal (an AppError) changed nothing: its retry may run. Anything else
    // (a lost connection, a statement timed out after its COMMIT reached the
    // server) leaves the outcome unknown: the claim stays, and retries answer 409
    // rather than risk doing it twice.
    if (err instanceof AppError) {
      await releaseIdempotencyKey(deps.pool, scope).catch((e: unknown) => {
        deps.log.error({ err: e, requestId: call.requestId }, "could not release an idempotency key; retries answer 409 until it expires");
      });
    }
    throw err;
  }
  // The response as the client will see it on a replay too: the full message.
  const message = create(output, response as never);
  try {
    const encrypted = await deps.vault.encrypt(scope.workspaceId, Buffer.from(toBinary(output, message)).toString("base64"));
    await completeIdempotencyKey(deps.pool, scope, encrypted);
  } catch (err) {
    // The change is made: answer it. A retry gets 409 rather than running twice.
    deps.log.error({ err, requestId: call.requestId }, "could not record an idempotent response; retries answer 409 until it expires");
  }
  return message;
}

/** JSON with object keys sorted at every level: the same request whatever order its maps (meta) were sent in. */
function canonicalJson(v: JsonValue): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(",")}]`;
  if (v !== null && typeof v === "object") {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k] as JsonValue)}`)
      .join(",")}}`;
  }
  return JSON.stringify(v);
}

/**
 * Deletes expired records at most once a minute per process, off the request's
 * path, in batches until none are left (so it keeps up with any request rate).
 */
function sweepNowAndThen(deps: Deps, now: number): void {
  if (now - (sweptAt.get(deps) ?? 0) < SWEEP_EVERY_MS) return;
  sweptAt.set(deps, now);
  const sweep = async () => {
    while ((await sweepIdempotencyRecords(deps.pool, now, SWEEP_BATCH)) === SWEEP_BATCH) await new Promise((r) => setImmediate(r));
  };
  void sweep().catch((err: unknown) => deps.log.warn({ err }, "could not delete expired idempotency records"));
}
