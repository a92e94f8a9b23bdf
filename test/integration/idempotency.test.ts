// Idempotency-Key: a retried mutating request is answered from the first
// response, so credits, rate-limit decisions and created keys happen once.
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { expectError, expectInvalid } from "../contract/shared/helpers.js";
import { api, key, midMinute, verify, withClock } from "../fixtures.js";
import { type Client, loadServices, service } from "../grpc-client.js";
import { useHarness } from "../harness.js";

const idem = (k: string) => ({ "idempotency-key": k });
let n = 0;
const fresh = (): string => `retry-${Date.now()}-${++n}`;

describe("Idempotency-Key", () => {
  const h = useHarness();

  it("a retried verifyKey spends credits once and replays the first answer", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 10 } });
    const ik = fresh();
    const body = { key: k.key, credits: { cost: 3 } };
    const first = await h.post("/v2/keys.verifyKey", body, rk, idem(ik));
    const retries = await Promise.all([1, 2, 3].map(() => h.post("/v2/keys.verifyKey", body, rk, idem(ik))));
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ valid: true, credits: 7 });
    expect(first.headers["idempotent-replayed"]).toBeUndefined();
    for (const r of retries) {
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual(first.body.data);
      expect(r.headers["idempotent-replayed"]).toBe("true");
      expect(r.body.meta.requestId).not.toBe(first.body.meta.requestId);
    }
    const after = await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk);
    expect(after.body.data.credits.remaining).toBe(7);
    // Without the header each call spends: the control that shows the header is what saved the credits.
    expect((await verify(h, rk, k.key, { credits: { cost: 3 } })).credits).toBe(4);
  });

  it("a retried ratelimit.limit is one decision, not one per retry", async () => {
    const rk = await h.rootKey(["*"]);
    await withClock(h, midMinute(), async () => {
      const body = { namespace: "idem_ns", identifier: "u1", limit: 1, duration: 60_000 };
      const ik = fresh();
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await h.post("/v2/ratelimit.limit", body, rk, idem(ik)));
      for (const a of answers) expect(a.body.data).toMatchObject({ success: true, remaining: 0 });
      // A new request (new key) is the second one in the window and is refused.
      expect((await h.post("/v2/ratelimit.limit", body, rk, idem(fresh()))).body.data.success).toBe(false);
    });
  });

  it("a retried createKey creates one key and returns the same key", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const ik = fresh();
    const body = { apiId, name: "once", ratelimits: [{ name: "req", limit: 5, duration: 1000 }] };
    const a = await h.post("/v2/keys.createKey", body, rk, idem(ik));
    const b = await h.post("/v2/keys.createKey", body, rk, idem(ik));
    expect(a.status, a.text).toBe(200);
    expect(b.body.data).toEqual(a.body.data);
    const list = await h.post("/v2/apis.listKeys", { apiId }, rk);
    expect(list.body.data.map((x: { keyId: string }) => x.keyId)).toEqual([a.body.data.keyId]);
    expect((await verify(h, rk, b.body.data.key)).valid).toBe(true);
  });

  it("records belong to one root key and hold no plaintext key", async () => {
    const rk = await h.rootKey(["*"]);
    const other = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const ik = fresh();
    const a = await h.post("/v2/keys.createKey", { apiId, name: "mine" }, rk, idem(ik));
    // Another root key of the same workspace, same key and body: its own request, not a replay of rk's answer.
    const b = await h.post("/v2/keys.createKey", { apiId, name: "mine" }, other, idem(ik));
    expect(b.headers["idempotent-replayed"]).toBeUndefined();
    expect(b.body.data.keyId).not.toBe(a.body.data.keyId);
    const [stored] = (await h.db.pool.query("SELECT response FROM idempotency_records WHERE workspace_id = ?", [h.workspaceId])) as unknown as [
      { response: string }[],
    ];
    expect(stored.length).toBeGreaterThanOrEqual(2);
    for (const r of stored) {
      for (const k of [a.body.data.key as string, b.body.data.key as string]) {
        expect(r.response).not.toContain(k);
        expect(Buffer.from(r.response, "base64").includes(Buffer.from(k))).toBe(false);
      }
    }
    // ...and the replay still gives the plaintext back to the root key that created it.
    expect((await h.post("/v2/keys.createKey", { apiId, name: "mine" }, rk, idem(ik))).body.data.key).toBe(a.body.data.key);
  });

  it("concurrent requests with one key run once: the others replay or are told it is running", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 100 } });
    const ik = fresh();
    const answers = await Promise.all(Array.from({ length: 12 }, () => h.post("/v2/keys.verifyKey", { key: k.key, credits: { cost: 1 } }, rk, idem(ik))));
    const ok = answers.filter((r) => r.status === 200);
    for (const r of answers.filter((x) => x.status !== 200)) expectError(h, r, 409, "err:user:conflict:idempotency_key_in_use");
    expect(ok.length).toBeGreaterThan(0);
    for (const r of ok) expect(r.body.data.credits).toBe(99);
    expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.credits.remaining).toBe(99);
  });

  it("the same key for a different request or operation is refused with 422", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const ik = fresh();
    expect((await h.post("/v2/keys.createKey", { apiId, name: "a" }, rk, idem(ik))).status).toBe(200);
    expectError(h, await h.post("/v2/keys.createKey", { apiId, name: "b" }, rk, idem(ik)), 422, "err:user:unprocessable_entity:idempotency_key_reused");
    expectError(h, await h.post("/v2/apis.createApi", { name: "x" }, rk, idem(ik)), 422, "err:user:unprocessable_entity:idempotency_key_reused");
    expect((await h.post("/v2/apis.listKeys", { apiId }, rk)).body.data).toHaveLength(1);
  });

  it("a failed request is not stored: its retry runs again", async () => {
    const rk = await h.rootKey(["*"]);
    const ik = fresh();
    const body = { apiId: "api_doesnotexist00", name: "late" };
    expectError(h, await h.post("/v2/keys.createKey", body, rk, idem(ik)), 404, "err:svc:data:api_not_found");
    expectError(h, await h.post("/v2/keys.createKey", body, rk, idem(ik)), 404, "err:svc:data:api_not_found");
    const [left] = (await h.db.pool.query("SELECT state FROM idempotency_records WHERE operation LIKE '%CreateKey' AND state = 0")) as unknown as [unknown[]];
    expect(left).toHaveLength(0);
  });

  it("keys are per workspace, expire after IDEMPOTENCY_TTL_MS, and reads ignore them", async () => {
    const rkA = await h.rootKey(["*"]);
    const rkB = await h.rootKey(["*"], "idem_other_ws");
    const ik = fresh();
    const a = await h.post("/v2/apis.createApi", { name: "same" }, rkA, idem(ik));
    const b = await h.post("/v2/apis.createApi", { name: "same" }, rkB, idem(ik));
    expect(b.body.data.apiId).not.toBe(a.body.data.apiId);

    const k = await key(h, rkA, a.body.data.apiId, { credits: { remaining: 5 } });
    const get = async () => (await h.post("/v2/keys.getKey", { keyId: k.keyId }, rkA, idem("read-1"))).body.data.credits.remaining;
    expect(await get()).toBe(5);
    await verify(h, rkA, k.key, { credits: { cost: 2 } });
    expect(await get()).toBe(3);

    const ik2 = fresh();
    const body = { key: k.key, credits: { cost: 1 } };
    const t0 = Date.now();
    const first = await withClock(h, t0, () => h.post("/v2/keys.verifyKey", body, rkA, idem(ik2)));
    const replay = await withClock(h, t0 + h.config.idempotencyTtlMs - 1, () => h.post("/v2/keys.verifyKey", body, rkA, idem(ik2)));
    const later = await withClock(h, t0 + h.config.idempotencyTtlMs + 1, () => h.post("/v2/keys.verifyKey", body, rkA, idem(ik2)));
    expect(first.body.data.credits).toBe(2);
    expect(replay.body.data.credits).toBe(2);
    expect(later.headers["idempotent-replayed"]).toBeUndefined();
    expect(later.body.data.credits).toBe(1);
  });

  it("a malformed key is a 400 naming the header", async () => {
    const rk = await h.rootKey(["*"]);
    for (const bad of [" lead", "trail ", "x".repeat(256), "tab\there", "é"]) {
      expectInvalid(h, await h.post("/v2/apis.createApi", { name: "never" }, rk, idem(bad)), "header.idempotency-key");
    }
    expect((await h.post("/v2/apis.createApi", { name: "fine" }, rk, idem("x".repeat(255)))).status).toBe(200);
  });

  it("a JSON request retried over gRPC is replayed there too", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const k = await key(h, rk, apiId, { credits: { remaining: 10 } });
    const ik = fresh();
    const first = await h.post("/v2/keys.verifyKey", { key: k.key, credits: { cost: 4 } }, rk, idem(ik));
    expect(first.body.data.credits).toBe(6);

    const Keys = service(loadServices("keys_service.proto"), "KeysService");
    const client: Client = new Keys(`127.0.0.1:${await h.grpcPort()}`, grpc.credentials.createInsecure());
    try {
      const md = new grpc.Metadata();
      md.set("authorization", `Bearer ${rk}`);
      md.set("idempotency-key", ik);
      const { res, headers } = await new Promise<{ res: { credits: string }; headers: grpc.Metadata }>((resolve, reject) => {
        let headers = new grpc.Metadata();
        const c = client.verifyKey({ key: k.key, credits: { cost: 4 } }, md, (err: grpc.ServiceError | null, res: { credits: string }) =>
          err ? reject(err) : resolve({ res, headers }),
        );
        c.on("metadata", (m: grpc.Metadata) => {
          headers = m;
        });
      });
      expect(Number(res.credits)).toBe(6);
      expect(headers.get("idempotent-replayed")).toEqual(["true"]);
    } finally {
      client.close();
    }
    expect((await h.post("/v2/keys.getKey", { keyId: k.keyId }, rk)).body.data.credits.remaining).toBe(6);
  });
});
