// Where a request came from, for the audit log: read only when a change is
// recorded, so the verification hot path pays one small allocation and nothing more.
import type { FastifyRequest } from "fastify";
import type { RequestOrigin } from "../domain/auth/principal.js";

/** A Fastify request's origin (JSON and Connect doors): req.ip honours TRUST_PROXY. */
export class HttpOrigin implements RequestOrigin {
  constructor(private readonly req: FastifyRequest) {}
  get requestId(): string {
    return this.req.id;
  }
  get remoteAddress(): string | undefined {
    return this.req.ip;
  }
  get userAgent(): string | undefined {
    const ua = this.req.headers["user-agent"];
    return typeof ua === "string" ? ua : undefined;
  }
}

/** A gRPC call's origin: the peer as grpc-js gives it (`ipv4:127.0.0.1:5000`, port dropped). */
export function grpcOrigin(requestId: string, peer: string, userAgent: string | undefined): RequestOrigin {
  return { requestId, remoteAddress: addressOfPeer(peer), userAgent };
}

export function addressOfPeer(peer: string): string | undefined {
  const m = /^(?:ipv4:)?(\d+\.\d+\.\d+\.\d+):\d+$/.exec(peer) ?? /^(?:ipv6:)?\[([0-9a-fA-F:.]+)\]:\d+$/.exec(peer);
  return m?.[1] ?? (peer === "" || peer === "unknown" ? undefined : peer);
}
