// The only place that knows what an ErrorCode means on the wire: HTTP status,
// title (the status's standard reason phrase; docs/errors.md, "The JSON
// envelope"), Connect/gRPC code, default detail and the docs URL. Adding a code
// to ErrorCode without a row here fails typecheck.

import { create, type DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { BadRequestSchema, ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import type { AppError, ErrorCode, FieldError } from "../core/errors.js";
import { badRequestOf } from "./bad-request.js";

export interface Spec {
  status: number;
  title: string;
  connect: Code;
  detail: string;
}

const spec = (status: number, title: string, connect: Code, detail: string): Spec => ({ status, title, connect, detail });

export const catalog = {
  "err:svc:authentication:missing": spec(401, "Unauthorized", Code.Unauthenticated, "Credentials were not provided"),
  "err:svc:authentication:malformed": spec(401, "Unauthorized", Code.Unauthenticated, "Credentials were incorrectly formatted"),
  "err:svc:authentication:key_not_found": spec(401, "Unauthorized", Code.Unauthenticated, "The provided root key is invalid."),
  "err:svc:authorization:insufficient_permissions": spec(403, "Forbidden", Code.PermissionDenied, "The root key lacks the permission for this operation."),
  "err:svc:authorization:forbidden": spec(403, "Forbidden", Code.PermissionDenied, "The operation is not allowed."),
  "err:svc:authorization:key_disabled": spec(403, "Forbidden", Code.PermissionDenied, "The root key is disabled."),
  "err:svc:authorization:workspace_disabled": spec(403, "Forbidden", Code.PermissionDenied, "The workspace is disabled."),
  "err:svc:application:invalid_input": spec(400, "Bad Request", Code.InvalidArgument, "The request is invalid."),
  "err:user:bad_request:permissions_query_syntax_error": spec(400, "Bad Request", Code.InvalidArgument, "The permissions query is not valid."),
  "err:user:bad_request:request_body_too_large": spec(413, "Payload Too Large", Code.ResourceExhausted, "The request body is too large."),
  "err:user:bad_request:request_body_unreadable": spec(400, "Bad Request", Code.InvalidArgument, "The request body could not be read."),
  "err:user:bad_request:request_timeout": spec(408, "Request Timeout", Code.DeadlineExceeded, "The request was not received in time."),
  "err:user:bad_request:request_headers_too_large": spec(431, "Request Header Fields Too Large", Code.ResourceExhausted, "The request headers are too large."),
  "err:svc:data:api_not_found": spec(404, "Not Found", Code.NotFound, "The requested API does not exist or has been deleted."),
  "err:svc:data:key_not_found": spec(404, "Not Found", Code.NotFound, "The specified key was not found."),
  "err:svc:data:identity_not_found": spec(404, "Not Found", Code.NotFound, "This identity does not exist."),
  "err:svc:data:permission_not_found": spec(404, "Not Found", Code.NotFound, "The requested permission does not exist."),
  "err:svc:data:role_not_found": spec(404, "Not Found", Code.NotFound, "The requested role does not exist."),
  "err:svc:data:ratelimit_namespace_not_found": spec(404, "Not Found", Code.NotFound, "This namespace does not exist."),
  "err:svc:data:ratelimit_override_not_found": spec(404, "Not Found", Code.NotFound, "The requested rate limit override could not be found"),
  "err:svc:data:migration_not_found": spec(404, "Not Found", Code.NotFound, "The requested key migration does not exist."),
  "err:svc:data:route_not_found": spec(404, "Not Found", Code.Unimplemented, "No operation exists at this path."),
  "err:svc:data:identity_already_exists": spec(409, "Conflict", Code.AlreadyExists, "An identity with this externalId already exists."),
  "err:svc:data:permission_already_exists": spec(409, "Conflict", Code.AlreadyExists, "A permission with this slug already exists."),
  "err:svc:data:role_already_exists": spec(409, "Conflict", Code.AlreadyExists, "A role with this name already exists."),
  "err:svc:data:ratelimit_namespace_gone": spec(410, "Gone", Code.FailedPrecondition, "This namespace has been deleted. Contact support to restore."),
  "err:svc:application:precondition_failed": spec(412, "Precondition Failed", Code.FailedPrecondition, "A precondition of the operation failed."),
  "err:svc:application:protected_resource": spec(412, "Precondition Failed", Code.FailedPrecondition, "This resource is protected."),
  "err:svc:application:method_not_allowed": spec(405, "Method Not Allowed", Code.Unimplemented, "Operations are called with POST."),
  "err:svc:application:unsupported_media_type": spec(415, "Unsupported Media Type", Code.InvalidArgument, "Send the body as application/json."),
  "err:svc:application:unexpected_error": spec(
    500,
    "Internal Server Error",
    Code.Internal,
    "An unexpected error occurred. Quote the request id when you report it.",
  ),
  "err:user:conflict:idempotency_key_in_use": spec(409, "Conflict", Code.Aborted, "A request with this Idempotency-Key is still running."),
  "err:user:unprocessable_entity:idempotency_key_reused": spec(
    422,
    "Unprocessable Entity",
    Code.FailedPrecondition,
    "This Idempotency-Key was used for a different request.",
  ),
  "err:user:bad_request:invalid_analytics_query": spec(400, "Bad Request", Code.InvalidArgument, "The analytics query is not valid SQL of the kind allowed."),
  "err:user:bad_request:invalid_analytics_query_type": spec(
    400,
    "Bad Request",
    Code.InvalidArgument,
    "Only SELECT queries (with CTEs, subqueries and UNION) are allowed.",
  ),
  "err:user:bad_request:invalid_analytics_table": spec(
    400,
    "Bad Request",
    Code.InvalidArgument,
    "The query reads a table that is not one of the public analytics tables.",
  ),
  "err:user:bad_request:invalid_analytics_function": spec(400, "Bad Request", Code.InvalidArgument, "The query calls a function that is not allowed."),
  "err:user:unprocessable_entity:query_execution_timeout": spec(422, "Unprocessable Entity", Code.ResourceExhausted, "The query ran longer than allowed."),
  "err:user:unprocessable_entity:query_result_rows_limit_exceeded": spec(
    422,
    "Unprocessable Entity",
    Code.ResourceExhausted,
    "The query returns more rows than allowed; aggregate or add a LIMIT.",
  ),
  "err:svc:data:analytics_connection_failed": spec(503, "Service Unavailable", Code.Unavailable, "The analytics store could not be reached; try again."),
  "err:svc:application:service_unavailable": spec(503, "Service Unavailable", Code.Unavailable, "The service is temporarily unavailable; try again."),
} satisfies Record<ErrorCode, Spec>;

/** "err:svc:data:x" -> `${base}/api-reference/errors-v2/svc/data/x` */
export const docsUrl = (code: ErrorCode, base: string): string => `${base}/api-reference/errors-v2/${code.split(":").slice(1).join("/")}`;

export interface ErrorBody {
  title: string;
  detail: string;
  status: number;
  type: string;
  errors?: FieldError[];
}

/** The `error` object of the JSON envelope. 400s always carry `errors` (the SDK requires the array). */
export function errorBody(err: AppError, docsBase: string): ErrorBody {
  const s = catalog[err.code];
  const body: ErrorBody = { title: s.title, detail: err.detail ?? s.detail, status: s.status, type: docsUrl(err.code, docsBase) };
  if (s.status === 400 || err.errors !== undefined) body.errors = err.errors ?? [];
  return body;
}

/** google.rpc.ErrorInfo's domain: the system keyhold's error codes belong to. */
export const ERROR_DOMAIN = "keyhold";

/** A detail of an outgoing ConnectError (connect-es does not export the type). */
type OutgoingDetail = NonNullable<ConstructorParameters<typeof ConnectError>[3]>[number];

/**
 * The same error for Connect and gRPC clients: status code, message, and an
 * ErrorDetail with the code, then the standard google.rpc.ErrorInfo (reason =
 * the code, domain `keyhold`, metadata.requestId). When the request's message
 * type is known (`input`, passed by the RPC doors), its field errors also travel
 * as the standard google.rpc.BadRequest, by proto path (errors/bad-request.ts),
 * last: clients that read only the first detail keep reading the code.
 */
export function toConnectError(err: AppError, docsBase: string, requestId: string, input?: DescMessage): ConnectError {
  const s = catalog[err.code];
  const detail = create(ErrorDetailSchema, {
    code: err.code,
    type: docsUrl(err.code, docsBase),
    requestId,
    errors: (err.errors ?? []).map((e) => ({ location: e.location, message: e.message, fix: e.fix ?? "" })),
  });
  const details: OutgoingDetail[] = [
    { desc: ErrorDetailSchema, value: detail },
    // The same code and request id in the standard detail, for clients that read only googleapis types.
    { desc: ErrorInfoSchema, value: create(ErrorInfoSchema, { reason: err.code, domain: ERROR_DOMAIN, metadata: { requestId } }) },
  ];
  const badRequest = input === undefined || err.errors === undefined ? undefined : badRequestOf(input, err.errors);
  if (badRequest !== undefined) details.push({ desc: BadRequestSchema, value: badRequest });
  return new ConnectError(err.detail ?? s.detail, s.connect, undefined, details, err);
}
