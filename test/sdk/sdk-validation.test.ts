// The rest of this suite relies on the SDK validating every response: this file
// shows that it does, with the same client settings, by changing one field of a
// real keyhold response on its way to the SDK. (Speakeasy SDKs have no option
// to turn response validation off.)
import { HTTPClient } from "@unkey/api/lib/http.js";
import { NotFoundErrorResponse, ResponseValidationError } from "@unkey/api/models/errors";
import { describe, expect, it } from "vitest";
import { failure, ok, sdkFor, uid, useSdk } from "./support.js";

/** An HTTP client that passes real responses through `edit` (a JSON body in, a JSON body out). */
function editing(edit: (body: Record<string, unknown>) => unknown): HTTPClient {
  return new HTTPClient({
    fetcher: async (input, init) => {
      const res = await fetch(input, init);
      const body = edit((await res.json()) as Record<string, unknown>);
      return new Response(JSON.stringify(body), { status: res.status, headers: res.headers });
    },
  });
}

describe("@unkey/api validates keyhold's responses", () => {
  const w = useSdk();

  it("unchanged responses pass", async () => {
    const c = sdkFor(
      w.url,
      await w.h.rootKey(["apis.*.create_api"]),
      editing((b) => b),
    );
    expect((await ok(c.apis.createApi({ name: uid("api") }))).data.apiId).toMatch(/^api_/);
  });

  it("a success body missing a required field throws ResponseValidationError", async () => {
    const c = sdkFor(
      w.url,
      await w.h.rootKey(["apis.*.create_api"]),
      editing((b) => ({ ...b, data: {} })),
    );
    const e = await failure(c.apis.createApi({ name: uid("api") }));
    expect(e).toBeInstanceOf(ResponseValidationError);
    expect((e as ResponseValidationError).pretty()).toContain("apiId");
  });

  it("null where the SDK has an optional field throws ResponseValidationError", async () => {
    const admin = await w.admin();
    const apiId = (await admin.apis.createApi({ name: uid("api") })).data.apiId;
    const { keyId } = (await admin.keys.createKey({ apiId })).data;
    const c = sdkFor(
      w.url,
      await w.h.rootKey(["*"]),
      editing((b) => ({ ...b, data: { ...(b.data as object), name: null } })),
    );
    expect(await failure(c.keys.getKey({ keyId }))).toBeInstanceOf(ResponseValidationError);
  });

  it("an error envelope without `error.type` is not the typed error but ResponseValidationError", async () => {
    const c = sdkFor(
      w.url,
      await w.h.rootKey(["*"]),
      editing((b) => {
        const { type: _t, ...error } = b.error as Record<string, unknown>;
        return { ...b, error };
      }),
    );
    const e = await failure(c.apis.getApi({ apiId: "api_doesnotexist1" }));
    expect(e).toBeInstanceOf(ResponseValidationError);
    expect(e).not.toBeInstanceOf(NotFoundErrorResponse);
  });
});
