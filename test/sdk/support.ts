// Shared set-up for the @unkey/api SDK suite: the real server (the harness's
// Fastify app) listening on a free local port, SDK clients pointed at it with
// `serverURL`, and assertions on the SDK's typed errors.
//
// The SDK validates every response against its zod schemas and has no switch to
// turn that off: a 200 whose body does not match throws ResponseValidationError,
// and a typed error (400/401/403/404/...) whose body does not match throws it too
// instead of the typed class. So every call below that returns, or throws the
// expected class, has passed the SDK's own shape check (sdk-validation.test.ts
// shows the check firing on a changed response).
import type { AddressInfo } from "node:net";
import { Unkey } from "@unkey/api";
import type { HTTPClient } from "@unkey/api/lib/http.js";
import { APIError, BadRequestErrorResponse, ResponseValidationError, type UnkeyError } from "@unkey/api/models/errors";
import { beforeAll, expect } from "vitest";
import { generateRootKey } from "../../src/domain/auth/root-key.js";
import { typeUrl, uid } from "../contract/shared/helpers.js";
import { type Harness, useHarness } from "../harness.js";

export { uid };

export interface SdkWorld {
  h: Harness;
  /** http://127.0.0.1:<port> of the listening server. */
  url: string;
  /** A client whose root key has exactly these grants. */
  client(permissions: string[]): Promise<Unkey>;
  /** A client with the grant `*` (for seeding). */
  admin(): Promise<Unkey>;
  /** A client with a well-formed root key the server does not know (401 key_not_found). */
  unknownKey(): Unkey;
  /** A client whose root key is truncated (401 malformed). */
  truncatedKey(): Unkey;
}

export function sdkFor(url: string, rootKey: string | undefined, httpClient?: HTTPClient): Unkey {
  // Retries off: a 5xx must fail the test at once instead of being retried for 10 s.
  return new Unkey({
    serverURL: url,
    retryConfig: { strategy: "none" },
    ...(rootKey === undefined ? {} : { rootKey }),
    ...(httpClient === undefined ? {} : { httpClient }),
  });
}

export function useSdk(): SdkWorld {
  const h = useHarness();
  const world = { h, url: "" } as SdkWorld;
  let adminClient: Promise<Unkey> | undefined;
  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    world.url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`;
  });
  world.client = async (permissions) => sdkFor(world.url, await h.rootKey(permissions));
  world.admin = () => {
    adminClient ??= world.client(["*"]);
    return adminClient;
  };
  world.unknownKey = () => sdkFor(world.url, generateRootKey());
  world.truncatedKey = () => sdkFor(world.url, generateRootKey().slice(0, -4));
  return world;
}

/** A grant no operation served here checks (docs/permissions.md): a root key holding only it may do nothing. */
export const NOTHING = ["ratelimit.*.list_overrides"];

type ErrorClass = abstract new (...args: never[]) => UnkeyError;

interface EnvelopeError extends UnkeyError {
  meta: { requestId: string };
  error: { title: string; detail: string; status: number; type: string; errors?: Array<{ location: string; message: string; fix?: string | undefined }> };
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  409: "Conflict",
  410: "Gone",
  412: "Precondition Failed",
  422: "Unprocessable Entity",
  503: "Service Unavailable",
};

/** Awaits a call that must fail and returns what it threw. */
export async function failure(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    (v) => {
      throw new Error(`expected the call to fail, it returned ${JSON.stringify(v).slice(0, 500)}`);
    },
    (e: unknown) => e,
  );
}

/** Why a thrown value is not the typed error expected (ResponseValidationError explains the shape mismatch). */
const describeThrown = (e: unknown): string =>
  e instanceof ResponseValidationError ? `ResponseValidationError: ${e.pretty()}\nbody: ${e.body}` : e instanceof Error ? `${e.name}: ${e.message}` : String(e);

/**
 * The call fails with the SDK's typed error class for this status, carrying the
 * whole envelope: status, title, type URL of the code, a detail, and
 * meta.requestId equal to the x-request-id header.
 */
export async function expectSdkError<C extends ErrorClass>(
  h: Harness,
  call: Promise<unknown>,
  cls: C,
  status: number,
  code: string,
): Promise<InstanceType<C> & EnvelopeError> {
  const e = await failure(call);
  expect(e instanceof cls, `expected ${cls.name}, got ${describeThrown(e)}`).toBe(true);
  const err = e as InstanceType<C> & EnvelopeError;
  expect(err.statusCode).toBe(status);
  expect(err.contentType).toMatch(/^application\/json\b/);
  expect(err.error.status).toBe(status);
  expect(err.error.title).toBe(TITLES[status]);
  expect(err.error.type).toBe(typeUrl(h, code));
  expect(err.error.detail.length).toBeGreaterThan(0);
  expect(err.meta.requestId).toMatch(/^req_/);
  expect(err.headers.get("x-request-id")).toBe(err.meta.requestId);
  return err;
}

/** 400 invalid_input as BadRequestErrorResponse, whose detail and errors[] name the field. */
export async function expectBadRequest(h: Harness, call: Promise<unknown>, field: string): Promise<BadRequestErrorResponse> {
  const err = await expectSdkError(h, call, BadRequestErrorResponse, 400, "err:svc:application:invalid_input");
  expect(err.error.errors.length).toBeGreaterThan(0);
  expect(
    err.error.errors.some((x) => x.location === `body.${field}` || x.location.startsWith(`body.${field}.`) || x.location.startsWith(`body.${field}[`)),
    JSON.stringify(err.error.errors),
  ).toBe(true);
  expect(err.error.detail).toContain(field.split(/[.[]/).pop() ?? field);
  return err;
}

/**
 * A status the SDK declares no typed class for on this operation: it throws the
 * generic APIError (the body is not parsed), which still carries the status and
 * the raw envelope.
 */
export async function expectUntypedError(h: Harness, call: Promise<unknown>, status: number, code: string): Promise<APIError> {
  const e = await failure(call);
  expect(e instanceof APIError, `expected APIError, got ${describeThrown(e)}`).toBe(true);
  const err = e as APIError;
  expect(err.statusCode).toBe(status);
  const body = JSON.parse(err.body);
  expect(body).toEqual({
    meta: { requestId: err.headers.get("x-request-id") },
    error: { title: TITLES[status], detail: expect.any(String), status, type: typeUrl(h, code), ...(status === 400 ? { errors: expect.any(Array) } : {}) },
  });
  return err;
}

/** Rethrows a ResponseValidationError with the zod explanation, so a shape mismatch reads clearly. */
export async function ok<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (e) {
    if (e instanceof ResponseValidationError) throw new Error(describeThrown(e));
    throw e;
  }
}
