// Field errors' locations (JSON door terms) as proto paths for google.rpc.BadRequest,
// read off descriptors: keyhold's own requests, and a made-up file with what
// keyhold's protos do not have yet (a json_name, a digit after `_`, maps), where a
// guess from the JSON name (camelCase -> snake_case) would name the wrong field.
import { create, createFileRegistry } from "@bufbuild/protobuf";
import { FieldDescriptorProto_Label, FieldDescriptorProto_Type, FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { CreateKeyRequestSchema, UpdateKeyRequestSchema } from "../../gen/keyhold/v2/keys_service_pb.js";
import { badRequestOf, protoFieldPath } from "./bad-request.js";

const { OPTIONAL: ONE, REPEATED: MANY } = FieldDescriptorProto_Label;
const { STRING, INT32, MESSAGE } = FieldDescriptorProto_Type;

// As protoc writes it for:
//   message Item { string label_text = 1 [json_name = "caption"]; }
//   message Req {
//     string line_2 = 1;                 // JSON line2
//     repeated Item items = 2;
//     map<string, Item> by_name = 3;
//     map<int32, string> by_number = 4;
//   }
const file = create(FileDescriptorProtoSchema, {
  name: "paths.proto",
  package: "test.paths",
  syntax: "proto3",
  messageType: [
    { name: "Item", field: [{ name: "label_text", jsonName: "caption", number: 1, label: ONE, type: STRING }] },
    {
      name: "Req",
      field: [
        { name: "line_2", jsonName: "line2", number: 1, label: ONE, type: STRING },
        { name: "items", jsonName: "items", number: 2, label: MANY, type: MESSAGE, typeName: ".test.paths.Item" },
        { name: "by_name", jsonName: "byName", number: 3, label: MANY, type: MESSAGE, typeName: ".test.paths.Req.ByNameEntry" },
        { name: "by_number", jsonName: "byNumber", number: 4, label: MANY, type: MESSAGE, typeName: ".test.paths.Req.ByNumberEntry" },
      ],
      nestedType: [
        {
          name: "ByNameEntry",
          options: { mapEntry: true },
          field: [
            { name: "key", jsonName: "key", number: 1, label: ONE, type: STRING },
            { name: "value", jsonName: "value", number: 2, label: ONE, type: MESSAGE, typeName: ".test.paths.Item" },
          ],
        },
        {
          name: "ByNumberEntry",
          options: { mapEntry: true },
          field: [
            { name: "key", jsonName: "key", number: 1, label: ONE, type: INT32 },
            { name: "value", jsonName: "value", number: 2, label: ONE, type: STRING },
          ],
        },
      ],
    },
  ],
});
const Req = createFileRegistry(file, () => undefined).getMessage("test.paths.Req");
if (Req === undefined) throw new Error("test.paths.Req did not build");

/** What a guess from the JSON name would say. */
const naive = (json: string): string => json.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

describe("protoFieldPath", () => {
  it("maps keyhold's own request fields, nested messages and list items", () => {
    expect(protoFieldPath(CreateKeyRequestSchema, "body.apiId")).toEqual({ path: "api_id", complete: true });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.byteLength")).toEqual({ path: "byte_length", complete: true });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.credits.remaining")).toEqual({ path: "credits.remaining", complete: true });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.credits.refill.refillDay")).toEqual({ path: "credits.refill.refill_day", complete: true });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.ratelimits[0].name")).toEqual({ path: "ratelimits[0].name", complete: true });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.ratelimits[12].autoApply")).toEqual({ path: "ratelimits[12].auto_apply", complete: true });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.roles[3]")).toEqual({ path: "roles[3]", complete: true });
  });

  it("takes the proto name too, as protobuf's JSON does", () => {
    expect(protoFieldPath(CreateKeyRequestSchema, "body.api_id")).toEqual({ path: "api_id", complete: true });
  });

  it("puts back the `value` of the Nullable wrappers that the JSON door hides", () => {
    expect(protoFieldPath(UpdateKeyRequestSchema, "body.name")).toEqual({ path: "name.value", complete: true });
    expect(protoFieldPath(UpdateKeyRequestSchema, "body.externalId")).toEqual({ path: "external_id.value", complete: true });
    expect(protoFieldPath(UpdateKeyRequestSchema, "body.credits.remaining")).toEqual({ path: "credits.remaining.value", complete: true });
    expect(protoFieldPath(UpdateKeyRequestSchema, "body.credits.refill.amount")).toEqual({ path: "credits.refill.value.amount", complete: true });
    expect(protoFieldPath(UpdateKeyRequestSchema, "body.credits.refill")).toEqual({ path: "credits.refill.value", complete: true });
  });

  it("follows json_name and digits, where a guess from the JSON name is wrong", () => {
    expect(naive("line2")).not.toBe("line_2");
    expect(protoFieldPath(Req, "body.line2")).toEqual({ path: "line_2", complete: true });
    expect(naive("caption")).not.toBe("label_text");
    expect(protoFieldPath(Req, "body.items[1].caption")).toEqual({ path: "items[1].label_text", complete: true });
  });

  it("writes map keys in brackets: quoted strings, bare integers", () => {
    expect(protoFieldPath(Req, "body.byName.alpha.caption")).toEqual({ path: 'by_name["alpha"].label_text', complete: true });
    expect(protoFieldPath(Req, 'body.byName["a.b c"].caption')).toEqual({ path: 'by_name["a.b c"].label_text', complete: true });
    expect(protoFieldPath(Req, 'body.byNumber["7"]')).toEqual({ path: "by_number[7]", complete: true });
    // Not an int32 key: the path stops at the map.
    expect(protoFieldPath(Req, "body.byNumber.seven")).toEqual({ path: "by_number", complete: false });
  });

  it("names the message itself for `body`, and the deepest field that exists past what the message has", () => {
    expect(protoFieldPath(CreateKeyRequestSchema, "body")).toEqual({ path: "", complete: true });
    // An unknown field (a misspelt `expire`): the message that lacks it.
    expect(protoFieldPath(CreateKeyRequestSchema, "body.expire")).toEqual({ path: "", complete: false });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.credits.remainder")).toEqual({ path: "credits", complete: false });
    // Keys inside google.protobuf.Struct are JSON, not fields.
    expect(protoFieldPath(CreateKeyRequestSchema, "body.meta.plan.tier")).toEqual({ path: "meta", complete: false });
    // A list item named by a key, or a scalar with something under it.
    expect(protoFieldPath(CreateKeyRequestSchema, "body.ratelimits.name")).toEqual({ path: "ratelimits", complete: false });
    expect(protoFieldPath(CreateKeyRequestSchema, "body.apiId.x")).toEqual({ path: "api_id", complete: false });
    // A location this grammar does not read: as far as it goes.
    expect(protoFieldPath(CreateKeyRequestSchema, "body.credits/remaining")).toEqual({ path: "credits", complete: false });
    expect(protoFieldPath(Req, 'body.byName["\\x"]')).toEqual({ path: "by_name", complete: false });
  });

  it("has no path for what is outside the message", () => {
    expect(protoFieldPath(CreateKeyRequestSchema, "header.grpc-timeout")).toBeUndefined();
    expect(protoFieldPath(CreateKeyRequestSchema, "header.idempotency-key")).toBeUndefined();
    expect(protoFieldPath(CreateKeyRequestSchema, "bodyguard")).toBeUndefined();
  });
});

describe("badRequestOf", () => {
  it("lists every error about the message, in order, naming the field by its proto path", () => {
    const br = badRequestOf(CreateKeyRequestSchema, [
      { location: "body.apiId", message: "apiId must be at least 3 characters long (got 2).", fix: "Send the id of an API." },
      { location: "header.idempotency-key", message: "idempotency-key is too long." },
      { location: "body.ratelimits[0].name", message: "ratelimits[0].name must not end with a space." },
      { location: "body.expire", message: "expire is not a known field of this request." },
      { location: "body.credits", message: "credits carries field number 9 (varint), which keyhold.v2.KeyCredits does not have." },
    ]);
    expect(br?.fieldViolations.map(({ field, description }) => ({ field, description }))).toEqual([
      { field: "api_id", description: "api_id must be at least 3 characters long (got 2)." },
      { field: "ratelimits[0].name", description: "ratelimits[0].name must not end with a space." },
      // Not a field of the message: on the message, in the words the caller used.
      { field: "", description: "expire is not a known field of this request." },
      { field: "credits", description: "credits carries field number 9 (varint), which keyhold.v2.KeyCredits does not have." },
    ]);
  });

  it("leaves a message alone that does not begin with the field's JSON path", () => {
    const br = badRequestOf(CreateKeyRequestSchema, [{ location: "body.apiId", message: "The API apiIdx was deleted; apiId names it." }]);
    expect(br?.fieldViolations[0]?.description).toBe("The API apiIdx was deleted; apiId names it.");
  });

  it("is undefined without an error about the message", () => {
    expect(badRequestOf(CreateKeyRequestSchema, [])).toBeUndefined();
    expect(badRequestOf(CreateKeyRequestSchema, [{ location: "header.grpc-timeout", message: "grpc-timeout is not a valid deadline." }])).toBeUndefined();
  });
});
