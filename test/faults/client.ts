// Calls over real TCP (fetch, keep-alive) for the fault tests, which need what
// Fastify's inject cannot show: sockets, timeouts, a server in another process.
import { expect } from "vitest";

export interface Answer {
  status: number;
  // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by assertions
  body: any;
  text: string;
  contentType: string;
  /** How long the answer took. */
  ms: number;
  /** A transport failure (connection refused, reset, our own deadline), instead of an answer. */
  failure?: string;
}

/** POST a JSON body; a transport failure or a deadline past `timeoutMs` comes back as `failure`, never thrown. */
export async function post(base: string, path: string, body: unknown, rootKey: string, timeoutMs = 15_000): Promise<Answer> {
  const started = Date.now();
  try {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${rootKey}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, body: parsed, text, contentType: res.headers.get("content-type") ?? "", ms: Date.now() - started };
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const failure = e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : (e.cause?.code ?? e.message);
    return { status: 0, body: undefined, text: "", contentType: "", ms: Date.now() - started, failure };
  }
}

/** `…/errors-v2/svc/application/service_unavailable` -> `err:svc:application:service_unavailable`. */
export function errorCode(body: unknown): string | undefined {
  const type = (body as { error?: { type?: unknown } } | undefined)?.error?.type;
  if (typeof type !== "string") return undefined;
  return `err:${type.split("/").slice(-3).join(":")}`;
}

/** A short label for counting outcomes: `200`, `200 VALID`, `503 err:svc:…`, `failure ECONNRESET`. */
export function outcome(a: Answer): string {
  if (a.failure !== undefined) return `failure ${a.failure}`;
  const code = errorCode(a.body);
  if (code !== undefined) return `${a.status} ${code}`;
  const verdict = a.body?.data?.code;
  return typeof verdict === "string" ? `${a.status} ${verdict}` : String(a.status);
}

/** The whole error envelope, as every answer of the server must be shaped. */
export function expectEnvelope(a: Answer, status: number, code: string): void {
  const show = `${a.status} ${a.failure ?? ""} ${a.text.slice(0, 500)}`;
  expect(a.status, show).toBe(status);
  expect(a.contentType, show).toMatch(/^application\/json\b/);
  expect(Object.keys(a.body ?? {}).sort(), show).toEqual(["error", "meta"]);
  expect(a.body.meta.requestId, show).toMatch(/^req_/);
  expect(a.body.error, show).toMatchObject({ status, title: expect.any(String), detail: expect.any(String) });
  expect(errorCode(a.body), show).toBe(code);
}

/** Counts labels: {"200 VALID": 1200, "503 err:svc:application:service_unavailable": 40}. */
export class Tally {
  readonly counts = new Map<string, number>();
  add(label: string): void {
    this.counts.set(label, (this.counts.get(label) ?? 0) + 1);
  }
  toJSON(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }
}
