// The catalog is the only map from ErrorCode to the wire. Every code must have a
// well-formed docs URL derived from the code, and its title must be the HTTP
// status text of its status (docs/errors.md, "The JSON envelope").
import { STATUS_CODES } from "node:http";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { AppError, type ErrorCode } from "../core/errors.js";
import { catalog, docsUrl, errorBody, toConnectError } from "./catalog.js";

const BASE = "https://docs.example.test/keyhold";
const codes = Object.keys(catalog) as ErrorCode[];
const CODE_SHAPE = /^err:(svc|user):([a-z][a-z_]*):([a-z][a-z_]*)$/;

describe("error catalog", () => {
  it("is not empty and holds the seed's three codes with the seed's texts", () => {
    expect(codes.length).toBeGreaterThan(3);
    expect(catalog["err:svc:authentication:missing"]).toMatchObject({ status: 401, title: "Unauthorized", detail: "Credentials were not provided" });
    expect(catalog["err:svc:authentication:malformed"]).toMatchObject({
      status: 401,
      title: "Unauthorized",
      detail: "Credentials were incorrectly formatted",
    });
    expect(catalog["err:svc:data:ratelimit_override_not_found"]).toMatchObject({
      status: 404,
      title: "Not Found",
      detail: "The requested rate limit override could not be found",
    });
  });

  describe.each(codes)("%s", (code) => {
    const spec = catalog[code];

    it("is shaped err:<system>:<category>:<specific>", () => {
      expect(code).toMatch(CODE_SHAPE);
    });

    it("has the docs URL <base>/api-reference/errors-v2/<system>/<category>/<code>", () => {
      const [, system, category, specific] = CODE_SHAPE.exec(code) ?? [];
      const url = docsUrl(code, BASE);
      expect(url).toBe(`${BASE}/api-reference/errors-v2/${system}/${category}/${specific}`);
      const parsed = new URL(url);
      expect(parsed.protocol).toBe("https:");
      expect(parsed.search).toBe("");
      expect(parsed.hash).toBe("");
      // Every path segment is non-empty and URL-safe: no ':' from the code survives.
      expect(
        parsed.pathname
          .split("/")
          .slice(1)
          .every((seg) => /^[a-z0-9_-]+$/.test(seg)),
        parsed.pathname,
      ).toBe(true);
    });

    it("has the HTTP status text of its status as title", () => {
      expect(STATUS_CODES[spec.status], `no such HTTP status ${spec.status}`).toBeTypeOf("string");
      const accepted = spec.status === 413 ? ["Payload Too Large", "Request Entity Too Large"] : [STATUS_CODES[spec.status]];
      expect(accepted).toContain(spec.title);
    });

    it("is a 4xx or 5xx with a default detail", () => {
      expect(spec.status).toBeGreaterThanOrEqual(400);
      expect(spec.status).toBeLessThan(600);
      expect(spec.detail.length).toBeGreaterThan(0);
    });

    it("errorBody uses the catalog row and the derived URL; 400s always carry errors[]", () => {
      const body = errorBody(new AppError(code), BASE);
      expect(body).toMatchObject({ title: spec.title, detail: spec.detail, status: spec.status, type: docsUrl(code, BASE) });
      if (spec.status === 400) expect(body.errors).toEqual([]);
      else expect(body.errors).toBeUndefined();
    });

    it("toConnectError carries the same code in an ErrorDetail", () => {
      const err = toConnectError(new AppError(code, "custom detail"), BASE, "req_123");
      expect(err).toBeInstanceOf(ConnectError);
      expect(err.code).toBe(spec.connect);
      expect(err.rawMessage).toBe("custom detail");
      const [detail] = err.findDetails(ErrorDetailSchema);
      expect(detail).toMatchObject({ code, type: docsUrl(code, BASE), requestId: "req_123" });
    });

    it("toConnectError carries the code and request id in a google.rpc.ErrorInfo, second", () => {
      const err = toConnectError(new AppError(code), BASE, "req_123");
      expect(err.findDetails(ErrorInfoSchema)).toEqual([expect.objectContaining({ reason: code, domain: "keyhold", metadata: { requestId: "req_123" } })]);
      expect(err.details.map((d) => ("desc" in d ? d.desc.typeName : d.type))).toEqual(["keyhold.v2.ErrorDetail", "google.rpc.ErrorInfo"]);
    });
  });

  it("maps authentication to Unauthenticated, authorization to PermissionDenied and *_not_found data codes to NotFound", () => {
    for (const code of codes) {
      const spec = catalog[code];
      if (code.startsWith("err:svc:authentication:")) expect([code, spec.connect]).toEqual([code, Code.Unauthenticated]);
      if (code.startsWith("err:svc:authorization:")) expect([code, spec.connect]).toEqual([code, Code.PermissionDenied]);
      if (code.startsWith("err:svc:data:") && code.endsWith("_not_found") && code !== "err:svc:data:route_not_found") {
        expect([code, spec.connect]).toEqual([code, Code.NotFound]);
      }
    }
  });

  it("derives the URL from any base without doubling slashes", () => {
    expect(docsUrl("err:user:bad_request:permissions_query_syntax_error", "https://x.test")).toBe(
      "https://x.test/api-reference/errors-v2/user/bad_request/permissions_query_syntax_error",
    );
  });

  it("keeps field errors in 400 bodies", () => {
    const body = errorBody(
      new AppError("err:svc:application:invalid_input", "name is required.", [{ location: "body.name", message: "name is required." }]),
      BASE,
    );
    expect(body.errors).toEqual([{ location: "body.name", message: "name is required." }]);
  });
});
