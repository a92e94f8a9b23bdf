// keyhold.dashboard.v1.DashboardService on the Connect door: operations only an
// operator's session may call (a root key is never accepted, and the service is
// in neither the JSON /v2 route table nor gRPC). Each workspace named in a
// request is checked against the operator's memberships; one they do not belong
// to answers exactly as one that does not exist.
import { DashboardService, Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { generateRootKey } from "../domain/auth/root-key.js";
import { NAMESPACE_RULE } from "../domain/ratelimit/namespaces.js";
import type { Deps } from "../domain/deps.js";
import { AppError } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { hashKey } from "../domain/keys/generate.js";
import { Validator } from "../domain/validate.js";
import type { Operations } from "../services/types.js";
import {
  createNamespace,
  createOperatorWorkspace,
  isWorkspaceRootKey,
  listApis,
  listLiveNamespaces,
  listWorkspaceRootKeys,
  NamespaceNameTaken,
  softDeleteNamespace,
  WorkspaceNameTaken,
} from "../storage/dashboard.js";
import { operatorWorkspace, operatorWorkspaces } from "../storage/operators.js";
import { insertRootKey, revokeRootKey } from "../storage/root-keys.js";
import { queryUsage } from "../domain/keys/usage-query.js";
import type { UsageGranularity } from "../storage/usage.js";
import type { Config } from "./config.js";
import type { ConnectService } from "./connect.js";
import { callSession, OPERATOR_GRANTS, operatorActor, operatorOf } from "./dashboard.js";
import { searchKeys } from "../domain/keys/keys.js";
import { toKeyResponse } from "../services/mappers.js";

/** A grant as the CLI accepts it. */
const PERMISSION = /^[a-zA-Z0-9_.*:\-]{1,256}$/;
const MAX_PERMISSIONS = 1_000;

const GRANULARITY: Partial<Record<Granularity, UsageGranularity>> = {
  [Granularity.MINUTE]: "minute",
  [Granularity.HOUR]: "hour",
  [Granularity.DAY]: "day",
};

type DashboardOps = {
  [K in keyof Operations<typeof DashboardService>]: (
    req: Parameters<Operations<typeof DashboardService>[K]>[0],
    operatorId: string,
  ) => ReturnType<Operations<typeof DashboardService>[K]>;
};

function dashboardOps(deps: Deps): DashboardOps {
  /** The workspace, when the operator belongs to it; 403 otherwise (whether or not it exists). */
  const member = async (operatorId: string, workspaceId: string): Promise<string> => {
    const v = new Validator();
    v.required("workspaceId", workspaceId, { max: 48 });
    v.done();
    const ws = await operatorWorkspace(deps.pool, operatorId, workspaceId);
    if (ws === undefined) throw new AppError("err:svc:authorization:forbidden", "The workspace does not exist or this operator has no access to it.");
    // As on the v2 calls: a disabled workspace's root keys and namespaces stay as they are.
    if (!ws.enabled) throw new AppError("err:svc:authorization:workspace_disabled");
    return ws.id;
  };

  return {
    async listWorkspaces(_req, operatorId) {
      const all = await operatorWorkspaces(deps.pool, operatorId);
      return { workspaces: all.map((w) => ({ id: w.id, name: w.name })) };
    },

    async createWorkspace(req, operatorId) {
      const v = new Validator();
      v.required("name", req.name, { max: 256, noTrailingSpace: true });
      v.done();
      try {
        const ws = await createOperatorWorkspace(deps.pool, operatorId, req.name, deps.clock.now());
        return { workspace: { id: ws.id, name: ws.name } };
      } catch (err) {
        if (err instanceof WorkspaceNameTaken) throw new AppError("err:svc:application:precondition_failed", "Another workspace already has this name; choose another.");
        throw err;
      }
    },

    async createRootKey(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const v = new Validator();
      v.string("name", req.name, { max: 256 });
      v.items("permissions", req.permissions, { minItems: 1, maxItems: MAX_PERMISSIONS, pattern: PERMISSION, patternText: "letters, digits and . _ * : - (1 to 256 characters)" });
      v.done();
      const now = deps.clock.now();
      const rootKey = generateRootKey();
      const keyId = newId("key", now);
      await insertRootKey(deps.pool, {
        id: keyId,
        workspaceId,
        hash: hashKey(rootKey),
        start: rootKey.slice(0, 8),
        name: req.name === "" ? null : req.name,
        permissions: [...new Set(req.permissions)],
        now,
      });
      return { keyId, rootKey };
    },

    async listRootKeys(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const keys = await listWorkspaceRootKeys(deps.pool, workspaceId);
      return {
        rootKeys: keys.map((k) => ({ ...k, createdAt: BigInt(k.createdAt), lastUsedAt: k.lastUsedAt === undefined ? undefined : BigInt(k.lastUsedAt) })),
      };
    },

    async revokeRootKey(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const v = new Validator();
      v.required("keyId", req.keyId, { max: 48 });
      v.done();
      // Only a key of this workspace: a key id from elsewhere is "not found" like an unknown one.
      const hash = (await isWorkspaceRootKey(deps.pool, workspaceId, req.keyId)) ? await revokeRootKey(deps.pool, req.keyId, deps.clock.now()) : undefined;
      if (hash === undefined) throw new AppError("err:svc:data:key_not_found", "No live root key with this id in the workspace.");
      // Evicted here at once, and from other instances' caches on their next poll.
      await deps.invalidate("rootkey", hash);
      return {};
    },

    async listApis(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const apis = await listApis(deps.pool, workspaceId);
      return { apis: apis.map((a) => ({ ...a, createdAt: BigInt(a.createdAt) })) };
    },

    async getUsage(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const granularity = GRANULARITY[req.granularity];
      if (granularity === undefined) {
        const v = new Validator();
        v.add("granularity", "granularity must be GRANULARITY_MINUTE, GRANULARITY_HOUR or GRANULARITY_DAY.");
        v.done();
      }
      const points = await queryUsage(deps.pool, {
        workspaceId,
        ...(req.apiId === "" ? {} : { apiId: req.apiId }),
        ...(req.keyId === "" ? {} : { keyId: req.keyId }),
        from: Number(req.from),
        to: Number(req.to),
        granularity: granularity as UsageGranularity,
      });
      return { points: points.map((p) => ({ time: BigInt(p.time), outcome: p.outcome, count: BigInt(p.count) })) };
    },

    async listNamespaces(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const all = await listLiveNamespaces(deps.pool, workspaceId);
      return { namespaces: all.map((n) => ({ ...n, createdAt: BigInt(n.createdAt) })) };
    },

    async createNamespace(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const v = new Validator();
      v.required("name", req.name, NAMESPACE_RULE);
      v.done();
      try {
        const ns = await createNamespace(deps.pool, workspaceId, req.name, deps.clock.now());
        return { namespace: { ...ns, createdAt: BigInt(ns.createdAt) } };
      } catch (err) {
        if (err instanceof NamespaceNameTaken) {
          throw new AppError("err:svc:application:precondition_failed", "A namespace of this name exists, or existed and was deleted; choose another name.");
        }
        throw err;
      }
    },

    async deleteNamespace(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const v = new Validator();
      v.required("namespaceId", req.namespaceId, { max: 48 });
      v.done();
      if (!(await softDeleteNamespace(deps.pool, workspaceId, req.namespaceId, deps.clock.now()))) {
        throw new AppError("err:svc:data:ratelimit_namespace_not_found", "No live namespace with this id in the workspace.");
      }
      // Cached lookups of it end here at once, and on other instances on their next poll.
      await deps.invalidate("namespace", req.namespaceId);
      return {};
    },

    async searchKeys(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      // As keys.listKeys would answer this operator in the workspace (their grants there are `*`).
      const principal = { workspaceId, rootKeyId: operatorActor(operatorId), permissions: OPERATOR_GRANTS };
      const found = await searchKeys(deps, principal, { apiId: req.apiId, query: req.query, limit: req.limit === 0 ? undefined : req.limit });
      return { keys: found.keys.map(toKeyResponse), hasMore: found.more };
    },
  };
}

/**
 * DashboardService on the Connect door: every call needs a live session (cookie,
 * CSRF token, same Origin), checked from the headers before the body is read.
 */
export function dashboardConnectService(deps: Deps, config: Config): ConnectService {
  const ops = dashboardOps(deps);
  const sessionOfCall = callSession(deps, config);
  const adapted: ConnectService["ops"] = {};
  for (const method of DashboardService.methods) {
    const op = ops[method.localName as keyof DashboardOps] as (req: unknown, operatorId: string) => Promise<unknown>;
    adapted[method.localName] = (req, call) => op(req, operatorOf(call.principal));
  }
  return {
    service: DashboardService,
    // The session only: an Authorization header is ignored, so a root key opens nothing here.
    authenticate: async (headers) => {
      const session = await sessionOfCall(headers);
      return { workspaceId: "", rootKeyId: operatorActor(session.operatorId), permissions: [] };
    },
    ops: adapted,
  };
}
