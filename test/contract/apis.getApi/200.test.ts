import { describe, expect, it } from "vitest";
import { useHarness } from "../../harness.js";
import { createApi, expectOk, uid } from "../shared/helpers.js";

describe("apis.getApi 200", () => {
  const h = useHarness();

  it("answers exactly {id, name}", async () => {
    const name = uid("reports");
    const apiId = await createApi(h, name);
    const rk = await h.rootKey(["apis.*.read_api"]);
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, rk))).toEqual({ id: apiId, name });
  });

  it("a grant for this one API (apis.<apiId>.read_api) is enough", async () => {
    const apiId = await createApi(h);
    const rk = await h.rootKey([`apis.${apiId}.read_api`]);
    expect(expectOk(await h.post("/v2/apis.getApi", { apiId }, rk)).id).toBe(apiId);
  });
});
