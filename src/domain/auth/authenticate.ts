// Authentication of management calls, shared by every front door (JSON, Connect,
// gRPC). The seed's rules are exact: "Bearer", one space, the root key, nothing
// else. A damaged root key fails its checksum and is `malformed` without a lookup.
import { MISS } from "../../cache/verification-cache.js";
import { findRootKeyByHash } from "../../storage/root-keys.js";
import type { Deps } from "../deps.js";
import { AppError } from "../errors.js";
import { hashKey } from "../keys/generate.js";
import { outageOf } from "../outage.js";
import type { Principal } from "./principal.js";
import { hasRootKeyShape, isWellFormedRootKey } from "./root-key.js";

const BEARER = "Bearer ";

export async function authenticate(deps: Deps, header: string | undefined): Promise<Principal> {
  if (header === undefined) throw new AppError("err:svc:authentication:missing");
  if (!header.startsWith(BEARER)) throw new AppError("err:svc:authentication:malformed");
  const token = header.slice(BEARER.length);
  if (!hasRootKeyShape(token)) throw new AppError("err:svc:authentication:malformed");

  const hash = hashKey(token);
  let record = deps.rootKeyCache.get(hash);
  // Only tokens that passed the checksum are ever cached (hit or miss): check the rest in full.
  if (record === undefined && !isWellFormedRootKey(token)) throw new AppError("err:svc:authentication:malformed");
  if (record === undefined) {
    const generation = deps.rootKeyCache.generation;
    // A record held while the cache is bypassed answers when the database cannot be reached.
    const found = await outageOf(deps.pool).read(deps.rootKeyCache.stale(hash), () => findRootKeyByHash(deps.pool, hash));
    if (deps.rootKeyCache.generation === generation) {
      if (found) deps.rootKeyCache.set(hash, found, [`rootkey:${found.id}`, `ws:${found.workspaceId}`]);
      else deps.rootKeyCache.setMiss(hash);
    }
    record = found ?? MISS;
  }
  if (record === MISS) throw new AppError("err:svc:authentication:key_not_found");
  if (!record.workspaceEnabled) throw new AppError("err:svc:authorization:workspace_disabled");
  if (!record.enabled) throw new AppError("err:svc:authorization:key_disabled");
  if (record.expiresAt !== undefined && deps.clock.now() > record.expiresAt) {
    throw new AppError("err:svc:authorization:forbidden", "The root key has expired.");
  }
  // Memory only: the write-behind stores it in a batch later.
  deps.rootKeyUsage.record(record.id, deps.clock.now());
  return { workspaceId: record.workspaceId, rootKeyId: record.id, permissions: record.permissions };
}
