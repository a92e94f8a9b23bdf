import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectError, expectOk, show } from "../shared/helpers.js";

describe("a body that is not application/json -> 415 envelope", () => {
  const h = useHarness();

  it.each(["text/plain", "text/plain; charset=utf-8", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x"])(
    "Content-Type: %s -> 415 unsupported_media_type",
    async (type) => {
      const res = await h.post("/v2/apis.createApi", JSON.stringify({ name: "media-type" }), await admin(h), { "content-type": type });
      expectError(h, res, 415, "err:svc:application:unsupported_media_type");
      expect(res.body.error.title).toBe("Unsupported Media Type");
    },
  );

  it.each(["application/json", "application/json; charset=utf-8", "Application/JSON"])("Content-Type: %s is accepted", async (type) => {
    const res = await h.post("/v2/apis.createApi", JSON.stringify({ name: "media-type" }), await admin(h), { "content-type": type });
    expect(res.status, show(res)).toBe(200);
    expectOk(res);
  });
});
