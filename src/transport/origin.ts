// Where a request came from, for the audit log. The JSON and Connect doors read
// the address at once (it is gone with the socket) and the rest only when a
// change is recorded; gRPC reads its peer at once too, a small part of a gRPC
// call's cost (bench/README.md). TRUST_PROXY applies to the HTTP port only: a
// gRPC record holds the address of the peer that connected.
import type { FastifyRequest } from "fastify";
import type { RequestOrigin } from "../domain/auth/principal.js";

/** A Fastify request's origin (JSON and Connect doors): req.ip honours TRUST_PROXY. */
export class HttpOrigin implements RequestOrigin {
  /**
   * Read now: Fastify computes req.ip from the socket on every access, and a
   * client that hangs up before its change commits would leave the record
   * without an address if it were read then.
   */
  readonly remoteAddress: string | undefined;
  constructor(private readonly req: FastifyRequest) {
    this.remoteAddress = req.ip;
  }
  get requestId(): string {
    return this.req.id;
  }
  get userAgent(): string | undefined {
    const ua = this.req.headers["user-agent"];
    return typeof ua === "string" ? ua : undefined;
  }
}

/**
 * A gRPC call's origin: the peer as grpc-js gives it (`ipv4:127.0.0.1:5000`,
 * port dropped). The peer's text is taken at once; the address is cut out of it
 * only when a change is recorded: its regular expressions were 1.3% of a hot
 * gRPC verifyKey's busy time, for an address a verification never reads.
 */
export class GrpcOrigin implements RequestOrigin {
  private address: string | undefined | null = null;
  constructor(
    readonly requestId: string,
    private readonly peer: string,
    readonly userAgent: string | undefined,
  ) {}
  get remoteAddress(): string | undefined {
    if (this.address === null) this.address = addressOfPeer(this.peer);
    return this.address;
  }
}

export function addressOfPeer(peer: string): string | undefined {
  const m = /^(?:ipv4:)?(\d+\.\d+\.\d+\.\d+):\d+$/.exec(peer) ?? /^(?:ipv6:)?\[([0-9a-fA-F:.]+)\]:\d+$/.exec(peer);
  return m?.[1] ?? (peer === "" || peer === "unknown" ? undefined : peer);
}
