import { describe, expect, it } from "vitest";
import { api, expectError, expectInvalid, key, verify } from "../../fixtures.js";
import { useHarness } from "../../harness.js";

describe("keys.updateCredits", () => {
  const h = useHarness();

  it("set, increment and decrement (floored at 0), each seen by the next verification", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 1 } });
    const call = (body: Record<string, unknown>) => h.post("/v2/keys.updateCredits", { keyId: k.keyId, ...body }, rk);
    expect((await call({ operation: "set", value: 10 })).body.data).toEqual({ remaining: 10 });
    expect((await call({ operation: "increment", value: 5 })).body.data).toEqual({ remaining: 15 });
    expect((await call({ operation: "decrement", value: 100 })).body.data).toEqual({ remaining: 0 });
    expect(await verify(h, rk, k.key)).toMatchObject({ code: "USAGE_EXCEEDED", credits: 0 });
    await call({ operation: "increment", value: 2 });
    expect(await verify(h, rk, k.key)).toMatchObject({ code: "VALID", credits: 1 });
  });

  it("set with value null makes the key unlimited: remaining null, refill cleared", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 3, refill: { interval: "monthly", amount: 3, refillDay: 5 } } });
    const res = await h.post("/v2/keys.updateCredits", { keyId: k.keyId, operation: "set", value: null }, rk);
    expect(res.status, res.text).toBe(200);
    expect(res.body.data).toEqual({ remaining: null });
    expect((await verify(h, rk, k.key)).credits).toBeUndefined();
  });

  it("keeps and reports the refill when the balance changes", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 3, refill: { interval: "monthly", amount: 3, refillDay: 5 } } });
    const res = await h.post("/v2/keys.updateCredits", { keyId: k.keyId, operation: "set", value: 7 }, rk);
    expect(res.body.data).toEqual({ remaining: 7, refill: { interval: "monthly", amount: 3, refillDay: 5 } });
  });

  it("400 for an unknown operation, a missing value, a negative value, and changes to an unlimited key", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const limited = await key(h, rk, apiId, { credits: { remaining: 3 } });
    const unlimited = await key(h, rk, apiId);
    expectInvalid(h, await h.post("/v2/keys.updateCredits", { keyId: limited.keyId, operation: "double", value: 1 }, rk), "operation");
    expectInvalid(h, await h.post("/v2/keys.updateCredits", { keyId: limited.keyId, operation: "increment" }, rk), "value");
    expectInvalid(h, await h.post("/v2/keys.updateCredits", { keyId: limited.keyId, operation: "set", value: -1 }, rk), "value");
    const res = await h.post("/v2/keys.updateCredits", { keyId: unlimited.keyId, operation: "increment", value: 1 }, rk);
    expectError(h, res, 400, "err:svc:application:invalid_input");
    expect(res.body.error.detail).toContain("unlimited");
  });

  it("403 without update_key; 404 for an unknown key", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 3 } });
    expectError(
      h,
      await h.post("/v2/keys.updateCredits", { keyId: k.keyId, operation: "set", value: 1 }, await h.rootKey(["apis.*.read_key"])),
      403,
      "err:svc:authorization:insufficient_permissions",
    );
    expectError(h, await h.post("/v2/keys.updateCredits", { keyId: "key_nope00000", operation: "set", value: 1 }, rk), 404, "err:svc:data:key_not_found");
  });
});
