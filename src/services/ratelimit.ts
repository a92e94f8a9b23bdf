import type { MessageInitShape } from "@bufbuild/protobuf";
import type { LimitRequest, LimitResponseSchema, RatelimitOverrideSchema, RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import { andThen } from "../core/answer.js";
import type { Deps } from "../domain/deps.js";
import { type LimitInput, type LimitOutcome, limit, multiLimit } from "../domain/ratelimit/limit.js";
import { deleteOverride, getOverride, listOverrides, type OverrideRow, setOverride } from "../domain/ratelimit/overrides.js";
import { big, num, optNum } from "./convert.js";
import { toPagination } from "./mappers.js";
import type { Operations } from "./types.js";

const limitIn = (r: LimitRequest): LimitInput => ({
  namespace: r.namespace,
  identifier: r.identifier,
  limit: num(r.limit),
  duration: num(r.duration),
  cost: optNum(r.cost),
});

const toOverride = (o: OverrideRow): MessageInitShape<typeof RatelimitOverrideSchema> => ({
  overrideId: o.id,
  identifier: o.identifier,
  limit: big(o.limit),
  duration: big(o.duration),
  namespaceId: o.namespaceId,
});

// Two literals rather than a spread of an optional part: an object spread copies through V8's runtime, on every ratelimit.limit.
const limitAnswer = (r: LimitOutcome): MessageInitShape<typeof LimitResponseSchema> =>
  r.overrideId === undefined
    ? { limit: big(r.limit), remaining: big(r.remaining), reset: big(r.reset), success: r.success }
    : { limit: big(r.limit), remaining: big(r.remaining), reset: big(r.reset), success: r.success, overrideId: r.overrideId };

export function ratelimitService(deps: Deps): Operations<typeof RatelimitService> {
  return {
    limit(req, { principal }) {
      // A hot identifier's outcome is the value itself (domain/ratelimit/limit.ts): answered without a promise.
      return andThen(limit(deps, principal, limitIn(req)), limitAnswer);
    },
    async multiLimit(req, { principal }) {
      const r = await multiLimit(deps, principal, req.limits.map(limitIn));
      return {
        passed: r.passed,
        limits: r.limits.map((l) => ({
          namespace: l.namespace,
          identifier: l.identifier,
          limit: big(l.limit),
          remaining: big(l.remaining),
          reset: big(l.reset),
          passed: l.passed,
          ...(l.overrideId === undefined ? {} : { overrideId: l.overrideId }),
        })),
      };
    },
    setOverride: (req, { principal }) =>
      setOverride(deps, principal, { namespace: req.namespace, identifier: req.identifier, limit: num(req.limit), duration: num(req.duration) }),
    getOverride: async (req, { principal }) => ({
      override: toOverride(await getOverride(deps, principal, { namespace: req.namespace, identifier: req.identifier })),
    }),
    async listOverrides(req, { principal }) {
      const page = await listOverrides(deps, principal, { namespace: req.namespace, limit: req.limit, cursor: req.cursor });
      return { overrides: page.overrides.map(toOverride), pagination: toPagination(page.cursor) };
    },
    async deleteOverride(req, { principal }) {
      await deleteOverride(deps, principal, { namespace: req.namespace, identifier: req.identifier });
      return {};
    },
  };
}
