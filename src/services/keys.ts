import type { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import type { Deps } from "../domain/deps.js";
import { AppError } from "../domain/errors.js";
import { createKey, deleteKey, getKey, listKeys, whoami } from "../domain/keys/keys.js";
import { verifyKey } from "../domain/keys/verify.js";
import { big, num, optNum, ratelimitsIn } from "./convert.js";
import { toIdentity, toKeyResponse, toPagination } from "./mappers.js";
import type { Operations } from "./types.js";

const notYet = (op: string) => new AppError("err:svc:application:precondition_failed", `keys.${op} is not available yet.`);

export function keysService(deps: Deps): Operations<typeof KeysService> {
  return {
    createKey: (req, { principal }) =>
      createKey(deps, principal, {
        apiId: req.apiId,
        prefix: req.prefix,
        name: req.name,
        byteLength: req.byteLength,
        externalId: req.externalId,
        meta: req.meta,
        roles: req.roles,
        permissions: req.permissions,
        expires: optNum(req.expires),
        credits:
          req.credits === undefined
            ? undefined
            : {
                remaining: optNum(req.credits.remaining),
                refill:
                  req.credits.refill === undefined
                    ? undefined
                    : { interval: req.credits.refill.interval, amount: num(req.credits.refill.amount), refillDay: req.credits.refill.refillDay },
              },
        ratelimits: ratelimitsIn(req.ratelimits),
        enabled: req.enabled,
        recoverable: req.recoverable,
      }),
    async verifyKey(req, { principal }) {
      const out = await verifyKey(deps, principal, {
        key: req.key,
        permissions: req.permissions,
        credits: req.credits === undefined ? undefined : { cost: num(req.credits.cost) },
        ratelimits: req.ratelimits.map((r) => ({ name: r.name, cost: optNum(r.cost), limit: optNum(r.limit), duration: optNum(r.duration) })),
        tags: req.tags,
      });
      if (out.code === "NOT_FOUND") return { valid: false, code: "NOT_FOUND" };
      const k = out.key;
      return {
        valid: out.valid,
        code: out.code,
        keyId: k.id,
        ...(k.name ? { name: k.name } : {}),
        ...(k.meta && Object.keys(k.meta).length > 0 ? { meta: k.meta as never } : {}),
        ...(k.expires !== undefined ? { expires: big(k.expires) } : {}),
        ...(out.credits !== undefined ? { credits: big(out.credits) } : {}),
        enabled: k.enabled,
        permissions: k.permissions,
        roles: k.roles,
        ...(k.identity ? { identity: toIdentity(k.identity) } : {}),
        ratelimits: out.ratelimits.map((r) => ({ ...r, limit: big(r.limit), duration: big(r.duration), reset: big(r.reset), remaining: big(r.remaining) })),
      };
    },
    getKey: async (req, { principal }) => ({ key: toKeyResponse(await getKey(deps, principal, req)) }),
    whoami: async (req, { principal }) => ({ key: toKeyResponse(await whoami(deps, principal, req)) }),
    async updateKey() {
      throw notYet("updateKey");
    },
    async updateCredits() {
      throw notYet("updateCredits");
    },
    async deleteKey(req, { principal }) {
      await deleteKey(deps, principal, req);
      return {};
    },
    async rerollKey() {
      throw notYet("rerollKey");
    },
    async listKeys(req, { principal }) {
      const page = await listKeys(deps, principal, req);
      return { keys: page.keys.map(toKeyResponse), pagination: toPagination(page.cursor) };
    },
  };
}
