import type { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { createIdentity, deleteIdentity, getIdentity, listIdentities, updateIdentity } from "../domain/identities/identities.js";
import { ratelimitsIn } from "./convert.js";
import { toIdentity, toPagination } from "./mappers.js";
import type { Operations } from "./types.js";

export function identitiesService(deps: Deps): Operations<typeof IdentitiesService> {
  return {
    createIdentity: (req, { principal }) =>
      createIdentity(deps, principal, { externalId: req.externalId, meta: req.meta, ratelimits: ratelimitsIn(req.ratelimits) }),
    getIdentity: async (req, { principal }) => ({ identity: toIdentity(await getIdentity(deps, principal, { identity: req.identity })) }),
    async listIdentities(req, { principal }) {
      const page = await listIdentities(deps, principal, { limit: req.limit, cursor: req.cursor, search: req.search });
      return { identities: page.identities.map(toIdentity), pagination: toPagination(page.cursor) };
    },
    async updateIdentity(req, { principal }) {
      const identity = await updateIdentity(deps, principal, {
        identity: req.identity,
        meta: req.meta,
        // The JSON gateway sets set_ratelimits whenever `ratelimits` is present; a
        // non-empty list from an RPC client that forgot the flag still means "replace".
        ratelimits: req.setRatelimits || req.ratelimits.length > 0 ? ratelimitsIn(req.ratelimits) : undefined,
      });
      return { identity: toIdentity(identity) };
    },
    async deleteIdentity(req, { principal }) {
      await deleteIdentity(deps, principal, { identity: req.identity });
      return {};
    },
  };
}
