// Real resources for the fuzz suites to aim at: an API, a key (with a rate limit,
// credits, a permission, a role and an identity), an identity, a namespace with
// an override, a permission and a role. Generated bodies name them through Refs
// resolved when a case is sent, so a case stays meaningful after a fuzzed delete
// and `repair()` has re-created what was deleted.
import { expect } from "vitest";
import { newId } from "../../src/core/ids.js";
import { insertKeyMigration } from "../../src/storage/key-migrations.js";
import type { Harness, Res } from "../harness.js";

export interface World {
  rootKey: string;
  apiId: string;
  keyId: string;
  key: string;
  identityId: string;
  externalId: string;
  namespaceName: string;
  namespaceId: string;
  identifier: string;
  permissionSlug: string;
  permissionId: string;
  roleName: string;
  roleId: string;
  ratelimitName: string;
  /** A key migration of the workspace (sha256), for keys.migrateKeys and verifyKey's migrationId. */
  migrationId: string;
  /** A time one day ahead (for `expires`). */
  future: number;
}

export type WorldName = keyof World;

const ok = (res: Res): Res => {
  expect(res.status, `seeding: ${res.status} ${res.text.slice(0, 500)}`).toBe(200);
  return res;
};

export class Worlds {
  readonly w: World;

  private constructor(
    private readonly h: Harness,
    w: World,
  ) {
    this.w = w;
  }

  private post(path: string, body: unknown): Promise<Res> {
    return this.h.post(`/v2/${path}`, body, this.w.rootKey);
  }

  static async seed(h: Harness): Promise<Worlds> {
    const rootKey = await h.rootKey(["*"]);
    const w: World = {
      rootKey,
      apiId: "",
      keyId: "",
      key: "",
      identityId: "",
      externalId: "fuzz_user",
      namespaceName: "fuzz_ns",
      namespaceId: "",
      identifier: "fuzz_vip",
      permissionSlug: "fuzz.read",
      permissionId: "",
      roleName: "fuzz_admin",
      roleId: "",
      ratelimitName: "fuzz_rl",
      migrationId: newId("mig"),
      future: Date.now() + 86_400_000,
    };
    // Migrations are made by the CLI, never through the API, so no fuzzed request can remove it.
    await insertKeyMigration(h.db.pool, { id: w.migrationId, workspaceId: h.workspaceId, algorithm: "sha256", createdAt: Date.now() });
    const worlds = new Worlds(h, w);
    await worlds.repair(true);
    return worlds;
  }

  /** Re-creates whatever a fuzzed request deleted (everything when `all`). */
  async repair(all = false): Promise<void> {
    const w = this.w;
    if (all || (await this.post("permissions.getPermission", { permission: w.permissionSlug })).status === 404) {
      const res = await this.post("permissions.createPermission", { name: "fuzz read", slug: w.permissionSlug });
      if (res.status !== 409) w.permissionId = ok(res).body.data.permissionId;
    }
    w.permissionId = ok(await this.post("permissions.getPermission", { permission: w.permissionSlug })).body.data.id;
    if (all || (await this.post("permissions.getRole", { role: w.roleName })).status === 404) {
      const res = await this.post("permissions.createRole", { name: w.roleName, permissions: [w.permissionSlug] });
      if (res.status !== 409) ok(res);
    }
    w.roleId = ok(await this.post("permissions.getRole", { role: w.roleName })).body.data.id;
    if ((await this.post("identities.getIdentity", { identity: w.externalId })).status === 404) {
      ok(
        await this.post("identities.createIdentity", {
          externalId: w.externalId,
          meta: { plan: "pro" },
          ratelimits: [{ name: "fuzz_shared", limit: 1000, duration: 60_000 }],
        }),
      );
    }
    w.identityId = ok(await this.post("identities.getIdentity", { identity: w.externalId })).body.data.id;
    const apiGone = all || (await this.post("apis.getApi", { apiId: w.apiId })).status === 404;
    if (apiGone) w.apiId = ok(await this.post("apis.createApi", { name: "fuzz-api" })).body.data.apiId;
    if (apiGone || (await this.post("keys.getKey", { keyId: w.keyId })).status === 404) {
      const res = ok(
        await this.post("keys.createKey", {
          apiId: w.apiId,
          name: "fuzz key",
          externalId: w.externalId,
          meta: { team: "fuzz" },
          permissions: [w.permissionSlug],
          roles: [w.roleName],
          credits: { remaining: 1_000_000_000, refill: { interval: "daily", amount: 1_000_000_000 } },
          ratelimits: [{ name: w.ratelimitName, limit: 1_000_000, duration: 60_000 }],
        }),
      );
      w.keyId = res.body.data.keyId;
      w.key = res.body.data.key;
    }
    if (all) ok(await this.post("ratelimit.limit", { namespace: w.namespaceName, identifier: "seed", limit: 10, duration: 60_000 }));
    if (all || (await this.post("ratelimit.getOverride", { namespace: w.namespaceName, identifier: w.identifier })).status === 404) {
      ok(await this.post("ratelimit.setOverride", { namespace: w.namespaceName, identifier: w.identifier, limit: 100, duration: 60_000 }));
    }
    w.namespaceId = ok(await this.post("ratelimit.getOverride", { namespace: w.namespaceName, identifier: w.identifier })).body.data.namespaceId;
  }
}
