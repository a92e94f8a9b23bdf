// Helpers shared by the tests of test/contract/: envelope assertions (the whole envelope,
// because SDKs switch on error.type and read meta.requestId) and small seeders
// that go through the public API wherever the API can do the job.
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { newId } from "../../../src/core/ids.js";
import type { Harness, Res } from "../../harness.js";

// biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by assertions
export type Json = any;

/** Status line and the start of the body, for assertion messages. */
export const show = (res: Res): string => `${res.status} ${res.text.slice(0, 1500)}`;

export const uid = (prefix: string): string => `${prefix}_${randomBytes(6).toString("hex")}`;

/** The HTTP status text expected as `error.title` (docs/errors.md, "The JSON envelope"; 413 has two accepted spellings). */
const TITLES: Record<number, string[]> = {
  400: ["Bad Request"],
  401: ["Unauthorized"],
  403: ["Forbidden"],
  404: ["Not Found"],
  405: ["Method Not Allowed"],
  409: ["Conflict"],
  410: ["Gone"],
  412: ["Precondition Failed"],
  413: ["Payload Too Large", "Request Entity Too Large"],
  415: ["Unsupported Media Type"],
  422: ["Unprocessable Entity"],
  429: ["Too Many Requests"],
  500: ["Internal Server Error"],
  503: ["Service Unavailable"],
};

/** `err:svc:data:x` -> `${docsBase}/api-reference/errors-v2/svc/data/x` (docs/errors.md, "The JSON envelope"). */
export const typeUrl = (h: Harness, code: string): string => `${h.docsBase}/api-reference/errors-v2/${code.split(":").slice(1).join("/")}`;

/** Nothing internal ever reaches a client: no stack frames, no source paths. */
export function expectNoInternals(res: Res): void {
  expect(res.text, show(res)).not.toMatch(/\n\s+at\s|\bat\s+\S+\s+\(|node_modules|\/src\/|\.ts:\d+|\.js:\d+/);
}

/**
 * The complete error envelope: `{meta: {requestId}, error: {title, detail, status, type, errors?}}`,
 * JSON content type, and the x-request-id header equal to meta.requestId.
 * `errors` is required on every 400 (the SDK needs the array) and absent elsewhere (413 may carry []).
 */
export function expectError(h: Harness, res: Res, status: number, code: string, detail?: unknown): void {
  expect(res.status, show(res)).toBe(status);
  expect(String(res.headers["content-type"] ?? ""), show(res)).toMatch(/^application\/json\b/);
  expect(res.body, show(res)).toBeTypeOf("object");
  expect(Object.keys(res.body).sort(), show(res)).toEqual(["error", "meta"]);
  const { errors, title, ...error } = res.body.error ?? {};
  expect(TITLES[status] ?? [], `title of ${show(res)}`).toContain(title);
  expect({ meta: res.body.meta, error }, show(res)).toEqual({
    meta: { requestId: expect.any(String) },
    error: {
      detail: detail ?? expect.any(String),
      status,
      type: typeUrl(h, code),
    },
  });
  expect((res.body.error.detail as string).length, show(res)).toBeGreaterThan(0);
  expect((res.body.meta.requestId as string).length, show(res)).toBeGreaterThan(0);
  if (status === 400) {
    expect(Array.isArray(errors), `400 bodies carry error.errors[]: ${show(res)}`).toBe(true);
    for (const e of errors as Json[]) {
      expect(e.location, show(res)).toBeTypeOf("string");
      expect(e.message, show(res)).toBeTypeOf("string");
    }
  } else if (status !== 413) {
    expect(errors, show(res)).toBeUndefined();
  }
  expect(res.headers["x-request-id"], show(res)).toBe(res.body.meta.requestId);
  expectNoInternals(res);
}

/** 400 invalid_input whose errors[] names the field in `location` or `message`. */
export function expectInvalid(h: Harness, res: Res, field: string): void {
  expectError(h, res, 400, "err:svc:application:invalid_input");
  const errors = res.body.error.errors as Json[];
  expect(errors.length, show(res)).toBeGreaterThan(0);
  const named = errors.some((e) => `${e.location} ${e.message}`.includes(field));
  expect(named, `no item of error.errors names "${field}": ${JSON.stringify(errors)}`).toBe(true);
}

/** A 200 success envelope `{meta: {requestId}, data}`; returns data. */
export function expectOk(res: Res, opts: { pagination?: boolean } = {}): Json {
  expect(res.status, show(res)).toBe(200);
  expect(String(res.headers["content-type"] ?? ""), show(res)).toMatch(/^application\/json\b/);
  expect(Object.keys(res.body).sort(), show(res)).toEqual(opts.pagination ? ["data", "meta", "pagination"] : ["data", "meta"]);
  expect(res.body.meta, show(res)).toEqual({ requestId: expect.any(String) });
  expect(res.headers["x-request-id"], show(res)).toBe(res.body.meta.requestId);
  return res.body.data;
}

// ---------------------------------------------------------------------------
// Seeding through the API.

const admins = new WeakMap<Harness, Promise<string>>();

/** A root key with the grant `*` in this file's workspace (one per harness). */
export function admin(h: Harness): Promise<string> {
  let k = admins.get(h);
  if (k === undefined) {
    k = h.rootKey(["*"]);
    admins.set(h, k);
  }
  return k;
}

/** A root key with `*` in a new workspace of its own. */
export const foreignAdmin = (h: Harness): Promise<string> => h.rootKey(["*"], uid("other_ws"));

export async function createApi(h: Harness, name = uid("api"), rootKey?: string): Promise<string> {
  const res = await h.post("/v2/apis.createApi", { name }, rootKey ?? (await admin(h)));
  expect(res.status, show(res)).toBe(200);
  return res.body.data.apiId as string;
}

export async function createKey(h: Harness, apiId: string, fields: Record<string, unknown> = {}, rootKey?: string): Promise<{ keyId: string; key: string }> {
  const res = await h.post("/v2/keys.createKey", { apiId, ...fields }, rootKey ?? (await admin(h)));
  expect(res.status, show(res)).toBe(200);
  return res.body.data as { keyId: string; key: string };
}

/** keys.verifyKey; expects HTTP 200 and returns `data`. */
export async function verifyKey(h: Harness, key: string, extra: Record<string, unknown> = {}, rootKey?: string): Promise<Json> {
  const res = await h.post("/v2/keys.verifyKey", { key, ...extra }, rootKey ?? (await admin(h)));
  return expectOk(res);
}

export async function getKey(h: Harness, keyId: string, extra: Record<string, unknown> = {}): Promise<Res> {
  return h.post("/v2/keys.getKey", { keyId, ...extra }, await admin(h));
}

/**
 * A role seeded straight into the database the production migrations built, so
 * key tests do not depend on permissions.createRole. Each role gets the given slugs.
 */
export async function seedRole(h: Harness, name: string, permissions: string[] = []): Promise<string> {
  const now = Date.now();
  const roleId = newId("role", now);
  await h.db.pool.execute("INSERT INTO roles (id, workspace_id, name, created_at_m) VALUES (?, ?, ?, ?)", [roleId, h.workspaceId, name, now]);
  for (const slug of permissions) {
    const permId = newId("perm", now);
    await h.db.pool.execute("INSERT INTO permissions (id, workspace_id, name, slug, created_at_m) VALUES (?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE pk = pk", [
      permId,
      h.workspaceId,
      slug,
      slug,
      now,
    ]);
    await h.db.pool.execute(
      `INSERT INTO roles_permissions (role_id, permission_id, workspace_id, created_at_m)
       SELECT ?, id, ?, ? FROM permissions WHERE workspace_id = ? AND slug = ?`,
      [roleId, h.workspaceId, now, h.workspaceId, slug],
    );
  }
  return roleId;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Rate-limit windows are aligned to the Unix epoch. A test whose requests must
 * land in one window waits, when needed, until at least `needMs` of it remain.
 */
export async function awayFromWindowEdge(durationMs: number, needMs = 3_000): Promise<void> {
  const left = durationMs - (Date.now() % durationMs);
  if (left < needMs) await sleep(left + 50);
}

export const many = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));

/** The ids of an API's live keys, through keys.listKeys. */
export async function listedKeyIds(h: Harness, apiId: string): Promise<string[]> {
  const data = expectOk(await h.post("/v2/keys.listKeys", { apiId }, await admin(h)), { pagination: true });
  return (data.keys as Json[]).map((k) => k.keyId as string);
}

/** Any request through Fastify's inject, as a Res (for methods and bodies h.post does not make). */
export async function send(
  h: Harness,
  opts: { method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD" | "OPTIONS"; url: string; headers?: Record<string, string>; payload?: string | Buffer },
): Promise<Res> {
  const res = await h.app.inject({
    method: opts.method,
    url: opts.url,
    headers: opts.headers ?? {},
    ...(opts.payload === undefined ? {} : { payload: opts.payload }),
  });
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    body = undefined;
  }
  return { status: res.statusCode, headers: res.headers, body, text: res.body };
}

/** A fresh rate-limit namespace, made the only way the API offers (first use in ratelimit.limit), with its id. */
export async function namespace(h: Harness): Promise<{ name: string; id: string }> {
  const name = uid("ns");
  expectOk(await h.post("/v2/ratelimit.limit", { namespace: name, identifier: "seed", limit: 1, duration: 60_000, cost: 0 }, await admin(h)));
  const [rows] = await h.db.pool.query("SELECT id FROM ratelimit_namespaces WHERE name = ?", [name]);
  return { name, id: (rows as Array<{ id: string }>)[0]?.id as string };
}
