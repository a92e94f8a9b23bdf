import type { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { andThen } from "../core/answer.js";
import type { Deps } from "../domain/deps.js";
import { addPermissions, addRoles, removePermissions, removeRoles, setPermissions, setRoles } from "../domain/keys/grants.js";
import { createKey, deleteKey, getKey, listKeys, whoami } from "../domain/keys/keys.js";
import { rerollKey, updateCredits, updateKey } from "../domain/keys/update.js";
import { type VerifyOutcome, verifyKey } from "../domain/keys/verify.js";
import { big, num, optNum, ratelimitsIn } from "./convert.js";
import { migrateKeysOp } from "./key-migrations.js";
import { nonEmpty, toCredits, toIdentity, toKeyResponse, toPagination, toPermission, toRole } from "./mappers.js";
import type { Operations } from "./types.js";

type VerifyKeyAnswer = Exclude<Awaited<ReturnType<Operations<typeof KeysService>["verifyKey"]>>, undefined>;
const NO_RATELIMITS: [] = [];

/** keys.verifyKey's answer from the domain's outcome. */
function verifyKeyAnswer(out: VerifyOutcome): VerifyKeyAnswer {
  if (out.code === "NOT_FOUND") return { valid: false, code: "NOT_FOUND" };
  const k = out.key;
  // Optional fields set one by one: spreads of `cond ? {...} : {}` made an object each, per verification.
  const res: VerifyKeyAnswer = {
    valid: out.valid,
    code: out.code,
    keyId: k.id,
    enabled: k.enabled,
    // The cached record's own lists (NONE when empty), not copies: an answer is only read.
    permissions: k.permissions as string[],
    roles: k.roles as string[],
    ratelimits: out.ratelimits.map((r) => ({
      id: r.id,
      name: r.name,
      limit: big(r.limit),
      duration: big(r.duration),
      reset: big(r.reset),
      remaining: big(r.remaining),
      exceeded: r.exceeded,
      autoApply: r.autoApply,
    })),
  };
  if (k.name) res.name = k.name;
  const meta = nonEmpty(k.meta);
  if (meta) res.meta = meta as never;
  if (k.expires !== undefined) res.expires = big(k.expires);
  if (out.credits !== undefined) res.credits = big(out.credits);
  if (k.identity) res.identity = toIdentity(k.identity);
  return res;
}

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
    verifyKey(req, { principal }) {
      const out = verifyKey(deps, principal, {
        key: req.key,
        permissions: req.permissions,
        credits: req.credits === undefined ? undefined : { cost: num(req.credits.cost) },
        ratelimits:
          req.ratelimits.length === 0
            ? NO_RATELIMITS
            : req.ratelimits.map((r) => ({ name: r.name, cost: optNum(r.cost), limit: optNum(r.limit), duration: optNum(r.duration) })),
        tags: req.tags,
        migrationId: req.migrationId,
      });
      // A hot key's outcome is the value itself (domain/keys/verify.ts): answered without a promise.
      return andThen(out, verifyKeyAnswer);
    },
    getKey: async (req, { principal }) => ({ key: toKeyResponse(await getKey(deps, principal, req)) }),
    whoami: async (req, { principal }) => ({ key: toKeyResponse(await whoami(deps, principal, req)) }),
    async updateKey(req, { principal }) {
      const refill = req.credits?.refill;
      await updateKey(deps, principal, {
        keyId: req.keyId,
        name: req.name,
        externalId: req.externalId,
        meta: req.meta,
        expires: req.expires === undefined ? undefined : { value: optNum(req.expires.value) },
        credits:
          req.credits === undefined
            ? undefined
            : {
                remaining: req.credits.remaining === undefined ? undefined : { value: optNum(req.credits.remaining.value) },
                refill:
                  refill === undefined
                    ? undefined
                    : {
                        value:
                          refill.value === undefined
                            ? undefined
                            : { interval: refill.value.interval, amount: num(refill.value.amount), refillDay: refill.value.refillDay },
                      },
              },
        ratelimits: req.setRatelimits ? ratelimitsIn(req.ratelimits) : undefined,
        enabled: req.enabled,
        roles: req.setRoles ? req.roles : undefined,
        permissions: req.setPermissions ? req.permissions : undefined,
      });
      return {};
    },
    async updateCredits(req, { principal }) {
      const out = await updateCredits(deps, principal, { keyId: req.keyId, operation: req.operation, value: optNum(req.value) });
      return { credits: toCredits(out.remaining, out.refill) };
    },
    async deleteKey(req, { principal }) {
      await deleteKey(deps, principal, req);
      return {};
    },
    rerollKey: (req, { principal }) => rerollKey(deps, principal, { keyId: req.keyId, expiration: num(req.expiration) }),
    // Key grants (domain/keys/grants.ts): the JSON gateway sends the list as `data`.
    addPermissions: async (req, { principal }) => ({ permissions: (await addPermissions(deps, principal, req)).map(toPermission) }),
    removePermissions: async (req, { principal }) => ({ permissions: (await removePermissions(deps, principal, req)).map(toPermission) }),
    setPermissions: async (req, { principal }) => ({ permissions: (await setPermissions(deps, principal, req)).map(toPermission) }),
    addRoles: async (req, { principal }) => ({ roles: (await addRoles(deps, principal, req)).map(toRole) }),
    removeRoles: async (req, { principal }) => ({ roles: (await removeRoles(deps, principal, req)).map(toRole) }),
    setRoles: async (req, { principal }) => ({ roles: (await setRoles(deps, principal, req)).map(toRole) }),
    migrateKeys: migrateKeysOp(deps),
    async listKeys(req, { principal }) {
      const page = await listKeys(deps, principal, req);
      return { keys: page.keys.map(toKeyResponse), pagination: toPagination(page.cursor) };
    },
  };
}
