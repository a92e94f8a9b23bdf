// One operation run for an RPC caller (Connect, gRPC-Web, gRPC): the caller is
// already authenticated by the door (before the body was read), and every
// failure comes back as a ConnectError carrying the ErrorDetail that the JSON
// door's envelope carries, after the same redaction and the same logging, and
// its field errors also as google.rpc.BadRequest by the request's proto paths.
import type { DescMethod } from "@bufbuild/protobuf";
import type { ConnectError } from "@connectrpc/connect";
import { AppError } from "../core/errors.js";
import type { Principal } from "../domain/auth/principal.js";
import type { Deps } from "../domain/deps.js";
import { toConnectError } from "../errors/catalog.js";
import { redactKeys } from "../errors/redact.js";
import type { Answer, Call } from "../services/types.js";
import { isDatabaseUnavailable } from "../storage/sql.js";
import { databaseUnavailableLog } from "./log-throttle.js";

/** A method as logs name it: `keyhold.v2.KeysService/CreateKey`. */
const labelOf = (method: DescMethod): string => `${method.parent.typeName}/${method.name}`;

/**
 * Any failure of an RPC, as the ConnectError its caller gets: an AppError with
 * its code (keys quoted in it cut, see errors/redact.ts), the database out of
 * reach as service_unavailable, anything else as unexpected_error with the
 * internals in the log only. `rpc` is the method when it is known, so that field
 * errors also travel by proto path (google.rpc.BadRequest), or the call's path
 * when the door refuses a call before it knows more.
 */
export async function rpcError(
  deps: Deps,
  docsBase: string,
  rpc: DescMethod | string,
  err: unknown,
  requestId: string,
  workspaceId?: string,
): Promise<ConnectError> {
  const label = typeof rpc === "string" ? rpc : labelOf(rpc);
  const input = typeof rpc === "string" ? undefined : rpc.input;
  if (err instanceof AppError) return toConnectError(await redactKeys(deps, err, workspaceId), docsBase, requestId, input);
  if (isDatabaseUnavailable(err)) {
    databaseUnavailableLog.run((suppressed) => deps.log.error({ err, requestId, rpc: label, suppressed }, "database unavailable"));
    return toConnectError(new AppError("err:svc:application:service_unavailable"), docsBase, requestId);
  }
  deps.log.error({ err, requestId, rpc: label }, "unexpected error");
  return toConnectError(new AppError("err:svc:application:unexpected_error"), docsBase, requestId);
}

/** Who called, as the door found out from the headers alone: the principal, or why not. */
export type Caller = { principal: Principal; error?: undefined } | { principal?: undefined; error: unknown };

/** Runs one operation for an RPC caller; errors come back as ConnectErrors carrying ErrorDetail. */
export async function invokeRpc(
  deps: Deps,
  docsBase: string,
  method: DescMethod,
  // biome-ignore lint/suspicious/noExplicitAny: operations of different shapes
  op: (req: any, call: Call) => Answer<any>,
  req: unknown,
  caller: Caller,
  requestId: string,
  idempotencyKey?: string,
  /** Told when the answer is a stored response replayed for a retry. */
  onReplay?: () => void,
): Promise<unknown> {
  if (caller.principal === undefined) throw await rpcError(deps, docsBase, method, caller.error, requestId);
  const { principal } = caller;
  try {
    const call: Call = { principal, requestId, idempotencyKey };
    const response = await op(req, call);
    if (call.replayed === true) onReplay?.();
    return response;
  } catch (err) {
    throw await rpcError(deps, docsBase, method, err, requestId, principal.workspaceId);
  }
}
