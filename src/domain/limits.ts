// The bounds and patterns of every operation's fields, in one place (docs/errors.md, "Field errors (400)").
export const MAX_EXPIRES = 4_102_444_800_000;
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export const ID_PATTERN = /^[a-zA-Z0-9_]+$/;
export const EXTERNAL_ID_PATTERN = /^[a-zA-Z0-9_.-]+$/;
export const SLUG_PATTERN = /^[a-zA-Z0-9_:\-.*]+$/;

export const limits = {
  apiName: { min: 3, max: 256 },
  apiId: { min: 3, max: 255 },
  resourceId: { min: 3, max: 255 },
  prefix: { min: 1, max: 16 },
  keyName: { min: 1, max: 255 },
  byteLength: { min: 16, max: 255, default: 16 },
  externalId: { min: 1, max: 255 },
  roles: { maxItems: 100, min: 1, max: 100 },
  permissions: { maxItems: 1000, min: 1, max: 100 },
  expires: { min: 0, max: MAX_EXPIRES },
  ratelimits: { maxItems: 50 },
  ratelimitName: { min: 3, max: 128, noTrailingSpace: true },
  ratelimitDuration: { min: 1000 },
  /** Hard cap on serialised meta; 10 KB is the documented advice. */
  metaBytes: 1_048_576,
  metaProperties: 100,
  /** Deepest nesting of meta (and any JSON document in a request), on every transport. */
  metaDepth: 32,
  verifyKey: { min: 1, max: 512 },
  /** verifyKey's migrationId: only its length is checked; an unknown one answers NOT_FOUND. */
  verifyMigrationId: { max: 256 },
  migrationId: { min: 3, max: 255 },
  /** Keys per keys.migrateKeys request: keyhold's own bound, so one call is a bounded amount of work. */
  migrateKeys: { minItems: 1, maxItems: 1000 },
  /** An imported hash; no supported algorithm makes more than 64 characters (hex SHA-256), and keys.hash holds 64. */
  migrationHash: { min: 3, max: 64, noTrailingSpace: true },
  permissionQuery: { min: 1, max: 1000 },
  verifyCost: { min: 0, max: 1_000_000_000_000 },
  tags: { maxItems: 20, min: 1, max: 512 },
  pageSize: { min: 1, max: 100, default: 100 },
  cursor: { max: 1024 },
} as const;
