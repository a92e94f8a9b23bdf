import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createRootKey, GRANT, listRootKeys, readApiProbe, seededRootKey } from "../rootKeys.createRootKey/support.js";
import { admin, expectOk, uid } from "../shared/helpers.js";

describe("rootKeys.listRootKeys 200", () => {
  const h = useHarness();

  it("data is the list of the workspace's root keys, each exactly {keyId, name, start, permissions, enabled, expires?, createdAt, lastUsedAt?}", async () => {
    const rk = await h.rootKey([GRANT.read]);
    const expires = Date.now() + 86_400_000;
    const a = await createRootKey(h, { name: "alpha", permissions: ["apis.*.read_api"], expires });
    const b = await createRootKey(h, { permissions: ["apis.*.read_key", "apis.*.create_key"] });
    const res = await h.post("/v2/rootKeys.listRootKeys", {}, rk);
    const data = expectOk(res);
    expect(Array.isArray(data)).toBe(true);
    const byId = new Map((data as Array<{ keyId: string }>).map((k) => [k.keyId, k]));
    expect(byId.get(a.keyId)).toEqual({
      keyId: a.keyId,
      name: "alpha",
      start: a.key.slice(0, 8),
      permissions: ["apis.*.read_api"],
      enabled: true,
      expires,
      createdAt: expect.any(Number),
    });
    expect(byId.get(b.keyId)).toEqual({
      keyId: b.keyId,
      name: "",
      start: b.key.slice(0, 8),
      permissions: ["apis.*.read_key", "apis.*.create_key"],
      enabled: true,
      createdAt: expect.any(Number),
    });
    // The listing holds no secret, and no hash.
    expect(res.text.includes(a.key) || res.text.includes(b.key)).toBe(false);
    expect(res.text).not.toMatch(/"hash"|"key":/);
  });

  it("lists oldest first", async () => {
    const first = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    await new Promise((r) => setTimeout(r, 5));
    const second = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const ids = (await listRootKeys(h)).map((k) => k.keyId as string);
    expect(ids.indexOf(first.keyId)).toBeGreaterThanOrEqual(0);
    expect(ids.indexOf(first.keyId)).toBeLessThan(ids.indexOf(second.keyId));
    const created = (await listRootKeys(h)).map((k) => k.createdAt as number);
    expect(created).toEqual([...created].sort((x, y) => x - y));
  });

  it("shows a disabled root key as enabled: false", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId, enabled: false }, await admin(h)));
    expect((await listRootKeys(h)).find((k) => k.keyId === keyId)?.enabled).toBe(false);
  });

  it("shows lastUsedAt once the root key has been used (written behind)", async () => {
    const { keyId, key } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expect((await listRootKeys(h)).find((k) => k.keyId === keyId)?.lastUsedAt).toBeUndefined();
    const before = Date.now();
    expect((await readApiProbe(h, key)).status).toBe(404);
    await h.deps.rootKeyUsage.flush();
    const used = (await listRootKeys(h)).find((k) => k.keyId === keyId)?.lastUsedAt;
    expect(used).toBeTypeOf("number");
    expect(used).toBeGreaterThanOrEqual(before - 1000);
    expect(used).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it("does not list revoked root keys", async () => {
    const { keyId } = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    expectOk(await h.post("/v2/rootKeys.deleteRootKey", { keyId }, await admin(h)));
    expect((await listRootKeys(h)).map((k) => k.keyId)).not.toContain(keyId);
  });

  it("lists only the caller's workspace: another workspace's root keys never appear, in either direction", async () => {
    const ws = uid("other_ws");
    const foreign = await seededRootKey(h, ["*"], ws);
    const theirs = await createRootKey(h, { permissions: ["apis.*.read_api"] }, foreign.key);
    const mine = await createRootKey(h, { permissions: ["apis.*.read_api"] });
    const mineListed = (await listRootKeys(h)).map((k) => k.keyId);
    expect(mineListed).toContain(mine.keyId);
    expect(mineListed).not.toContain(theirs.keyId);
    expect(mineListed).not.toContain(foreign.keyId);
    const theirsListed = (await listRootKeys(h, foreign.key)).map((k) => k.keyId).sort();
    expect(theirsListed).toEqual([foreign.keyId, theirs.keyId].sort());
  });
});
