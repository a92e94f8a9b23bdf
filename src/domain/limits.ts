// What the domain needs besides the field rules declared in proto/ (buf.validate
// annotations, enforced before any operation by services/field-rules.ts):
// defaults, meta's bounds, which no annotation on a Struct states, and the
// dashboard's own inputs (docs/errors.md, "Field errors (400)").
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** The dashboard's key search takes an API id of this shape. */
export const ID_PATTERN = /^[a-zA-Z0-9_]+$/;

export const limits = {
  byteLength: { default: 16 },
  /** An inline rate limit on verifyKey: the shortest window, as a stored limit's (RatelimitRequest.duration). */
  ratelimitDuration: { min: 1000 },
  /** Hard cap on serialised meta; 10 KB is the documented advice. */
  metaBytes: 1_048_576,
  metaProperties: 100,
  /** Deepest nesting of meta (and any JSON document in a request), on every transport. */
  metaDepth: 32,
  pageSize: { default: 100 },
} as const;
