// A root key's whole life, seen through every door: JSON (/v2), Connect (on the
// HTTP port, a connect-node client from gen/) and gRPC (a grpc-js client built
// from the .proto files). Created with an expiry, disabled, enabled, rotated with
// a grace period, narrowed, revoked: after each change every door gives the same
// answer at once on this instance, and another instance on the same database
// refuses a disabled or revoked root key within 1 s (docs: README, "Root keys and
// the audit log"). Each change leaves its audit record, by the root key that made it.
//
// The changes themselves are made through different doors on purpose: the audit
// record and the effect must not depend on which door took the change.
import type { AddressInfo } from "node:net";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { ErrorDetailSchema } from "../../gen/keyhold/v2/errors_pb.js";
import { RootKeysService } from "../../gen/keyhold/v2/root_keys_service_pb.js";
import { allLogs, listed, pollUntil, seededRootKey } from "../contract/rootKeys.createRootKey/support.js";
import { createApi, expectError, expectOk, type Json } from "../contract/shared/helpers.js";
import { bearer, call, type Client as GrpcClient, loadServices, service } from "../grpc-client.js";
import { type Instance, type Res, useHarness } from "../harness.js";

type Door = "json" | "connect" | "grpc";
const DOORS: Door[] = ["json", "connect", "grpc"];

/** What one call came to: "ok", or the err:svc code with the door's own status (HTTP, Connect code, gRPC status). */
interface Outcome {
  code: string;
  status: number | string;
}

/** The door statuses each refusal must carry (src/errors/catalog.ts). */
const STATUS: Record<string, Record<Door, number | string>> = {
  ok: { json: 200, connect: "ok", grpc: "ok" },
  "err:svc:authorization:key_disabled": { json: 403, connect: Code[Code.PermissionDenied], grpc: 7 },
  "err:svc:authorization:forbidden": { json: 403, connect: Code[Code.PermissionDenied], grpc: 7 },
  "err:svc:authorization:insufficient_permissions": { json: 403, connect: Code[Code.PermissionDenied], grpc: 7 },
  "err:svc:authentication:key_not_found": { json: 401, connect: Code[Code.Unauthenticated], grpc: 16 },
};

const codeOfJson = (res: Res): string => {
  const type = res.body?.error?.type;
  return typeof type === "string" ? `err:${type.split("/errors-v2/")[1]?.split("/").join(":")}` : "no error type";
};

describe("a root key's lifecycle on every door", () => {
  const h = useHarness();
  let connectApis: Client<typeof ApisService>;
  let connectRootKeys: Client<typeof RootKeysService>;
  let grpcApis: GrpcClient;
  let grpcRootKeys: GrpcClient;
  let manager: { key: string; keyId: string };
  let apiId: string;

  beforeAll(async () => {
    await h.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = h.app.server.address() as AddressInfo;
    const transport = createConnectTransport({ httpVersion: "1.1", baseUrl: `http://127.0.0.1:${port}` });
    connectApis = createClient(ApisService, transport);
    connectRootKeys = createClient(RootKeysService, transport);
    const services = loadServices("apis_service.proto", "root_keys_service.proto");
    const target = `127.0.0.1:${await h.grpcPort()}`;
    grpcApis = new (service(services, "ApisService"))(target, grpc.credentials.createInsecure());
    grpcRootKeys = new (service(services, "RootKeysService"))(target, grpc.credentials.createInsecure());
    manager = await seededRootKey(h, ["*"]);
    apiId = await createApi(h, "lifecycle-api", manager.key);
  });

  afterAll(() => {
    (grpcApis as grpc.Client | undefined)?.close();
    (grpcRootKeys as grpc.Client | undefined)?.close();
  });

  const auth = (key: string) => ({ headers: { authorization: `Bearer ${key}` } });

  async function connectOutcome(p: Promise<unknown>): Promise<Outcome> {
    try {
      await p;
      return { code: "ok", status: "ok" };
    } catch (err) {
      if (!(err instanceof ConnectError)) throw err;
      return { code: err.findDetails(ErrorDetailSchema)[0]?.code ?? "no ErrorDetail", status: Code[err.code] };
    }
  }

  async function grpcOutcome(p: Promise<unknown>): Promise<Outcome> {
    try {
      await p;
      return { code: "ok", status: "ok" };
    } catch (err) {
      const e = err as grpc.ServiceError;
      return { code: String(e.metadata?.get("error-code")[0] ?? "no error-code"), status: e.code };
    }
  }

  /** apis.getApi on the test's API (needs apis.*.read_api), through one door. */
  async function read(door: Door, key: string): Promise<Outcome> {
    if (door === "json") {
      const res = await h.post("/v2/apis.getApi", { apiId }, key);
      return res.status === 200 ? { code: "ok", status: 200 } : { code: codeOfJson(res), status: res.status };
    }
    if (door === "connect") return connectOutcome(connectApis.getApi({ apiId }, auth(key)));
    return grpcOutcome(call(grpcApis, "GetApi", { apiId }, bearer(key)));
  }

  /** apis.createApi (needs apis.*.create_api), through one door. */
  async function create(door: Door, key: string): Promise<Outcome> {
    const name = `made-over-${door}`;
    if (door === "json") {
      const res = await h.post("/v2/apis.createApi", { name }, key);
      return res.status === 200 ? { code: "ok", status: 200 } : { code: codeOfJson(res), status: res.status };
    }
    if (door === "connect") return connectOutcome(connectApis.createApi({ name }, auth(key)));
    return grpcOutcome(call(grpcApis, "CreateApi", { name }, bearer(key)));
  }

  /** The same answer on all three doors: "ok", or the code with each door's own status. */
  async function expectEverywhere(op: typeof read, key: string, code: string): Promise<void> {
    const got: Record<string, Outcome> = {};
    for (const door of DOORS) got[door] = await op(door, key);
    const want = STATUS[code];
    expect(want, `a status row for ${code}`).toBeDefined();
    expect(got).toEqual({
      json: { code, status: want?.json },
      connect: { code, status: want?.connect },
      grpc: { code, status: want?.grpc },
    });
  }

  // The root key under test: its first id and secret, then the rotated ones.
  let first: { keyId: string; key: string };
  let second: { keyId: string; key: string };

  it("created with an expiry, it works on JSON, Connect and gRPC", async () => {
    const expires = Date.now() + 3_600_000;
    first = expectOk(
      await h.post("/v2/rootKeys.createRootKey", { name: "lifecycle", permissions: ["apis.*.read_api", "apis.*.create_api"], expires }, manager.key),
    );
    expect((await listed(h, first.keyId))?.expires).toBe(expires);
    await expectEverywhere(read, first.key, "ok");
    await expectEverywhere(create, first.key, "ok");
  });

  it("disabled (over Connect): 403 key_disabled on all three doors at once", async () => {
    const res = await connectRootKeys.updateRootKey({ keyId: first.keyId, enabled: false }, auth(manager.key));
    expect(res.rootKey?.enabled).toBe(false);
    await expectEverywhere(read, first.key, "err:svc:authorization:key_disabled");
  });

  it("enabled again (over gRPC): it works on all three doors at once", async () => {
    const res = await call<Json>(grpcRootKeys, "UpdateRootKey", { keyId: first.keyId, enabled: true }, bearer(manager.key));
    expect(res.rootKey.enabled).toBe(true);
    await expectEverywhere(read, first.key, "ok");
  });

  it("rotated with gracePeriodMs 1500: both secrets work; after the grace the old one is refused (403 forbidden) while the new works", async () => {
    const res = expectOk(await h.post("/v2/rootKeys.rotateRootKey", { keyId: first.keyId, gracePeriodMs: 1500 }, manager.key));
    second = { keyId: res.keyId, key: res.key };
    expect(second.keyId).not.toBe(first.keyId);
    // Within the grace period (the calls take a few ms of its 1,500).
    await expectEverywhere(read, first.key, "ok");
    await expectEverywhere(read, second.key, "ok");
    // The bound is the grace period itself, but the test does not assert a time:
    // it polls until the old secret is refused, within a generous limit.
    const { ok } = await pollUntil(async () => (await read("json", first.key)).code !== "ok", 10_000);
    expect(ok, "the old secret is refused once the grace period is over").toBe(true);
    expect(Date.now()).toBeGreaterThan(res.previousExpires);
    await expectEverywhere(read, first.key, "err:svc:authorization:forbidden");
    await expectEverywhere(read, second.key, "ok");
    await expectEverywhere(create, second.key, "ok");
  });

  it("narrowed (over gRPC, setPermissions): a call needing the removed grant answers 403 at once on all three doors", async () => {
    const res = await call<Json>(
      grpcRootKeys,
      "UpdateRootKey",
      { keyId: second.keyId, permissions: ["apis.*.read_api"], setPermissions: true },
      bearer(manager.key),
    );
    expect(res.rootKey.permissions).toEqual(["apis.*.read_api"]);
    await expectEverywhere(create, second.key, "err:svc:authorization:insufficient_permissions");
    await expectEverywhere(read, second.key, "ok");
  });

  it("revoked: 401 key_not_found on all three doors at once", async () => {
    expect(expectOk(await h.post("/v2/rootKeys.deleteRootKey", { keyId: second.keyId }, manager.key))).toEqual({});
    await expectEverywhere(read, second.key, "err:svc:authentication:key_not_found");
    expect(await listed(h, second.keyId)).toBeUndefined();
  });

  it("each change left its audit record, naming the root key that made it", async () => {
    const actor = { type: "root_key", id: manager.keyId };
    const ofFirst = await allLogs(h, { resourceId: first.keyId }, manager.key);
    expect(ofFirst.map((l) => l.action)).toEqual(["root_key.rotate", "root_key.update", "root_key.update", "root_key.create"]);
    const ofSecond = await allLogs(h, { resourceId: second.keyId }, manager.key);
    expect(ofSecond.map((l) => l.action)).toEqual(["root_key.delete", "root_key.update", "root_key.rotate"]);
    const one = (keyId: string) => [{ type: "root_key", id: keyId }];
    expect(ofFirst.map((l) => l.resources)).toEqual([
      expect.arrayContaining([...one(first.keyId), ...one(second.keyId)]),
      one(first.keyId),
      one(first.keyId),
      one(first.keyId),
    ]);
    expect(ofSecond.map((l) => l.resources)).toEqual([
      one(second.keyId),
      one(second.keyId),
      expect.arrayContaining([...one(first.keyId), ...one(second.keyId)]),
    ]);
    for (const l of [...ofFirst, ...ofSecond]) {
      expect(l.actor).toEqual(actor);
      // No record holds either secret.
      expect(JSON.stringify(l)).not.toContain(first.key);
      expect(JSON.stringify(l)).not.toContain(second.key);
    }
    // The rotation names both keys, so each key's history shows it.
    expect(ofFirst[0]?.id).toBe(ofSecond[2]?.id);
    // The manager's own view: by actor and action.
    const byManager = await allLogs(
      h,
      { actorId: manager.keyId, actions: ["root_key.create", "root_key.update", "root_key.rotate", "root_key.delete"] },
      manager.key,
    );
    expect(byManager.filter((l) => [first.keyId, second.keyId].includes(l.resources[0]?.id)).map((l) => l.action)).toEqual([
      "root_key.delete",
      "root_key.update",
      "root_key.rotate",
      "root_key.update",
      "root_key.update",
      "root_key.create",
    ]);
  });

  describe("on another instance of the same database", () => {
    let b: Instance;

    beforeAll(async () => {
      b = await h.otherInstance();
      // Both poll the invalidation log, as src/main.ts starts them.
      await h.runtime.invalidations.start(250);
      await b.runtime.invalidations.start(250);
    });

    const probeOnB = (key: string) => b.post("/v2/apis.getApi", { apiId }, key);

    /** Polls B every 50 ms for at most 1 s (the bound from the issue) until `refused` holds. */
    async function refusedOnBWithin1s(key: string, status: number): Promise<Res> {
      const { ok, afterMs } = await pollUntil(async () => (await probeOnB(key)).status === status, 1_000, 50);
      expect(ok, `refused on the other instance within 1 s (gave up after ${afterMs} ms)`).toBe(true);
      return probeOnB(key);
    }

    it("a root key disabled here is refused there within 1 s (403 key_disabled); enabled, it works there again", async () => {
      const k = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, manager.key));
      expect((await probeOnB(k.key)).status).toBe(200); // authenticated there, and cached there
      expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId: k.keyId, enabled: false }, manager.key));
      expectError(h, await refusedOnBWithin1s(k.key, 403), 403, "err:svc:authorization:key_disabled");
      expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId: k.keyId, enabled: true }, manager.key));
      const { ok } = await pollUntil(async () => (await probeOnB(k.key)).status === 200, 1_000, 50);
      expect(ok, "enabled again on the other instance within 1 s").toBe(true);
    });

    it("a root key revoked here is refused there within 1 s (401 key_not_found)", async () => {
      const k = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, manager.key));
      expect((await probeOnB(k.key)).status).toBe(200);
      expectOk(await h.post("/v2/rootKeys.deleteRootKey", { keyId: k.keyId }, manager.key));
      expectError(h, await refusedOnBWithin1s(k.key, 401), 401, "err:svc:authentication:key_not_found");
    });

    it("grants narrowed here are enforced there within 1 s", async () => {
      const k = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api", "apis.*.read_key"] }, manager.key));
      expect((await probeOnB(k.key)).status).toBe(200);
      expectOk(await h.post("/v2/rootKeys.updateRootKey", { keyId: k.keyId, permissions: ["apis.*.read_key"] }, manager.key));
      expectError(h, await refusedOnBWithin1s(k.key, 403), 403, "err:svc:authorization:insufficient_permissions");
    });

    it("a root key disabled there is refused here within 1 s", async () => {
      const k = expectOk(await h.post("/v2/rootKeys.createRootKey", { permissions: ["apis.*.read_api"] }, manager.key));
      expect((await h.post("/v2/apis.getApi", { apiId }, k.key)).status).toBe(200); // cached here
      expectOk(await b.post("/v2/rootKeys.updateRootKey", { keyId: k.keyId, enabled: false }, manager.key));
      const { ok } = await pollUntil(async () => (await h.post("/v2/apis.getApi", { apiId }, k.key)).status === 403, 1_000, 50);
      expect(ok, "refused on this instance within 1 s").toBe(true);
      expectError(h, await h.post("/v2/apis.getApi", { apiId }, k.key), 403, "err:svc:authorization:key_disabled");
    });
  });
});
