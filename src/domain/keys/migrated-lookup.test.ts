// The keys a seamapi migration adopts: their imported hash and the `start` they are given.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { seamapiKey } from "./migrated-lookup.js";

const LONG = "51FwqftsmMDHHbJAMEXXHCgG";

describe("seamapi keys", () => {
  it("prefix_short_long: the hex SHA-256 of the long token, as github.com/seamapi/prefixed-api-key stores it", () => {
    expect(seamapiKey(`mycompany_BRTRKFsL_${LONG}`)?.importedHash).toBe(createHash("sha256").update(LONG).digest("hex"));
  });

  it("start is the prefix and 4 characters of the short token, never any of the long token", () => {
    expect(seamapiKey(`mycompany_BRTRKFsL_${LONG}`)?.start).toBe("mycompany_BRTR");
    expect(seamapiKey(`p_s_${LONG}`)?.start).toBe("p_s");
  });

  it("start is cut to the contract's 50 characters", () => {
    expect(seamapiKey(`${"p".repeat(80)}_BRTRKFsL_${LONG}`)?.start).toHaveLength(50);
  });

  // The library's hash covers the long token alone: any of these would match the
  // imported row of `acme_BRTRKFsL_LONG` and, adopted, lock the real key out.
  it.each([
    ["the long token alone", LONG],
    ["prefix_long (no short token)", `sk_${LONG}`],
    ["four parts (a prefix with `_`)", `acme_live_BRTRKFsL_${LONG}`],
    ["five parts", `evil_x_y_BRTRKFsL_${LONG}`],
    ["an empty prefix", `_BRTRKFsL_${LONG}`],
    ["an empty short token", `acme__${LONG}`],
    ["an empty long token", "acme_BRTRKFsL_"],
    ["only separators", "__"],
  ])("%s is not a seamapi key", (_label, key) => {
    expect(seamapiKey(key)).toBeUndefined();
  });
});
