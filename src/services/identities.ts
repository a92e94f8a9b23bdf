import type { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { AppError } from "../domain/errors.js";
import type { Operations } from "./types.js";

const notYet = (op: string) => new AppError("err:svc:application:precondition_failed", `identities.${op} is not available yet.`);

export function identitiesService(_deps: Deps): Operations<typeof IdentitiesService> {
  return {
    async createIdentity() {
      throw notYet("createIdentity");
    },
    async getIdentity() {
      throw notYet("getIdentity");
    },
    async listIdentities() {
      throw notYet("listIdentities");
    },
    async updateIdentity() {
      throw notYet("updateIdentity");
    },
    async deleteIdentity() {
      throw notYet("deleteIdentity");
    },
  };
}
