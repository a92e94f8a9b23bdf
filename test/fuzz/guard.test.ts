// The fuzz suites' stored-data check must itself see changes, or "a refused
// request changed nothing" would pass vacuously.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, key } from "../fixtures.js";
import { useHarness } from "../harness.js";
import { DataGuard } from "./guard.js";

describe("DataGuard", () => {
  const h = useHarness();
  let guard: DataGuard;
  let rk: string;

  beforeAll(async () => {
    guard = await DataGuard.open(h);
    rk = await h.rootKey(["*"]);
  });
  afterAll(() => guard?.close());

  it("names the tables a request changed, through the pool and inside transactions", async () => {
    const { changed } = await guard.run(
      () => h.post("/v2/keys.createKey", { apiId: "x" }, rk).then(() => api(h, rk)),
      () => true,
    );
    expect(changed.sort()).toEqual(["apis", "audit_logs", "audit_resources", "key_auth"]);
  });

  it("sees an in-place update of one column (a last-used time written behind) and the verification's analytics rows", async () => {
    const k = await key(h, rk, await api(h, rk));
    // A first use writes the key's keys_last_used row; the second, a later time, updates that row's one column in place.
    expect((await h.post("/v2/keys.verifyKey", { key: k.key }, rk)).status).toBe(200);
    await h.deps.usage.flush();
    await new Promise((r) => setTimeout(r, 5));
    const { changed } = await guard.run(
      () => h.post("/v2/keys.verifyKey", { key: k.key }, rk),
      () => true,
    );
    expect(changed.sort()).toEqual([
      "analytics_verifications",
      "analytics_verifications_per_day",
      "analytics_verifications_per_hour",
      "analytics_verifications_per_minute",
      "analytics_verifications_per_month",
      "keys_last_used",
    ]);
  });

  it("reports nothing for reads, or for an answer that was not a refusal", async () => {
    expect(
      (
        await guard.run(
          () => h.post("/v2/permissions.listRoles", {}, rk),
          () => true,
        )
      ).changed,
    ).toEqual([]);
    expect(
      (
        await guard.run(
          () => api(h, rk),
          () => false,
        )
      ).changed,
    ).toEqual([]);
  });
});
