// Small helpers on top of the harness for the key tests.
import { expect } from "vitest";
import type { Harness } from "./harness.js";

export async function api(h: Harness, rk: string): Promise<string> {
  const res = await h.post("/v2/apis.createApi", { name: "test-api" }, rk);
  expect(res.status, res.text).toBe(200);
  return res.body.data.apiId;
}

export async function key(h: Harness, rk: string, apiId: string, fields: Record<string, unknown> = {}): Promise<{ keyId: string; key: string }> {
  const res = await h.post("/v2/keys.createKey", { apiId, ...fields }, rk);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies
export async function verify(h: Harness, rk: string, k: string, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await h.post("/v2/keys.verifyKey", { key: k, ...fields }, rk);
  expect(res.status, res.text).toBe(200);
  return res.body.data;
}

// Envelope assertions are shared with the tests of test/contract/.
export { expectError, expectInvalid } from "./contract/shared/helpers.js";

/** Runs fn with the service's clock fixed at `ms` (so a test never straddles a rate-limit window edge). */
export async function withClock<T>(h: Harness, ms: number, fn: () => Promise<T>): Promise<T> {
  const clock = h.deps.clock;
  (h.deps as { clock: { now(): number } }).clock = { now: () => ms };
  try {
    return await fn();
  } finally {
    (h.deps as { clock: unknown }).clock = clock;
  }
}

/** The middle of the current minute: a whole 60-second window to work in. */
export const midMinute = (): number => Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
