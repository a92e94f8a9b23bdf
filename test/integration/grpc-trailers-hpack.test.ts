// The gRPC door's per-call trailers (request-id; on errors also grpc-message and
// grpc-status-details-bin) go as HPACK literals "never indexed": indexed, every
// call's new request id took an entry of the connection's dynamic table and
// pushed older ones out (src/grpc/server.ts, CallTrailers). Read off the wire: a
// client on a raw socket sends HTTP/2 frames by hand and walks the header blocks
// the server sends back, by representation (RFC 7541 §6), without decoding them.
import net from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";

/** The kind of each field representation of a header block, in order. */
type Kind = "indexed" | "incremental" | "without" | "never" | "size";

function kinds(block: Buffer): Kind[] {
  let i = 0;
  const int = (prefixBits: number): number => {
    const mask = (1 << prefixBits) - 1;
    let v = (block[i++] as number) & mask;
    if (v < mask) return v;
    let m = 0;
    let b: number;
    do {
      b = block[i++] as number;
      v += (b & 127) * 2 ** m;
      m += 7;
    } while (b & 128);
    return v;
  };
  const skipString = () => {
    const n = int(7);
    i += n;
  };
  const out: Kind[] = [];
  while (i < block.length) {
    const b = block[i] as number;
    if (b & 0x80) {
      int(7);
      out.push("indexed");
    } else if (b & 0x40) {
      if (int(6) === 0) skipString();
      skipString();
      out.push("incremental");
    } else if (b & 0x20) {
      int(5);
      out.push("size");
    } else {
      const never = (b & 0x10) !== 0;
      if (int(4) === 0) skipString();
      skipString();
      out.push(never ? "never" : "without");
    }
  }
  return out;
}

const frame = (type: number, flags: number, stream: number, payload: Buffer): Buffer => {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
};

/** A header block of literals without indexing, new names; every length must fit HPACK's 7-bit prefix. */
const literals = (headers: [string, string][]): Buffer =>
  Buffer.concat(
    headers.map(([n, v]) => {
      if (n.length > 126 || v.length > 126) throw new Error(`${n}: too long for this client's encoder`);
      return Buffer.concat([Buffer.from([0, n.length]), Buffer.from(n), Buffer.from([v.length]), Buffer.from(v)]);
    }),
  );

/** One connection; each call is a unary VerifyKey on the next stream. Resolves with the call's last header block (its trailers). */
class RawClient {
  private readonly socket: net.Socket;
  private buffered = Buffer.alloc(0);
  private readonly blocks = new Map<number, Buffer[]>();
  private readonly waiting = new Map<number, (trailers: Buffer) => void>();
  private next = 1;

  constructor(port: number) {
    this.socket = net.connect(port, "127.0.0.1");
    this.socket.write(Buffer.concat([Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), frame(0x4, 0, 0, Buffer.alloc(0))]));
    this.socket.on("data", (d: Buffer) => this.read(d));
  }

  private read(d: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, d]);
    while (this.buffered.length >= 9) {
      const len = this.buffered.readUIntBE(0, 3);
      if (this.buffered.length < 9 + len) return;
      const [type, flags] = [this.buffered[3] as number, this.buffered[4] as number];
      const stream = this.buffered.readUInt32BE(5) & 0x7fffffff;
      const payload = this.buffered.subarray(9, 9 + len);
      this.buffered = this.buffered.subarray(9 + len);
      if (type === 0x4 && (flags & 0x1) === 0) this.socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0)));
      if (type === 0x1) {
        // No padding or priority is sent by Node's server; checked rather than assumed.
        expect(flags & 0x28).toBe(0);
        expect(flags & 0x4).toBe(0x4);
        const list = this.blocks.get(stream) ?? [];
        list.push(Buffer.from(payload));
        this.blocks.set(stream, list);
        if (flags & 0x1) this.waiting.get(stream)?.(payload);
      }
    }
  }

  verify(rootKey: string, key: string): Promise<{ trailers: Kind[]; blocks: number }> {
    const stream = this.next;
    this.next += 2;
    const msg = Buffer.concat([Buffer.from([0x0a, key.length]), Buffer.from(key)]);
    const body = Buffer.concat([Buffer.from([0, 0, 0, 0, msg.length]), msg]);
    const headers = literals([
      [":method", "POST"],
      [":scheme", "http"],
      [":path", "/keyhold.v2.KeysService/VerifyKey"],
      [":authority", "localhost"],
      ["content-type", "application/grpc"],
      ["te", "trailers"],
      ["authorization", `Bearer ${rootKey}`],
    ]);
    const done = new Promise<{ trailers: Kind[]; blocks: number }>((resolve) =>
      this.waiting.set(stream, (trailers) => resolve({ trailers: kinds(trailers), blocks: this.blocks.get(stream)?.length ?? 0 })),
    );
    this.socket.write(Buffer.concat([frame(0x1, 0x4, stream, headers), frame(0x0, 0x1, stream, body)]));
    return done;
  }

  close(): void {
    this.socket.destroy();
  }
}

const count = (ks: Kind[], k: Kind) => ks.filter((x) => x === k).length;

describe("gRPC trailers on the wire", () => {
  const h = useHarness();
  let port: number;
  let rootKey: string;

  beforeAll(async () => {
    port = await h.grpcPort();
    rootKey = await h.rootKey(["apis.*.verify_key"]);
  });

  it("a success's request-id is never indexed, and the constant trailers are indexed once per connection", async () => {
    const c = new RawClient(port);
    try {
      // An unknown key is still a success (valid: false, NOT_FOUND).
      const first = await c.verify(rootKey, "kh_no_such_key_aaaaaaaaaaaaaaaa");
      const second = await c.verify(rootKey, "kh_no_such_key_bbbbbbbbbbbbbbbb");
      // Response headers, then trailers.
      expect(first.blocks).toBe(2);
      expect(count(first.trailers, "never")).toBe(1);
      // grpc-status and grpc-message are the same in every success: in the table since the first call.
      expect(second.trailers).toEqual(["indexed", "indexed", "never"]);
    } finally {
      c.close();
    }
  });

  it("an error's request-id, message and status details are never indexed", async () => {
    const c = new RawClient(port);
    try {
      for (const attempt of [1, 2]) {
        const failed = await c.verify(`svc_not_a_root_key_${attempt}`, "kh_whatever");
        // A trailers-only answer: one header block with END_STREAM.
        expect(failed.blocks).toBe(1);
        expect(count(failed.trailers, "never")).toBe(3);
      }
    } finally {
      c.close();
    }
  });
});
