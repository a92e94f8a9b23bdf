// The credentials of a request, as every door reads them. Node's HTTP parser
// keeps the first of repeated Authorization headers and drops the rest, and
// gRPC metadata is a list: either way a request that carries two credentials is
// ambiguous (a proxy added one, or a client is probing which one wins), so it is
// refused rather than served as whichever came first.
import { AppError } from "../core/errors.js";

const doubled = (count: number) =>
  new AppError("err:svc:authentication:malformed", `Send the root key in one Authorization header; this request has ${count}.`);

/** The Authorization header of an HTTP request (its raw header list), once or not at all. */
export function singleAuthorization(rawHeaders: readonly string[], parsed: string | undefined): string | undefined {
  if (parsed === undefined) return undefined;
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    if (name.length === 13 && name.toLowerCase() === "authorization") count++;
  }
  if (count > 1) throw doubled(count);
  return parsed;
}

/** The `authorization` entry of gRPC metadata, once or not at all (binary values are not credentials). */
export function singleMetadataAuthorization(values: ReadonlyArray<string | Buffer>): string | undefined {
  if (values.length > 1) throw doubled(values.length);
  const v = values[0];
  return typeof v === "string" ? v : undefined;
}
