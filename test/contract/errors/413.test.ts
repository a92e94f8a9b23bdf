import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectInvalid } from "../shared/helpers.js";

describe("a body over the limit -> 413 envelope", () => {
  const h = useHarness();

  it("one byte over the configured limit -> 413 err:user:bad_request:request_body_too_large", async () => {
    const limit = h.config.bodyLimitBytes;
    const prefix = '{"name":"';
    const suffix = '"}';
    const payload = `${prefix}${"x".repeat(limit + 1 - prefix.length - suffix.length)}${suffix}`;
    expect(Buffer.byteLength(payload)).toBe(limit + 1);
    const res = await h.post("/v2/apis.createApi", payload, await admin(h));
    expectError(h, res, 413, "err:user:bad_request:request_body_too_large");
  });

  it("a body of exactly the limit is read (and then judged on its content: 400 naming name)", async () => {
    const limit = h.config.bodyLimitBytes;
    const prefix = '{"name":"';
    const suffix = '"}';
    const payload = `${prefix}${"x".repeat(limit - prefix.length - suffix.length)}${suffix}`;
    expect(Buffer.byteLength(payload)).toBe(limit);
    expectInvalid(h, await h.post("/v2/apis.createApi", payload, await admin(h)), "name");
  });
});
