import type { RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { AppError } from "../domain/errors.js";
import type { Operations } from "./types.js";

const notYet = (op: string) => new AppError("err:svc:application:precondition_failed", `ratelimit.${op} is not available yet.`);

export function ratelimitService(_deps: Deps): Operations<typeof RatelimitService> {
  return {
    async limit() {
      throw notYet("limit");
    },
    async multiLimit() {
      throw notYet("multiLimit");
    },
    async setOverride() {
      throw notYet("setOverride");
    },
    async getOverride() {
      throw notYet("getOverride");
    },
    async listOverrides() {
      throw notYet("listOverrides");
    },
    async deleteOverride() {
      throw notYet("deleteOverride");
    },
  };
}
