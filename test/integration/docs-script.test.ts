// The /docs page's script (Scalar, 4.3 MB) over real HTTP: gzipped for clients
// that accept it, byte for byte the same script once unzipped; an ETag that
// turns a reload into a bodiless 304; plain bytes for clients that refuse gzip.
import { get as httpGet } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";

describe("the /docs script", () => {
  const h = useHarness();
  let url: string;
  let plain: Buffer;

  /** node:http rather than fetch, which would unzip: the test sees the bytes on the wire. */
  const get = (headers: Record<string, string>) =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
      httpGet(url, { headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on("error", reject);
      }).on("error", reject);
    });

  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    const base = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
    const page = await (await fetch(`${base}/docs/`)).text();
    const src = /<script[^>]*src="([^"]+)"/.exec(page)?.[1];
    expect(src).toBeDefined();
    url = new URL(src as string, `${base}/docs/`).toString();
    const res = await get({});
    expect(res.status).toBe(200);
    plain = res.body;
  });

  it("is sent whole and uncompressed to a client that does not ask for gzip", async () => {
    expect(plain.length).toBeGreaterThan(1_000_000);
    expect(plain.toString("utf8", 0, 200)).not.toContain("<html");
    for (const headers of [{}, { "accept-encoding": "gzip;q=0, identity" }, { "accept-encoding": "br" }]) {
      const res = await get(headers);
      expect(res.headers["content-encoding"], JSON.stringify(headers)).toBeUndefined();
      expect(res.body.equals(plain)).toBe(true);
    }
  });

  it("is gzipped for a client that accepts it, to the same bytes", async () => {
    for (const accept of ["gzip", "br, gzip;q=0.5", "*"]) {
      const res = await get({ "accept-encoding": accept });
      expect(res.status).toBe(200);
      expect(res.headers["content-encoding"], accept).toBe("gzip");
      expect(res.headers.vary).toContain("accept-encoding");
      expect(Number(res.headers["content-length"])).toBe(res.body.length);
      expect(res.body.length).toBeLessThan(plain.length / 2);
      expect(gunzipSync(res.body).equals(plain)).toBe(true);
    }
  });

  it("has an ETag: sent back, the answer is a 304 with no body; a different one gets the script", async () => {
    const first = await get({ "accept-encoding": "gzip" });
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(first.headers["cache-control"]).toBe("no-cache");
    const again = await get({ "accept-encoding": "gzip", "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers["content-length"]).toBeUndefined();
    expect(again.headers.etag).toBe(etag);
    const listed = await get({ "if-none-match": `"other", ${etag}` });
    expect(listed.status).toBe(304);
    const stale = await get({ "if-none-match": '"stale"' });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(plain)).toBe(true);
  });
});
