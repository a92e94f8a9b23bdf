// The compiled field checks read the protos' buf.validate annotations: what they
// read, the problems they report (JSON names, code-point lengths, wrappers named
// by their field), and that an annotation they cannot compile stops startup.
import { create, createFileRegistry, type DescMessage, setExtension } from "@bufbuild/protobuf";
import { type FieldDescriptorProto_Label, type FieldDescriptorProto_Type, FieldOptionsSchema, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { FieldRulesSchema, field as fieldRulesExt, file_buf_validate_validate } from "@bufbuild/protovalidate/gen/buf/validate/validate_pb.js";
import { describe, expect, it } from "vitest";
import { ApisService, CreateApiRequestSchema } from "../../gen/keyhold/v2/apis_service_pb.js";
import { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import {
  CreateKeyRequestSchema,
  KeysService,
  MigrateKeysRequestSchema,
  UpdateKeyRequestSchema,
  VerifyKeyRequestSchema,
} from "../../gen/keyhold/v2/keys_service_pb.js";
import { PermissionsService } from "../../gen/keyhold/v2/permissions_service_pb.js";
import { RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";
import { compileService, fieldProblems, fieldRule } from "./field-rules.js";

const locations = (desc: DescMessage, msg: object): string[] => fieldProblems(desc, msg).map((e) => e.location);

describe("reading the annotations", () => {
  it("compiles every request of every keyhold.v2 service", () => {
    for (const s of [ApisService, KeysService, IdentitiesService, RatelimitService, PermissionsService]) expect(() => compileService(s)).not.toThrow();
  });

  it("reads required, lengths and pattern from a field", () => {
    expect(fieldRule(CreateKeyRequestSchema.field.apiId)).toEqual({ required: true, minLen: 3, maxLen: 255, pattern: "^[a-zA-Z0-9_]+$" });
    expect(fieldRule(CreateKeyRequestSchema.field.byteLength)).toEqual({ required: false, min: 16n, max: 255n });
    expect(fieldRule(VerifyKeyRequestSchema.field.tags)).toEqual({ required: false, maxItems: 20, items: { required: false, minLen: 1, maxLen: 512 } });
  });

  it("gives an update's Nullable wrapper the rules of the field it sets", () => {
    expect(fieldRule(UpdateKeyRequestSchema.field.name)).toEqual(fieldRule(CreateKeyRequestSchema.field.name));
    expect(fieldRule(UpdateKeyRequestSchema.field.expires)).toEqual({ required: false, min: 0n, max: 4_102_444_800_000n });
  });
});

describe("the checks", () => {
  it("passes a request that keeps every rule", () => {
    const ok = create(CreateKeyRequestSchema, {
      apiId: "api_123",
      prefix: "sk",
      byteLength: 16,
      roles: ["admin"],
      credits: { remaining: 5n, refill: { interval: "daily", amount: 5n } },
      ratelimits: [{ name: "requests", limit: 10n, duration: 1000n }],
    });
    expect(fieldProblems(CreateKeyRequestSchema, ok)).toEqual([]);
  });

  it("names every broken field by its JSON path, in field order, one problem per field", () => {
    const bad = create(CreateKeyRequestSchema, {
      apiId: "",
      prefix: "has space",
      byteLength: 8,
      roles: ["ok", "bad role"],
      expires: -1n,
      credits: { remaining: -1n, refill: { interval: "weekly", amount: 0n, refillDay: 32 } },
      ratelimits: [{ name: "ab", limit: 0n, duration: 10n }],
    });
    const problems = fieldProblems(CreateKeyRequestSchema, bad);
    expect(problems.map((e) => e.location)).toEqual([
      "body.apiId",
      "body.prefix",
      "body.byteLength",
      "body.roles[1]",
      "body.expires",
      "body.credits.remaining",
      "body.credits.refill.interval",
      "body.credits.refill.amount",
      "body.credits.refill.refillDay",
      "body.ratelimits[0].name",
      "body.ratelimits[0].limit",
      "body.ratelimits[0].duration",
    ]);
    expect(problems[0]).toEqual({ location: "body.apiId", message: "apiId is required.", fix: "Send apiId." });
    expect(problems[1]?.message).toBe("prefix must match ^[a-zA-Z0-9_]+$.");
    expect(problems[2]?.message).toBe("byteLength must be at least 16 (got 8).");
    expect(problems[6]?.message).toBe('credits.refill.interval must be "daily" or "monthly" (got "weekly").');
    expect(problems[9]?.message).toBe("ratelimits[0].name must be at least 3 characters long (got 2).");
  });

  it("names an update's wrapped fields without the wrapper", () => {
    const bad = create(UpdateKeyRequestSchema, {
      keyId: "key_1234",
      name: { value: "" },
      expires: { value: 4_102_444_800_001n },
      credits: { remaining: { value: -5n }, refill: { value: { interval: "yearly", amount: 1n } } },
    });
    expect(locations(UpdateKeyRequestSchema, bad)).toEqual(["body.name", "body.expires", "body.credits.remaining", "body.credits.refill.interval"]);
    // A wrapper without a value clears the field: nothing to check.
    expect(locations(UpdateKeyRequestSchema, create(UpdateKeyRequestSchema, { keyId: "key_1234", name: {}, expires: {} }))).toEqual([]);
  });

  it("counts characters, not UTF-16 units", () => {
    const twoEmoji = create(CreateApiRequestSchema, { name: "😀😀" });
    expect(fieldProblems(CreateApiRequestSchema, twoEmoji)[0]?.message).toBe("name must be at least 3 characters long (got 2).");
    expect(fieldProblems(CreateApiRequestSchema, create(CreateApiRequestSchema, { name: "😀😀😀" }))).toEqual([]);
    // 256 characters in 512 units: at the bound, not over it.
    expect(fieldProblems(CreateApiRequestSchema, create(CreateApiRequestSchema, { name: "😀".repeat(256) }))).toEqual([]);
    expect(locations(CreateApiRequestSchema, create(CreateApiRequestSchema, { name: "😀".repeat(257) }))).toEqual(["body.name"]);
  });

  it("refuses an oversized list as a whole, without checking each of its messages", () => {
    const keys = Array.from({ length: 1001 }, () => ({ hash: "x" }));
    const problems = fieldProblems(MigrateKeysRequestSchema, create(MigrateKeysRequestSchema, { migrationId: "mig", apiId: "api_1", keys }));
    expect(problems).toEqual([{ location: "body.keys", message: "keys must have at most 1000 items (got 1001)." }]);
    const empty = fieldProblems(MigrateKeysRequestSchema, create(MigrateKeysRequestSchema, { migrationId: "mig", apiId: "api_1" }));
    expect(empty).toEqual([{ location: "body.keys", message: "keys is required." }]);
  });
});

describe("an annotation keyhold cannot compile", () => {
  /** A message t.M with one string field whose FieldRules are `rules`. */
  function messageWith(rules: Parameters<typeof create<typeof FieldRulesSchema>>[1]): DescMessage {
    const options = create(FieldOptionsSchema);
    setExtension(options, fieldRulesExt, create(FieldRulesSchema, rules));
    const file = create(FileDescriptorProtoSchema, {
      name: "t.proto",
      package: "t",
      syntax: "proto3",
      dependency: ["buf/validate/validate.proto"],
      messageType: [
        {
          name: "M",
          field: [{ name: "s", number: 1, type: 9 as FieldDescriptorProto_Type, label: 1 as FieldDescriptorProto_Label, jsonName: "s", options }],
        },
      ],
    });
    const registry = createFileRegistry(file, (name) => (name === "buf/validate/validate.proto" ? file_buf_validate_validate : undefined));
    const m = registry.getMessage("t.M");
    if (m === undefined) throw new Error("t.M was not built");
    return m;
  }

  it("compiles the rules it knows on a message built at run time", () => {
    const m = messageWith({ type: { case: "string", value: { minLen: 2n } } });
    expect(locations(m, { s: "a" })).toEqual(["body.s"]);
  });

  it("stops on a string rule it does not know", () => {
    const m = messageWith({ type: { case: "string", value: { wellKnown: { case: "email", value: true } } } });
    expect(() => fieldProblems(m, { s: "a" })).toThrow(/t\.M\.s uses StringRules\.email/);
  });

  it("stops on a CEL rule", () => {
    const m = messageWith({ cel: [{ id: "x", expression: "this != ''" }] });
    expect(() => fieldProblems(m, { s: "a" })).toThrow(/t\.M\.s uses FieldRules\.cel/);
  });
});

describe("names compared without trailing spaces", () => {
  it("says a trailing space in words, with the fix, and checks it after the length", async () => {
    const { CreateRoleRequestSchema } = await import("../../gen/keyhold/v2/permissions_service_pb.js");
    expect(fieldProblems(CreateRoleRequestSchema, create(CreateRoleRequestSchema, { name: "admin " }))).toEqual([
      { location: "body.name", message: "name must not end with a space.", fix: "Trim the trailing spaces from name." },
    ]);
    expect(locations(CreateRoleRequestSchema, create(CreateRoleRequestSchema, { name: "a b" }))).toEqual([]);
    expect(fieldProblems(CreateRoleRequestSchema, create(CreateRoleRequestSchema, { name: `${"r".repeat(128)} ` }))[0]?.message).toBe(
      "name must be at most 128 characters long (got 129).",
    );
  });
});
