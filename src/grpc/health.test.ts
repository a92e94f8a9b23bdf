// The health service on a grpc-js server of its own, called by a client built
// from grpc-health-check's copy of the public proto (what health probes use).
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { protoPath } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthService, ServingStatus } from "./health.js";

// biome-ignore lint/suspicious/noExplicitAny: a client built at run time from the proto
type Json = any;

describe("grpc.health.v1", () => {
  const server = new grpc.Server();
  const health = new HealthService(["", "keyhold.v2.KeysService"]);
  let client: Json;

  beforeAll(async () => {
    health.addToServer(server);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    const def = protoLoader.loadSync(protoPath, { enums: String, defaults: true });
    const Health = (grpc.loadPackageDefinition(def) as Json).grpc.health.v1.Health as grpc.ServiceClientConstructor;
    client = new Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });

  afterAll(() => {
    client.close();
    server.forceShutdown();
  });

  const check = (service: string): Promise<Json> =>
    new Promise((resolve, reject) => client.check({ service }, (e: Error | null, r: Json) => (e ? reject(e) : resolve(r))));

  /** The first `n` answers of a Watch, then the call is cancelled. */
  const watch = (service: string, n: number, afterFirst?: () => void): Promise<string[]> =>
    new Promise((resolve, reject) => {
      const call = client.watch({ service }) as grpc.ClientReadableStream<Json>;
      const seen: string[] = [];
      call.on("data", (r: Json) => {
        seen.push(r.status);
        if (seen.length === 1) afterFirst?.();
        if (seen.length === n) {
          call.cancel();
          resolve(seen);
        }
      });
      call.on("error", (e: grpc.ServiceError) => {
        if (e.code !== grpc.status.CANCELLED) reject(e);
      });
    });

  const until = async (cond: () => boolean) => {
    for (let i = 0; i < 100 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
    return cond();
  };

  it("Check: a served name's status; an unknown name is NOT_FOUND", async () => {
    expect(await check("")).toMatchObject({ status: "SERVING" });
    expect(await check("keyhold.v2.KeysService")).toMatchObject({ status: "SERVING" });
    await expect(check("no.such.Service")).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it("List: every served name", async () => {
    const r = await new Promise<Json>((resolve, reject) => client.list({}, (e: Error | null, x: Json) => (e ? reject(e) : resolve(x))));
    expect(Object.keys(r.statuses).sort()).toEqual(["", "keyhold.v2.KeysService"]);
  });

  it("Watch: the status now, then each change; nothing is kept once the call ends", async () => {
    const seen = await watch("keyhold.v2.KeysService", 2, () => health.setAll(ServingStatus.NOT_SERVING));
    expect(seen).toEqual(["SERVING", "NOT_SERVING"]);
    health.setAll(ServingStatus.SERVING);
    expect(await until(() => health.watching() === 0)).toBe(true);
  });

  it("Watch on names it does not serve: SERVICE_UNKNOWN, and no watcher is kept for any of them", async () => {
    const names = Array.from({ length: 200 }, (_, i) => `made.up.Service${i}${"x".repeat(1_000)}`);
    const calls = names.map((name) => {
      const call = client.watch({ service: name }) as grpc.ClientReadableStream<Json>;
      call.on("error", () => undefined);
      return new Promise<string>((resolve) => call.once("data", (r: Json) => resolve(r.status)));
    });
    expect(new Set(await Promise.all(calls))).toEqual(new Set(["SERVICE_UNKNOWN"]));
    expect(health.watching()).toBe(0);
  });
});
