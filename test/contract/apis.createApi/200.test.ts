import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, expectOk, uid } from "../shared/helpers.js";

describe("apis.createApi 200", () => {
  const h = useHarness();

  it("creates an API: data is exactly {apiId}, and getApi reads it back as {id, name}", async () => {
    const rk = await admin(h);
    const name = uid("billing");
    const data = expectOk(await h.post("/v2/apis.createApi", { name }, rk));
    expect(Object.keys(data)).toEqual(["apiId"]);
    expect(data.apiId).toMatch(/^api_[a-zA-Z0-9_]+$/);
    const got = expectOk(await h.post("/v2/apis.getApi", { apiId: data.apiId }, rk));
    expect(got).toEqual({ id: data.apiId, name });
  });

  it("needs only apis.*.create_api", async () => {
    const rk = await h.rootKey(["apis.*.create_api"]);
    expectOk(await h.post("/v2/apis.createApi", { name: uid("only") }, rk));
  });

  it("names are not unique: the same name twice gives two APIs", async () => {
    const rk = await admin(h);
    const name = uid("same");
    const a = expectOk(await h.post("/v2/apis.createApi", { name }, rk));
    const b = expectOk(await h.post("/v2/apis.createApi", { name }, rk));
    expect(a.apiId).not.toBe(b.apiId);
  });

  it.each([
    ["3 characters (lower bound)", "abc"],
    ["256 characters (upper bound)", "n".repeat(256)],
    ["any characters (no pattern)", "My API: v2 / prod ✓"],
  ])("accepts a name of %s", async (_label, name) => {
    const rk = await admin(h);
    const data = expectOk(await h.post("/v2/apis.createApi", { name }, rk));
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId: data.apiId }, rk)).name).toBe(name);
  });

  it("gives every response its own requestId", async () => {
    const rk = await admin(h);
    const a = await h.post("/v2/apis.createApi", { name: uid("a") }, rk);
    const b = await h.post("/v2/apis.createApi", { name: uid("b") }, rk);
    expect(a.body.meta.requestId).not.toBe(b.body.meta.requestId);
  });
});
