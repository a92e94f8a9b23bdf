import type { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { migrateKeys } from "../domain/keys/migrate.js";
import { num, optNum, ratelimitsIn } from "./convert.js";
import type { Operations } from "./types.js";

/** keys.migrateKeys: the generated request to domain input, the result back. */
export const migrateKeysOp =
  (deps: Deps): Operations<typeof KeysService>["migrateKeys"] =>
  async (req, { principal }) =>
    migrateKeys(deps, principal, {
      migrationId: req.migrationId,
      apiId: req.apiId,
      keys: req.keys.map((k) => ({
        hash: k.hash,
        name: k.name,
        externalId: k.externalId,
        meta: k.meta,
        roles: k.roles,
        permissions: k.permissions,
        expires: optNum(k.expires),
        enabled: k.enabled,
        credits:
          k.credits === undefined
            ? undefined
            : {
                remaining: optNum(k.credits.remaining),
                refill:
                  k.credits.refill === undefined
                    ? undefined
                    : { interval: k.credits.refill.interval, amount: num(k.credits.refill.amount), refillDay: k.credits.refill.refillDay },
              },
        ratelimits: ratelimitsIn(k.ratelimits),
      })),
    });
