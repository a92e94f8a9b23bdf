// The /docs page's script (Scalar, 4.3 MB) over real HTTP: gzipped for clients
// that accept it, byte for byte the same script once unzipped; an ETag per
// encoding that turns a reload into a bodiless 304 (weak comparison, `*`); plain
// bytes for clients that refuse gzip; HEAD untouched; one compressed copy per
// route whatever the URL's spelling.
import { get as httpGet } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { packedScripts } from "../../src/gateway/docs.js";
import { useHarness } from "../harness.js";

describe("the /docs script", () => {
  const h = useHarness();
  let url: string;
  let plain: Buffer;

  /** node:http rather than fetch, which would unzip: the test sees the bytes on the wire. */
  const get = (headers: Record<string, string>, at = url, method = "GET") =>
    new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }>((resolve, reject) => {
      httpGet(at, { headers, method }, (res) => {
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
    for (const headers of [{}, { "accept-encoding": "gzip;q=0, identity" }, { "accept-encoding": "br" }, { "accept-encoding": "*;q=1, gzip;q=0" }]) {
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
    const listed = await get({ "accept-encoding": "gzip", "if-none-match": `"other", ${etag}` });
    expect(listed.status).toBe(304);
    const stale = await get({ "if-none-match": '"stale"' });
    expect(stale.status).toBe(200);
    expect(stale.body.equals(plain)).toBe(true);
  });

  it("compares If-None-Match weakly, and gives each encoding its own ETag", async () => {
    const zipped = (await get({ "accept-encoding": "gzip" })).headers.etag as string;
    const plainTag = (await get({})).headers.etag as string;
    expect(zipped).not.toBe(plainTag);
    expect((await get({ "accept-encoding": "gzip", "if-none-match": `W/${zipped}` })).status).toBe(304);
    expect((await get({ "if-none-match": "*" })).status).toBe(304);
    // The plain script's tag does not validate the gzipped bytes, nor the reverse.
    const crossed = await get({ "accept-encoding": "gzip", "if-none-match": plainTag });
    expect(crossed.status).toBe(200);
    expect(crossed.headers["content-encoding"]).toBe("gzip");
    expect((await get({ "if-none-match": zipped })).status).toBe(200);
  });

  it("answers HEAD, conditional or not, with the script's headers and no body", async () => {
    for (const headers of [{}, { "if-none-match": "*" }, { "accept-encoding": "gzip", "if-none-match": "*" }]) {
      const res = await get(headers, url, "HEAD");
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(res.body.length).toBe(0);
      expect(Number(res.headers["content-length"])).toBe(plain.length);
    }
  });

  it("keeps one compressed copy per route, however the URL is spelled", async () => {
    const before = packedScripts();
    expect(before).toBeGreaterThan(0);
    const { pathname, origin } = new URL(url);
    const spellings = [pathname.replace(/s(\w+)\.js$/, "%73$1.js"), pathname.replace(/\.js$/, "%2Ejs"), `${pathname}?v=1`, `${pathname}?v=2`];
    for (const at of spellings) {
      const res = await get({ "accept-encoding": "gzip" }, `${origin}${at}`);
      expect(res.status, at).toBe(200);
      expect(gunzipSync(res.body).equals(plain)).toBe(true);
    }
    expect(packedScripts()).toBe(before);
  });
});
