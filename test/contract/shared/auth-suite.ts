// The shared 401 suite every endpoint's 401.test.ts runs (docs/auth.md, "Reading
// the credentials"). The rules are exact: "Bearer", one space, the root key,
// nothing else. Authentication is checked before the body, so a request
// without credentials is a 401 whatever its body is.
import { describe, expect, it } from "vitest";
import { generateRootKey } from "../../../src/domain/auth/root-key.js";
import type { Harness } from "../../harness.js";
import { admin, expectError, show } from "./helpers.js";

export const MISSING_DETAIL = "Credentials were not provided";
export const MALFORMED_DETAIL = "Credentials were incorrectly formatted";

/** A base58 character different from `c` (so the key keeps its shape and only the checksum breaks). */
const otherBase58 = (c: string): string => (c === "2" ? "3" : "2");

/** Header values built from a valid root key, so the format is the only thing wrong. */
export const MALFORMED_VARIANTS: Array<[string, (k: string) => string]> = [
  ["lower-case scheme `bearer`", (k) => `bearer ${k}`],
  ["upper-case scheme `BEARER`", (k) => `BEARER ${k}`],
  ["no scheme", (k) => k],
  ["two spaces after Bearer", (k) => `Bearer  ${k}`],
  ["a tab instead of the space", (k) => `Bearer\t${k}`],
  ["`Bearer` alone", () => "Bearer"],
  ["`Bearer ` with nothing after the space", () => "Bearer "],
  ["the Basic scheme", (k) => `Basic ${Buffer.from(`user:${k}`).toString("base64")}`],
  ["the key in double quotes", (k) => `Bearer "${k}"`],
  ["the key in single quotes", (k) => `Bearer '${k}'`],
  // HTTP parsers strip trailing ASCII whitespace; these two survive and must not be trimmed.
  ["a trailing no-break space (U+00A0)", (k) => `Bearer ${k}\u00a0`],
  ["a trailing NEL line break (U+0085)", (k) => `Bearer ${k}\u0085`],
  ["two tokens", (k) => `Bearer ${k} ${k}`],
  ["the key truncated by 4 characters", (k) => `Bearer ${k.slice(0, -4)}`],
  ["the prefix only (`svc_`)", (k) => `Bearer ${k.slice(0, k.indexOf("_") + 1)}`],
  // A root key's length, not its shape: refused on the cache miss (authenticate.ts), before the database.
  ["another prefix, the length of a root key", (k) => `Bearer xyz_${k.slice(4)}`],
  ["a character outside base58 (`0`), the length of a root key", (k) => `Bearer ${k.slice(0, -1)}0`],
  ["one character of the key changed (checksum)", (k) => `Bearer ${k.slice(0, -1)}${otherBase58(k.slice(-1))}`],
  [
    "one character in the middle changed (checksum)",
    (k) => {
      const i = Math.floor(k.length / 2);
      return `Bearer ${k.slice(0, i)}${otherBase58(k.charAt(i))}${k.slice(i + 1)}`;
    },
  ],
];

/**
 * Registers the authentication tests of one endpoint: 401 missing, the malformed
 * matrix, an unknown well-formed root key, and auth-before-body. `validBody` is a
 * body the endpoint accepts syntactically (it may name resources that do not exist).
 */
export function describeAuth(h: Harness, path: string, validBody: unknown): void {
  describe(`${path}: authentication (shared 401 suite)`, () => {
    it("no Authorization header -> 401 err:svc:authentication:missing with the exact envelope", async () => {
      const res = await h.post(path, validBody);
      expectError(h, res, 401, "err:svc:authentication:missing", MISSING_DETAIL);
      expect(res.body.error.title).toBe("Unauthorized");
    });

    // Authentication comes before the body (docs/auth.md, "Credentials first, body second, on every door"): a request without
    // credentials learns nothing about what a valid body looks like.
    it.each<[string, unknown]>([
      ["an empty body", ""],
      ["invalid JSON", "{not json"],
      ["an empty object (required fields missing)", {}],
      ["a JSON array", [1, 2, 3]],
      ["unknown fields", { surely_not_a_field: true }],
    ])("no Authorization header and %s -> 401 missing, not 400", async (_label, body) => {
      const res = await h.post(path, body);
      expectError(h, res, 401, "err:svc:authentication:missing", MISSING_DETAIL);
    });

    it("a malformed header and an invalid body -> 401 malformed, not 400", async () => {
      const k = await admin(h);
      const res = await h.post(path, "{not json", undefined, { authorization: `bearer ${k}` });
      expectError(h, res, 401, "err:svc:authentication:malformed", MALFORMED_DETAIL);
    });

    it("the well-formed header the malformed variants are built from authenticates (not 401)", async () => {
      const k = await admin(h);
      const res = await h.post(path, validBody, undefined, { authorization: `Bearer ${k}` });
      expect(res.status, show(res)).not.toBe(401);
    });

    it.each(MALFORMED_VARIANTS)("%s -> 401 err:svc:authentication:malformed", async (_label, build) => {
      const k = await admin(h);
      const res = await h.post(path, validBody, undefined, { authorization: build(k) });
      expectError(h, res, 401, "err:svc:authentication:malformed", MALFORMED_DETAIL);
      expect(res.body.error.title).toBe("Unauthorized");
    });

    it("a well-formed root key this service never issued -> 401 err:svc:authentication:key_not_found", async () => {
      const unknown = generateRootKey();
      expect(unknown).toMatch(/^svc_/);
      const res = await h.post(path, validBody, unknown);
      expectError(h, res, 401, "err:svc:authentication:key_not_found");
      expect(res.body.error.title).toBe("Unauthorized");
    });

    it("a well-formed unknown root key with an invalid body -> 401 key_not_found, not 400", async () => {
      const res = await h.post(path, "{not json", generateRootKey());
      expectError(h, res, 401, "err:svc:authentication:key_not_found");
    });

    it("an end-user key (not a root key) as the bearer -> 401, never accepted", async () => {
      // A key in the shape of an end-user key is not a root key: malformed or unknown, never 2xx.
      const res = await h.post(path, validBody, "sk_3xYzAbCdEfGhJkLmNpQrSt");
      expect(res.status, show(res)).toBe(401);
      expect(
        ["malformed", "key_not_found"].some((c) => String(res.body?.error?.type).endsWith(`/authentication/${c}`)),
        show(res),
      ).toBe(true);
    });
  });
}
