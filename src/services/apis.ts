import type { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { createApi, deleteApi, getApi } from "../domain/apis/apis.js";
import type { Deps } from "../domain/deps.js";
import { listKeys } from "../domain/keys/keys.js";
import { toKeyResponse, toPagination } from "./mappers.js";
import type { Operations } from "./types.js";

export function apisService(deps: Deps): Operations<typeof ApisService> {
  return {
    createApi: (req, { principal }) => createApi(deps, principal, { name: req.name }),
    getApi: (req, { principal }) => getApi(deps, principal, { apiId: req.apiId }),
    async deleteApi(req, { principal }) {
      await deleteApi(deps, principal, { apiId: req.apiId });
      return {};
    },
    async listKeys(req, { principal }) {
      const page = await listKeys(deps, principal, req);
      return { keys: page.keys.map(toKeyResponse), pagination: toPagination(page.cursor) };
    },
  };
}
