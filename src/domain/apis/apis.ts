import { MISS } from "../../cache/verification-cache.js";
import { AppError } from "../../core/errors.js";
import { newId } from "../../core/ids.js";
import { type ApiRow, findLiveApi, insertApi, softDeleteApi } from "../../storage/apis.js";
import { type ApiListing, listApis } from "../../storage/dashboard.js";
import { audited } from "../audit/audit.js";
import { apiPermission, type Principal, requireAny } from "../auth/principal.js";
import type { Deps } from "../deps.js";

export const apiNotFound = (): AppError => new AppError("err:svc:data:api_not_found");

/**
 * A live API of the workspace through `apiCache`, for creating keys: on a hit,
 * no round trip to the database (createKey is then one INSERT). A deleted API
 * is evicted here at once and on other instances within the invalidation bound
 * (docs/caching.md), the bound a deleted API's keys already verify within.
 */
export async function cachedLiveApi(deps: Deps, workspaceId: string, apiId: string): Promise<ApiRow | undefined> {
  const key = `${workspaceId}|${apiId}`;
  const hit = deps.apiCache.get(key);
  if (hit !== undefined && hit !== MISS) return hit;
  const version = deps.apiCache.version;
  const api = await findLiveApi(deps.pool, workspaceId, apiId);
  if (api === undefined) return undefined;
  // Not cached if the API or its workspace was invalidated meanwhile: the row read may predate that.
  deps.apiCache.setRead(version, key, api, [`api:${api.id}`, `ws:${workspaceId}`]);
  return api;
}

export async function createApi(deps: Deps, p: Principal, input: { name: string }): Promise<{ apiId: string }> {
  requireAny(p, ["apis.*.create_api"]);
  const now = deps.clock.now();
  const apiId = newId("api", now);
  await audited(
    deps,
    p,
    (conn) => insertApi(conn, { id: apiId, keyAuthId: newId("ks", now), workspaceId: p.workspaceId, name: input.name, now }),
    () => ({ action: "api.create", resources: [{ type: "api", id: apiId }], description: "Created the API." }),
  );
  return { apiId };
}

export async function getApi(deps: Deps, p: Principal, input: { apiId: string }): Promise<{ id: string; name: string }> {
  requireAny(p, apiPermission(input.apiId, "read_api"));
  const api = await findLiveApi(deps.pool, p.workspaceId, input.apiId);
  if (!api) throw apiNotFound();
  return { id: api.id, name: api.name };
}

export async function deleteApi(deps: Deps, p: Principal, input: { apiId: string }): Promise<void> {
  requireAny(p, apiPermission(input.apiId, "delete_api"));
  const api = await findLiveApi(deps.pool, p.workspaceId, input.apiId);
  if (!api) throw apiNotFound();
  if (api.deleteProtection) {
    throw new AppError("err:svc:application:protected_resource", "This API has delete protection enabled. Disable it before attempting to delete.");
  }
  const deleted = await audited(
    deps,
    p,
    (conn) => softDeleteApi(conn, p.workspaceId, api.id, deps.clock.now()),
    (done) => (done ? { action: "api.delete", resources: [{ type: "api", id: api.id }], description: "Deleted the API; its keys stop verifying." } : undefined),
  );
  if (!deleted) throw apiNotFound();
  // Its keys stop verifying at once: drop every cached key record of this API.
  await deps.invalidate("api", api.id);
}

/** Every live API of the workspace (the dashboard's list; its caller is already known to act there). */
export async function listWorkspaceApis(deps: Pick<Deps, "pool">, workspaceId: string): Promise<ApiListing[]> {
  return listApis(deps.pool, workspaceId);
}
