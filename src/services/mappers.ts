// Domain results to generated message shapes. Optional fields stay unset when
// empty, so no front door ever sends null or an empty value for them.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type {
  IdentitySchema,
  KeyCreditsSchema,
  KeyResponseDataSchema,
  PaginationSchema,
  PermissionSchema,
  RoleSchema,
} from "../../gen/keyhold/v2/resources_pb.js";
import type { IdentityRecord, RatelimitConfig } from "../core/records.js";
import type { KeyView } from "../domain/keys/keys.js";
import type { PermissionRow, RoleRow } from "../storage/rbac.js";
import { big } from "./convert.js";

type Init<T extends Parameters<typeof import("@bufbuild/protobuf").create>[0]> = MessageInitShape<T>;

/** The object when it has a property of its own, else undefined (a for-in rather than Object.keys: no list made, on every verification of a key with meta). */
export const nonEmpty = <T extends object>(o: T | undefined): T | undefined => {
  if (o) for (const k in o) if (Object.hasOwn(o, k)) return o;
  return undefined;
};

export const toRatelimit = (l: RatelimitConfig) => ({ id: l.id, name: l.name, limit: big(l.limit), duration: big(l.duration), autoApply: l.autoApply });

export function toIdentity(i: IdentityRecord): Init<typeof IdentitySchema> {
  const meta = nonEmpty(i.meta);
  // Two literals, not a spread of an optional part: the identity of every verification of a key linked to one.
  return meta
    ? { id: i.id, externalId: i.externalId, meta: meta as never, ratelimits: i.ratelimits.map(toRatelimit) }
    : { id: i.id, externalId: i.externalId, ratelimits: i.ratelimits.map(toRatelimit) };
}

export function toCredits(remaining: number | undefined, refill: { amount: number; day: number | undefined } | undefined): Init<typeof KeyCreditsSchema> {
  return {
    ...(remaining === undefined ? {} : { remaining: big(remaining) }),
    ...(refill === undefined
      ? {}
      : {
          refill: {
            interval: refill.day === undefined ? "daily" : "monthly",
            amount: big(refill.amount),
            ...(refill.day === undefined ? {} : { refillDay: refill.day }),
          },
        }),
  };
}

export function toKeyResponse(k: KeyView): Init<typeof KeyResponseDataSchema> {
  const meta = nonEmpty(k.meta);
  return {
    keyId: k.id,
    start: k.start,
    enabled: k.enabled,
    createdAt: big(k.createdAt),
    ...(k.name ? { name: k.name } : {}),
    ...(meta ? { meta: meta as never } : {}),
    ...(k.updatedAt ? { updatedAt: big(k.updatedAt) } : {}),
    ...(k.lastUsedAt ? { lastUsedAt: big(k.lastUsedAt) } : {}),
    ...(k.expires !== undefined ? { expires: big(k.expires) } : {}),
    // The key's own lists (NONE when empty, core/records.ts), not copies: an answer is only read.
    permissions: k.permissions as string[],
    roles: k.roles as string[],
    ...(k.remaining !== undefined ? { credits: toCredits(k.remaining, k.refill) } : {}),
    ...(k.identity ? { identity: toIdentity(k.identity) } : {}),
    ratelimits: k.ratelimits.map(toRatelimit),
    ...(k.plaintext !== undefined ? { plaintext: k.plaintext } : {}),
  };
}

export const toPagination = (cursor: string | undefined): Init<typeof PaginationSchema> =>
  cursor === undefined ? { hasMore: false } : { hasMore: true, cursor };

// Permission and Role: description only when there is one, and an empty
// permissions list is left out by the JSON writer (gateway/json-response.ts).
export const toPermission = (p: PermissionRow): Init<typeof PermissionSchema> => ({
  id: p.id,
  name: p.name,
  slug: p.slug,
  ...(p.description ? { description: p.description } : {}),
});

export const toRole = (r: RoleRow): Init<typeof RoleSchema> => ({
  id: r.id,
  name: r.name,
  ...(r.description ? { description: r.description } : {}),
  permissions: r.permissions.map(toPermission),
});
