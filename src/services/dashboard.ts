// keyhold.dashboard.v1.DashboardService: the operations only an operator's
// session may call, on the generated message types. Each one maps its message
// onto the same domain operations the CLI and the v2 API use; every workspace
// named in a request is first checked against the operator's memberships.
import { type DashboardService, Granularity } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { listWorkspaceApis } from "../domain/apis/apis.js";
import { listWorkspaceLogs } from "../domain/audit/list.js";
import type { Principal, RequestOrigin } from "../domain/auth/principal.js";
import { issueRootKey, listRootKeys, revokeRootKey, rotateRootKey, updateRootKey } from "../domain/auth/root-keys.js";
import type { Deps } from "../domain/deps.js";
import { searchKeys } from "../domain/keys/keys.js";
import { queryUsage } from "../domain/keys/usage-query.js";
import { operatorPrincipal } from "../domain/operators/principal.js";
import { createOperatorWorkspace, listOperatorWorkspaces, memberWorkspace } from "../domain/operators/workspaces.js";
import { createNamespace, deleteNamespace, listNamespaces } from "../domain/ratelimit/namespace-admin.js";
import { Validator } from "../domain/validate.js";
import type { UsageGranularity } from "../storage/analytics-usage.js";
import { toAuditLog } from "./audit-logs.js";
import { toKeyResponse } from "./mappers.js";
import { toRootKeyData } from "./root-keys.js";
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
    /** Where the call came from, for the audit records of the operator's changes. */
    origin?: RequestOrigin | undefined,
  ) => ReturnType<Operations<typeof DashboardService>[K]>;
};

// The dashboard's RootKey has the fields of keyhold.v2's RootKeyData.
const toDashboardRootKey = toRootKeyData;

/** The operator acting in a workspace, with the request's origin for the audit log. */
const acting = (operatorId: string, workspaceId: string, origin: RequestOrigin | undefined): Principal => ({
  ...operatorPrincipal(operatorId, workspaceId),
  origin,
});

export function dashboardService(deps: Deps): DashboardOps {
  const member = (operatorId: string, workspaceId: string) => memberWorkspace(deps, operatorId, workspaceId);
  return {
    async listWorkspaces(_req, operatorId) {
      return { workspaces: await listOperatorWorkspaces(deps, operatorId) };
    },

    async createWorkspace(req, operatorId, origin) {
      return { workspace: await createOperatorWorkspace(deps, operatorId, req.name, origin) };
    },

    async createRootKey(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      return issueRootKey(deps, acting(operatorId, workspaceId, origin), {
        workspaceId,
        name: req.name,
        permissions: req.permissions,
        expires: req.expires === undefined ? undefined : Number(req.expires),
      });
    },

    async listRootKeys(req, operatorId) {
      const keys = await listRootKeys(deps, await member(operatorId, req.workspaceId));
      return { rootKeys: keys.map(toDashboardRootKey) };
    },

    async updateRootKey(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const key = await updateRootKey(deps, acting(operatorId, workspaceId, origin), {
        keyId: req.keyId,
        workspaceId,
        name: req.name,
        permissions: req.setPermissions ? req.permissions : undefined,
        enabled: req.enabled,
        expires: req.expires === undefined ? undefined : Number(req.expires),
      });
      return { rootKey: toDashboardRootKey(key) };
    },

    async rotateRootKey(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const out = await rotateRootKey(deps, acting(operatorId, workspaceId, origin), {
        keyId: req.keyId,
        workspaceId,
        gracePeriodMs: Number(req.gracePeriodMs),
      });
      return { keyId: out.keyId, rootKey: out.rootKey, previousExpires: BigInt(out.previousExpires) };
    },

    async listAuditLogs(req, operatorId) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const v = new Validator();
      v.number("limit", req.limit, { min: 1, max: 100 });
      v.done();
      const page = await listWorkspaceLogs(deps, workspaceId, {
        start: req.start === undefined ? undefined : Number(req.start),
        end: req.end === undefined ? undefined : Number(req.end),
        actorId: req.actorId || undefined,
        actions: req.actions,
        resourceId: req.resourceId || undefined,
        limit: req.limit ?? 50,
        cursor: req.cursor || undefined,
      });
      return { logs: page.logs.map(toAuditLog), cursor: page.cursor };
    },

    async revokeRootKey(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      await revokeRootKey(deps, acting(operatorId, workspaceId, origin), { keyId: req.keyId, workspaceId });
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
      const points = await queryUsage(
        { main: deps.pool, analytics: deps.analyticsPool },
        {
          workspaceId,
          ...(req.apiId === "" ? {} : { apiId: req.apiId }),
          ...(req.keyId === "" ? {} : { keyId: req.keyId }),
          from: Number(req.from),
          to: Number(req.to),
          granularity: granularity as UsageGranularity,
        },
      );
      return { points: points.map((p) => ({ time: BigInt(p.time), outcome: p.outcome, count: BigInt(p.count) })) };
    },

    async listNamespaces(req, operatorId) {
      const all = await listNamespaces(deps, await member(operatorId, req.workspaceId));
      return { namespaces: all.map((n) => ({ ...n, createdAt: BigInt(n.createdAt) })) };
    },

    async createNamespace(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      const ns = await createNamespace(deps, workspaceId, req.name, acting(operatorId, workspaceId, origin));
      return { namespace: { ...ns, createdAt: BigInt(ns.createdAt) } };
    },

    async deleteNamespace(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      await deleteNamespace(deps, workspaceId, req.namespaceId, acting(operatorId, workspaceId, origin));
      return {};
    },

    async searchKeys(req, operatorId, origin) {
      const workspaceId = await member(operatorId, req.workspaceId);
      // As keys.listKeys would answer this operator in the workspace (their grants there are `*`).
      const found = await searchKeys(deps, acting(operatorId, workspaceId, origin), {
        apiId: req.apiId,
        query: req.query,
        limit: req.limit === 0 ? undefined : req.limit,
      });
      return { keys: found.keys.map(toKeyResponse), hasMore: found.more };
    },
  };
}
