import type { DescMethodUnary, DescService, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { Principal } from "../domain/auth/principal.js";

/** What every operation gets besides its request: who calls, and the request id. */
export interface Call {
  principal: Principal;
  requestId: string;
  /** The Idempotency-Key header (or gRPC metadata), when the caller sent one. */
  idempotencyKey?: string | undefined;
  /** Set when the response is a stored one replayed for a retry. */
  replayed?: boolean;
}

import type { Answer } from "../core/answer.js";

/** What an operation answers: a promise, or the answer itself when nothing waited (core/answer.ts). */
export type { Answer };

/** One function per RPC of a service, on the generated message types; a missing one fails typecheck. */
export type Operations<S extends DescService> = {
  [M in keyof S["method"]]: S["method"][M] extends DescMethodUnary<infer I, infer O>
    ? (req: MessageShape<I>, call: Call) => Answer<MessageInitShape<O>>
    : never;
};

export interface ServiceEntry {
  service: DescService;
  // biome-ignore lint/suspicious/noExplicitAny: the registry holds services of different shapes
  ops: Record<string, (req: any, call: Call) => Answer<any>>;
}
