import type { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { AppError } from "../domain/errors.js";
import type { Operations } from "./types.js";

const notYet = (op: string) => new AppError("err:svc:application:precondition_failed", `permissions.${op} is not available yet.`);

export function permissionsService(_deps: Deps): Operations<typeof PermissionsService> {
  return {
    async createPermission() {
      throw notYet("createPermission");
    },
    async getPermission() {
      throw notYet("getPermission");
    },
    async listPermissions() {
      throw notYet("listPermissions");
    },
    async deletePermission() {
      throw notYet("deletePermission");
    },
    async createRole() {
      throw notYet("createRole");
    },
    async getRole() {
      throw notYet("getRole");
    },
    async listRoles() {
      throw notYet("listRoles");
    },
    async deleteRole() {
      throw notYet("deleteRole");
    },
  };
}
