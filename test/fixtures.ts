// Small helpers on top of the harness for the key tests.
import { expect } from "vitest";
import type { Harness, Res } from "./harness.js";

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

/** The whole envelope of an error, as SDKs switch on error.type. */
export function expectError(h: Harness, res: Res, status: number, code: string): void {
  expect(res.status, res.text).toBe(status);
  expect(res.body.meta.requestId).toMatch(/^req_/);
  expect(res.body.error.status).toBe(status);
  expect(res.body.error.type).toBe(`${h.docsBase}/api-reference/errors-v2/${code.split(":").slice(1).join("/")}`);
  expect(typeof res.body.error.detail).toBe("string");
}

export function expectInvalid(h: Harness, res: Res, field: string): void {
  expectError(h, res, 400, "err:svc:application:invalid_input");
  const named = (res.body.error.errors as Array<{ location: string; message: string }>).some((e) => `${e.location} ${e.message}`.includes(field));
  expect(named, `errors[] should name ${field}: ${res.text}`).toBe(true);
}
