// The Connect and gRPC-Web front door on the HTTP port, and the shared call
// wrapper that gRPC (grpc-js) uses too: authenticate, run the operation, turn an
// AppError into the same code the JSON API would send.
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { authenticate } from "../domain/auth/authenticate.js";
import type { Deps } from "../domain/deps.js";
import { AppError } from "../domain/errors.js";
import { newId } from "../domain/ids.js";
import { toConnectError } from "../errors/catalog.js";
import { redactKeys } from "../errors/redact.js";
import { groupOf } from "../gateway/plugin.js";
import { metricsOf } from "./metrics.js";
import { databaseUnavailableLog } from "./log-throttle.js";
import { isDatabaseUnavailable } from "../storage/sql.js";
import type { Call, ServiceEntry } from "../services/types.js";
import type { Principal } from "../domain/auth/principal.js";

/** Authenticates a call some other way than a root key (the dashboard's session). */
export type Authenticator = () => Promise<Principal>;

/** Runs one operation for an RPC caller; errors come back as ConnectErrors carrying ErrorDetail. */
export async function invokeRpc(
  deps: Deps,
  docsBase: string,
  label: string,
  // biome-ignore lint/suspicious/noExplicitAny: operations of different shapes
  op: (req: any, call: any) => Promise<any>,
  req: unknown,
  /** The Authorization header (a root key), or another way to authenticate the call. */
  authorization: string | undefined | Authenticator,
  requestId: string,
  idempotencyKey?: string,
  /** Told when the answer is a stored response replayed for a retry. */
  onReplay?: () => void,
): Promise<unknown> {
  let workspaceId: string | undefined;
  try {
    const principal = typeof authorization === "function" ? await authorization() : await authenticate(deps, authorization);
    workspaceId = principal.workspaceId;
    const call: Call = { principal, requestId, idempotencyKey };
    const response = await op(req, call);
    if (call.replayed === true) onReplay?.();
    return response;
  } catch (err) {
    if (err instanceof AppError) throw toConnectError(await redactKeys(deps, err, workspaceId), docsBase, requestId);
    if (isDatabaseUnavailable(err)) {
      databaseUnavailableLog.run((suppressed) => deps.log.error({ err, requestId, rpc: label, suppressed }, "database unavailable"));
      throw toConnectError(new AppError("err:svc:application:service_unavailable"), docsBase, requestId);
    }
    deps.log.error({ err, requestId, rpc: label }, "unexpected error");
    throw toConnectError(new AppError("err:svc:application:unexpected_error"), docsBase, requestId);
  }
}

/**
 * `sessionAuth`, when given, authenticates calls that carry no Authorization
 * header (the dashboard's session cookie); a root key always takes precedence.
 */
export function connectRoutes(deps: Deps, docsBase: string, entries: ServiceEntry[], sessionAuth?: (headers: Headers) => Promise<Principal>) {
  const metrics = metricsOf(deps);
  return (router: ConnectRouter): void => {
    for (const { service, ops } of entries) {
      const impl: Record<string, (req: unknown, ctx: HandlerContext) => Promise<unknown>> = {};
      for (const method of service.methods) {
        const op = ops[method.localName];
        if (op === undefined) throw new ConnectError(`no implementation for ${method.name}`, Code.Unimplemented);
        const operation = `${groupOf(service)}.${method.localName}`;
        impl[method.localName] = async (req, ctx) => {
          const requestId = newId("req");
          const started = performance.now();
          ctx.responseHeader.set("x-request-id", requestId);
          const seconds = () => (performance.now() - started) / 1000;
          try {
            const res = await invokeRpc(
              deps,
              docsBase,
              `${service.typeName}/${method.name}`,
              op,
              req,
              ctx.requestHeader.get("authorization") ??
                (sessionAuth === undefined ? undefined : () => sessionAuth(ctx.requestHeader)),
              requestId,
              ctx.requestHeader.get("idempotency-key") ?? undefined,
              () => ctx.responseHeader.set("idempotent-replayed", "true"),
            );
            metrics.request("connect", operation, "OK", seconds());
            return res;
          } catch (err) {
            metrics.request("connect", operation, err instanceof ConnectError ? Code[err.code] : "Unknown", seconds());
            throw err;
          }
        };
      }
      router.service(service, impl as never);
    }
  };
}
