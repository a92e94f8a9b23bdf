// The domain's error vocabulary. What a code means on the wire (status, title,
// Connect code, docs URL) lives only in src/errors/catalog.ts.

export type ErrorCode =
  | "err:svc:authentication:missing"
  | "err:svc:authentication:malformed"
  | "err:svc:authentication:key_not_found"
  | "err:svc:authorization:insufficient_permissions"
  | "err:svc:authorization:forbidden"
  | "err:svc:authorization:key_disabled"
  | "err:svc:authorization:workspace_disabled"
  | "err:svc:application:invalid_input"
  | "err:user:bad_request:permissions_query_syntax_error"
  | "err:user:bad_request:request_body_too_large"
  | "err:user:bad_request:request_body_unreadable"
  | "err:user:bad_request:request_timeout"
  | "err:user:bad_request:request_headers_too_large"
  | "err:svc:data:api_not_found"
  | "err:svc:data:key_not_found"
  | "err:svc:data:identity_not_found"
  | "err:svc:data:permission_not_found"
  | "err:svc:data:role_not_found"
  | "err:svc:data:ratelimit_namespace_not_found"
  | "err:svc:data:ratelimit_override_not_found"
  | "err:svc:data:migration_not_found"
  | "err:svc:data:route_not_found"
  | "err:svc:data:identity_already_exists"
  | "err:svc:data:permission_already_exists"
  | "err:svc:data:role_already_exists"
  | "err:svc:data:ratelimit_namespace_gone"
  | "err:svc:application:precondition_failed"
  | "err:svc:application:protected_resource"
  | "err:svc:application:method_not_allowed"
  | "err:svc:application:unsupported_media_type"
  | "err:svc:application:unexpected_error"
  | "err:svc:application:service_unavailable"
  | "err:user:conflict:idempotency_key_in_use"
  | "err:user:unprocessable_entity:idempotency_key_reused"
  | "err:user:bad_request:invalid_analytics_query"
  | "err:user:bad_request:invalid_analytics_query_type"
  | "err:user:bad_request:invalid_analytics_table"
  | "err:user:bad_request:invalid_analytics_function"
  | "err:user:unprocessable_entity:query_execution_timeout"
  | "err:user:unprocessable_entity:query_result_rows_limit_exceeded"
  | "err:svc:data:analytics_connection_failed";

/** One field that failed validation. */
export interface FieldError {
  /** Where, as `body.<json path>`. */
  location: string;
  /** What is wrong, naming the field. */
  message: string;
  fix?: string;
}

/** A request that is itself wrong. Verification outcomes are results, never AppErrors. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly detail: string | undefined;
  readonly errors: FieldError[] | undefined;

  constructor(code: ErrorCode, detail?: string, errors?: FieldError[]) {
    super(detail ?? code);
    this.name = "AppError";
    this.code = code;
    this.detail = detail;
    this.errors = errors;
  }
}

/** At most this many field errors in one answer: 10,000 bad fields must not become megabytes of errors. */
const MAX_FIELD_ERRORS = 100;

export const invalidInput = (errors: FieldError[]): AppError =>
  new AppError(
    "err:svc:application:invalid_input",
    errors[0]?.message ?? "The request is invalid.",
    errors.length <= MAX_FIELD_ERRORS
      ? errors
      : [
          ...errors.slice(0, MAX_FIELD_ERRORS),
          // Where the first unlisted problem is, and how many more there are.
          {
            location: errors[MAX_FIELD_ERRORS]?.location ?? "body",
            message: `${errors.length - MAX_FIELD_ERRORS} more problems, from here on, are not listed.`,
          },
        ],
  );

/** A single-field 400 raised by a business rule. */
export const invalidField = (field: string, message: string, fix?: string): AppError =>
  invalidInput([{ location: `body.${field}`, message, ...(fix === undefined ? {} : { fix }) }]);
