// checkBody's result is the request message every door hands the operations:
// the generated type's shape, defaults filled, 64-bit integers as bigint,
// Nullable* wrappers and set_<field> flags set, and field errors in the order
// of the body's keys. Exact values here (toStrictEqual tells 10n from 10), so
// that a check compiled per message (compileCheck) keeps the walk's results.
import { describe, expect, it } from "vitest";
import { UpdateKeyRequestSchema, VerifyKeyRequestSchema } from "../../gen/keyhold/v2/keys_service_pb.js";
import { LimitRequestSchema } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import { checkBody } from "./json-check.js";

describe("checkBody", () => {
  it("fills the defaults and keeps a plain verifyKey's key", () => {
    expect(checkBody(VerifyKeyRequestSchema, { key: "k" })).toStrictEqual({ json: { key: "k", ratelimits: [], tags: [] }, errors: [] });
  });

  it("gives 64-bit integers as bigint, at the top and inside nested messages and lists", () => {
    expect(checkBody(LimitRequestSchema, { namespace: "ns", identifier: "u", limit: 10, duration: 60_000 })).toStrictEqual({
      json: { namespace: "ns", identifier: "u", limit: 10n, duration: 60_000n },
      errors: [],
    });
    expect(checkBody(VerifyKeyRequestSchema, { key: "k", credits: { cost: 2 }, ratelimits: [{ name: "x", cost: 3 }] })).toStrictEqual({
      json: { key: "k", ratelimits: [{ name: "x", cost: 3n }], tags: [], credits: { cost: 2n } },
      errors: [],
    });
  });

  it("wraps nullable fields, gives null its meaning and sets the set_ flag of a list sent", () => {
    const body = {
      keyId: "key_1",
      name: null,
      externalId: "user_1",
      expires: 1_700_000_000_000,
      credits: null,
      ratelimits: [{ name: "r", limit: 10, duration: 1000 }],
      enabled: false,
    };
    expect(checkBody(UpdateKeyRequestSchema, body)).toStrictEqual({
      json: {
        keyId: "key_1",
        ratelimits: [{ name: "r", limit: 10n, duration: 1000n }],
        setRatelimits: true,
        roles: [],
        setRoles: false,
        permissions: [],
        setPermissions: false,
        name: {},
        externalId: { value: "user_1" },
        expires: { value: 1_700_000_000_000n },
        credits: { remaining: {} },
        enabled: false,
      },
      errors: [],
    });
  });

  it("names every field in error, in the body's order, then the numbers missing", () => {
    const { errors } = checkBody(LimitRequestSchema, { namespace: 5, extra: 1, identifier: "a\ud800", cost: 2 ** 53 + 2 });
    expect(errors.map((e) => e.location)).toStrictEqual(["body.namespace", "body.extra", "body.identifier", "body.cost", "body.limit", "body.duration"]);
    expect(errors[0]?.message).toBe("namespace must be a valid Unicode string, not an integer.");
    expect(errors[1]).toStrictEqual({
      location: "body.extra",
      message: "extra is not a known field of this request.",
      fix: "Remove extra; the fields are: namespace, identifier, limit, duration, cost.",
    });
    expect(errors[2]?.message).toBe("identifier must be a valid Unicode string, not a string with a lone surrogate.");
    expect(errors[3]?.message).toBe("cost must be an integer, not an integer beyond ±9007199254740991 (not exact as a JSON number).");
    expect(errors[4]).toStrictEqual({ location: "body.limit", message: "limit is required.", fix: "Send limit as an integer." });
  });

  it("refuses null where a field is not nullable, and a value of the wrong JSON type inside a list", () => {
    const { errors } = checkBody(VerifyKeyRequestSchema, { key: null, tags: ["a", 1], ratelimits: [{ name: true }] });
    expect(errors.map((e) => [e.location, e.message])).toStrictEqual([
      ["body.key", "key must not be null."],
      ["body.tags[1]", "tags[1] must be a valid Unicode string, not an integer."],
      ["body.ratelimits[0].name", "ratelimits[0].name must be a valid Unicode string, not a boolean."],
    ]);
  });
});
