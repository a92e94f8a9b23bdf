import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { admin, createApi, createKey, expectOk, getKey, uid } from "../shared/helpers.js";

describe("keys.whoami 200", () => {
  const h = useHarness();

  it("answers the key's KeyResponseData, the same as getKey", async () => {
    const apiId = await createApi(h);
    const externalId = uid("me");
    const { keyId, key } = await createKey(h, apiId, {
      prefix: "who",
      name: "me",
      meta: { a: 1 },
      externalId,
      permissions: ["documents.read"],
      credits: { remaining: 4 },
    });
    const data = expectOk(await h.post("/v2/keys.whoami", { key }, await admin(h)));
    expect(data).toMatchObject({
      keyId,
      start: `who_${key.slice(4, 8)}`,
      enabled: true,
      name: "me",
      meta: { a: 1 },
      permissions: ["documents.read"],
      credits: { remaining: 4 },
      identity: { externalId },
    });
    expect(data).toEqual(expectOk(await getKey(h, keyId)));
  });

  it("never returns a plaintext, even for a recoverable key", async () => {
    const apiId = await createApi(h);
    const { key } = await createKey(h, apiId, { recoverable: true });
    const res = await h.post("/v2/keys.whoami", { key }, await admin(h));
    expect(expectOk(res).plaintext).toBeUndefined();
  });

  it("does not spend credits (it is not a verification)", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId, { credits: { remaining: 2 } });
    expectOk(await h.post("/v2/keys.whoami", { key }, await admin(h)));
    expect(expectOk(await getKey(h, keyId)).credits.remaining).toBe(2);
  });

  it("a per-API read_key grant is enough", async () => {
    const apiId = await createApi(h);
    const { keyId, key } = await createKey(h, apiId);
    const rk = await h.rootKey([`apis.${apiId}.read_key`]);
    expect(expectOk(await h.post("/v2/keys.whoami", { key }, rk)).keyId).toBe(keyId);
  });
});
