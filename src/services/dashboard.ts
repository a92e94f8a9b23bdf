// keyhold.dashboard.v1.DashboardService: the operations only an operator's
// session may call, on the generated message types. Each one maps its message
// onto the same domain operations the CLI and the v2 API use; every workspace
// named in a request is first checked against the operator's memberships.
import { type DashboardService, Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { listWorkspaceApis } from "../domain/apis/apis.js";
import { issueRootKey, listRootKeys, revokeRootKey } from "../domain/auth/root-keys.js";
import type { Deps } from "../domain/deps.js";
import { searchKeys } from "../domain/keys/keys.js";
import { queryUsage } from "../domain/keys/usage-query.js";
import { operatorPrincipal } from "../domain/operators/principal.js";
import { createOperatorWorkspace, listOperatorWorkspaces, memberWorkspace } from "../domain/operators/workspaces.js";
import { createNamespace, deleteNamespace, listNamespaces } from "../domain/ratelimit/namespace-admin.js";
import { Validator } from "../domain/validate.js";
import type { UsageGranularity } from "../storage/usage.js";
import { toKeyResponse } from "./mappers.js";
import type { Operations } from "./types.js";

const GRANULARITY: Partial<Record<Granularity, UsageGranularity>> = {
  [Granularity.MINUTE]: "minute",
  [Granularity.HOUR]: "hour",
  [Granularity.DAY]: "day",
};

/** Each RPC of DashboardService, called with the operator the session belongs to. */
export type DashboardOps = {
  [K in keyof Operations<typeof DashboardService>]: (
    req: Parameters<Operations<typeof DashboardService>[K]>[0],
    operatorId: string,
  ) => ReturnType<Operations<typeof DashboardService>[K]>;
};

export function dashboardService(deps: Deps): DashboardOps {
  const member = (operatorId: string, workspaceId: string) => memberWorkspace(deps, operatorId, workspaceId);
  return {
    async listWorkspaces(_req, operatorId) {
      return { workspaces: await listOperatorWorkspaces(deps, operatorId) };
    },

    async createWorkspace(req, operatorId) {
      return { workspace: await createOperatorWorkspace(deps, operatorId, req.name) };
    },

    async createRootKey(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      return issueRootKey(deps, { workspaceId, name: req.name, permissions: req.permissions });
    },

    async listRootKeys(req, operatorId) {
      const keys = await listRootKeys(deps, await member(operatorId, req.workspaceId));
      return {
        rootKeys: keys.map((k) => ({ ...k, createdAt: BigInt(k.createdAt), lastUsedAt: k.lastUsedAt === undefined ? undefined : BigInt(k.lastUsedAt) })),
      };
    },

    async revokeRootKey(req, operatorId) {
      await revokeRootKey(deps, { keyId: req.keyId, workspaceId: await member(operatorId, req.workspaceId) });
      return {};
    },

    async listApis(req, operatorId) {
      const apis = await listWorkspaceApis(deps, await member(operatorId, req.workspaceId));
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
      const all = await listNamespaces(deps, await member(operatorId, req.workspaceId));
      return { namespaces: all.map((n) => ({ ...n, createdAt: BigInt(n.createdAt) })) };
    },

    async createNamespace(req, operatorId) {
      const ns = await createNamespace(deps, await member(operatorId, req.workspaceId), req.name);
      return { namespace: { ...ns, createdAt: BigInt(ns.createdAt) } };
    },

    async deleteNamespace(req, operatorId) {
      await deleteNamespace(deps, await member(operatorId, req.workspaceId), req.namespaceId);
      return {};
    },

    async searchKeys(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      // As keys.listKeys would answer this operator in the workspace (their grants there are `*`).
      const found = await searchKeys(deps, operatorPrincipal(operatorId, workspaceId), {
        apiId: req.apiId,
        query: req.query,
        limit: req.limit === 0 ? undefined : req.limit,
      });
      return { keys: found.keys.map(toKeyResponse), hasMore: found.more };
    },
  };
}
