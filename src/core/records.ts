// The shapes a key takes inside keyhold. KeyRecord is what verification needs and
// what the verification cache holds: configuration only, never a counter.

export interface RatelimitConfig {
  id: string;
  name: string;
  limit: number;
  duration: number;
  autoApply: boolean;
}

export interface IdentityRecord {
  id: string;
  externalId: string;
  meta: Record<string, unknown> | undefined;
  ratelimits: RatelimitConfig[];
}

export interface Refill {
  amount: number;
  /** undefined = daily; 1-31 = monthly on that day. */
  day: number | undefined;
}

export interface KeyRecord {
  id: string;
  hash: string;
  workspaceId: string;
  apiId: string;
  keyAuthId: string;
  name: string | undefined;
  meta: Record<string, unknown> | undefined;
  /** Serialised meta, for sizing the cache entry. */
  metaSize: number;
  expires: number | undefined;
  enabled: boolean;
  /** True when the key has a credit balance (the balance itself is never cached). */
  limitedCredits: boolean;
  refill: Refill | undefined;
  /** When the last refill ran (or the key was created), Unix ms. */
  lastRefillAt: number;
  identity: IdentityRecord | undefined;
  ratelimits: RatelimitConfig[];
  permissions: string[];
  roles: string[];
}

/** Everything getKey/listKeys return about a key. */
export interface KeyDetails extends KeyRecord {
  start: string;
  prefix: string | undefined;
  byteLength: number;
  createdAt: number;
  updatedAt: number | undefined;
  lastUsedAt: number;
  remaining: number | undefined;
  recoverable: boolean;
}

export const keyRecordSize = (k: KeyRecord): number =>
  400 +
  k.metaSize +
  (k.name?.length ?? 0) +
  k.permissions.reduce((n, p) => n + p.length + 16, 0) +
  k.roles.reduce((n, r) => n + r.length + 16, 0) +
  (k.ratelimits.length + (k.identity?.ratelimits.length ?? 0)) * 120 +
  (k.identity ? 200 + JSON.stringify(k.identity.meta ?? {}).length : 0);
