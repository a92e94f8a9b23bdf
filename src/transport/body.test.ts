import { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { bodyComplete, readBodyNow } from "./body.js";

/** A request as Node's parser leaves it when the body's bytes are in and its end is not parsed yet. */
function buffered(body: string): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.headers["content-length"] = String(Buffer.byteLength(body));
  req.push(Buffer.from(body));
  req.complete = false;
  return req;
}

/** What the parser does a moment later, in the same read of the socket. */
function endParsed(req: IncomingMessage): void {
  req.complete = true;
  req.push(null);
}

const nextTurn = () => new Promise((r) => setImmediate(r));

describe("readBodyNow and bodyComplete", () => {
  it("a body taken whole before its end is parsed is complete: an answer then need not close the connection", async () => {
    const req = buffered('{"a":1}');
    expect(bodyComplete(req)).toBe(false);
    expect(readBodyNow(req, 1_000)?.toString()).toBe('{"a":1}');
    expect(bodyComplete(req)).toBe(true);
    // Another request in the same turn is not complete for being taken with it.
    const other = buffered('{"b":2}');
    expect(bodyComplete(other)).toBe(false);
    endParsed(req);
    await nextTurn();
    expect(bodyComplete(req)).toBe(true);
    expect(bodyComplete(other)).toBe(false);
  });

  it("the stream of a body taken before its end goes on to end", async () => {
    const req = buffered("{}");
    const ended = new Promise<void>((resolve) => req.once("end", () => resolve()));
    expect(readBodyNow(req, 1_000)?.toString()).toBe("{}");
    endParsed(req);
    await ended;
    expect(req.readableEnded).toBe(true);
  });

  it("a body only partly in, or over the limit, is not taken and not complete", () => {
    const partial = buffered('{"a":1}');
    partial.headers["content-length"] = "100";
    expect(readBodyNow(partial, 1_000)).toBeUndefined();
    expect(bodyComplete(partial)).toBe(false);
    const large = buffered('{"a":1}');
    expect(readBodyNow(large, 3)).toBeUndefined();
    expect(bodyComplete(large)).toBe(false);
  });
});
