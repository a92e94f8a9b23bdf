// Key redaction in error answers (src/errors/redact.ts), from review: no database
// lookup without an authenticated caller, and no cross-workspace key oracle.
import { describe, expect, it } from "vitest";
import { api, key } from "../fixtures.js";
import { useHarness } from "../harness.js";

const LONG_PATH = "/v2/nothing.thisOperationDoesNotExistAnywhere";

describe("error redaction", () => {
  const h = useHarness();

  it("an unauthenticated request to an unknown route costs no database statement", async () => {
    let status = 0;
    const n = await h.countQueries(async () => {
      status = (await h.post(LONG_PATH, {})).status;
    });
    expect(status).toBe(404);
    expect(n, "statements run for an unauthenticated 404").toBe(0);
  });

  it("an error answer does not tell a root key whether a token is a live key of another workspace", async () => {
    const rkA = await h.rootKey(["*"]);
    const apiA = await api(h, rkA);
    const rkB = await h.rootKey(["*"], "review_redact_other_ws");
    const keyB = (await key(h, rkB, await api(h, rkB))).key as string;
    // A random string of the same shape, known to be no key.
    const decoy = `${keyB.slice(0, 4)}${"Z".repeat(keyB.length - 4)}`;
    const detail = async (role: string) => (await h.post("/v2/keys.createKey", { apiId: apiA, roles: [role] }, rkA)).body.error.detail as string;
    const real = await detail(keyB);
    const fake = await detail(decoy);
    // Both are quoted the same way (both cut, or neither): otherwise the answer is a key-existence oracle across workspaces.
    expect(real.includes(keyB), real).toBe(fake.includes(decoy));
  });

  it("an authenticated caller's own key is cut from an error answer, a long token that is no key of its workspace is quoted whole", async () => {
    const rk = await h.rootKey(["*"]);
    const apiId = await api(h, rk);
    const own = (await key(h, rk, apiId)).key as string;
    const detail = async (role: string) => (await h.post("/v2/keys.createKey", { apiId, roles: [role] }, rk)).body.error.detail as string;
    const cut = await detail(own);
    expect(cut, "the caller's key is not quoted").not.toContain(own);
    expect(cut).toContain(`${own.slice(0, 8)}…`);
    // Only known to be no key once the caller's workspace has been looked in: an unknown caller gets every long token cut.
    const role = "billing_reader_for_the_eu_region";
    expect(await detail(role)).toContain(role);
  });
});
