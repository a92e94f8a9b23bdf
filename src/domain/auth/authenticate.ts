// Authentication of management calls, shared by every front door (JSON, Connect,
// gRPC). The rules are exact: "Bearer", one space, the root key, nothing else
// (docs/auth.md, "Reading the credentials"). A damaged root key fails its
// checksum and is `malformed` without a lookup.
import { MISS } from "../../cache/verification-cache.js";
import { AppError } from "../../core/errors.js";
import { findRootKeyByHash } from "../../storage/root-keys.js";
import type { Deps } from "../deps.js";
import { hashKey } from "../keys/generate.js";
import { outageOf } from "../outage.js";
import type { Principal } from "./principal.js";
import { isWellFormedRootKey, ROOT_KEY_LENGTH } from "./root-key.js";

const BEARER = "Bearer ";

/** A well-shaped root key that is not in the cache: to be looked up (lookupRootKey). */
export class RootKeyMiss {
  constructor(
    readonly token: string,
    readonly hash: string,
  ) {}
}

/**
 * The principal of a request whose root key is in the cache (or the refusal of
 * its header on its face), without a promise: the JSON door's hot path, where an
 * async call and its await cost more than the check itself. A RootKeyMiss means
 * the root key must be read from the database: lookupRootKey().
 */
export function authenticateCached(deps: Deps, header: string | undefined): Principal | RootKeyMiss {
  const token = tokenOf(header);
  const hash = hashKey(token);
  const cached = deps.rootKeyCache.get(hash);
  return cached === undefined ? new RootKeyMiss(token, hash) : principalOf(deps, cached);
}

export async function authenticate(deps: Deps, header: string | undefined): Promise<Principal> {
  const found = authenticateCached(deps, header);
  return found instanceof RootKeyMiss ? lookupRootKey(deps, found) : found;
}

export async function lookupRootKey(deps: Deps, { token, hash }: RootKeyMiss): Promise<Principal> {
  // Only tokens that passed the checksum are ever cached (hit or miss): check the rest in full.
  if (!isWellFormedRootKey(token)) throw new AppError("err:svc:authentication:malformed");
  const version = deps.rootKeyCache.version;
  // A record held while the cache is bypassed answers when the database cannot be reached.
  const found = await outageOf(deps.pool).read(deps.rootKeyCache.stale(hash), () => findRootKeyByHash(deps.pool, hash));
  // Not cached if the root key or its workspace was invalidated meanwhile: the row read may predate that.
  if (found) deps.rootKeyCache.setRead(version, hash, found, [`rootkey:${found.id}`, `ws:${found.workspaceId}`]);
  else deps.rootKeyCache.setMissRead(version, hash);
  return principalOf(deps, found ?? MISS);
}

/** The root key of an Authorization header, or the refusal of its shape. */
function tokenOf(header: string | undefined): string {
  if (header === undefined) throw new AppError("err:svc:authentication:missing");
  if (!header.startsWith(BEARER)) throw new AppError("err:svc:authentication:malformed");
  const token = header.slice(BEARER.length);
  // Its length only, before it is hashed (a long header costs no hashing): the
  // rest of its shape and its checksum are checked on a cache miss
  // (lookupRootKey), as a token that fails them is never cached. The shape's
  // regular expression was ~1,400 instructions a request (callgrind).
  if (token.length !== ROOT_KEY_LENGTH) throw new AppError("err:svc:authentication:malformed");
  return token;
}

type CachedRootKey = NonNullable<ReturnType<Deps["rootKeyCache"]["get"]>>;

function principalOf(deps: Deps, record: CachedRootKey): Principal {
  if (record === MISS) throw new AppError("err:svc:authentication:key_not_found");
  if (!record.workspaceEnabled) throw new AppError("err:svc:authorization:workspace_disabled");
  if (!record.enabled) throw new AppError("err:svc:authorization:key_disabled");
  const now = deps.clock.now();
  if (record.expiresAt !== undefined && now > record.expiresAt) {
    throw new AppError("err:svc:authorization:forbidden", "The root key has expired.");
  }
  // Memory only: the write-behind stores it in a batch later.
  deps.rootKeyUsage.record(record.id, now);
  // Every field declared here, origin too (the door sets it): one object shape for all principals.
  return { workspaceId: record.workspaceId, rootKeyId: record.id, permissions: record.permissions, origin: undefined, expiresAt: record.expiresAt };
}
