import { describe, expect, it } from "vitest";
import { RecordCache } from "../../cache/verification-cache.js";
import type { Deps } from "../deps.js";
import { cachedNamespaceNow, keepNamespaceKey, type NamespaceRow, namespaceKeysKept } from "./namespaces.js";

describe("cachedNamespaceNow", () => {
  it("keeps the key of a namespace the cache holds, and none for a name it does not", () => {
    const namespaceCache = new RecordCache<NamespaceRow>({ maxEntries: 10, maxBytes: 1_000_000, ttlMs: 0, negativeTtlMs: 0 }, () => 1);
    const deps = { namespaceCache } as unknown as Deps;
    const before = namespaceKeysKept();
    expect(cachedNamespaceNow(deps, "ws_cached", "nowhere")).toBeUndefined();
    expect(namespaceKeysKept()).toBe(before);
    const ns = { id: "rlns_1", name: "api" } as NamespaceRow;
    namespaceCache.set("ws_cached|api", ns);
    expect(cachedNamespaceNow(deps, "ws_cached", "api")).toBe(ns);
    expect(namespaceKeysKept()).toBe(before + 1);
    // Found again through the kept key.
    expect(cachedNamespaceNow(deps, "ws_cached", "api")).toBe(ns);
    expect(namespaceKeysKept()).toBe(before + 1);
  });
});

describe("keepNamespaceKey", () => {
  it("is `<workspace>|<ref>`, whatever the ref holds, kept or not", () => {
    for (const ref of ["api", "a|b", "rlns_1234", "ünï", "\ud800lone", "", "x".repeat(129), "é".repeat(512)]) {
      expect(keepNamespaceKey("ws_1", ref)).toBe(`ws_1|${ref}`);
      expect(keepNamespaceKey("ws_1", ref)).toBe(`ws_1|${ref}`);
      expect(keepNamespaceKey("ws_2", ref)).toBe(`ws_2|${ref}`);
    }
  });

  it("keeps no ref longer than 128 characters", () => {
    const before = namespaceKeysKept();
    keepNamespaceKey("ws_long", "y".repeat(128));
    expect(namespaceKeysKept()).toBe(before + 1);
    keepNamespaceKey("ws_long", "y".repeat(129));
    keepNamespaceKey("ws_long", "z".repeat(512));
    expect(namespaceKeysKept()).toBe(before + 1);
  });

  it("keeps at most 10,000 pairs, counted in its maps, and still answers rightly past them", () => {
    for (let i = 0; i < 25_000; i++) {
      expect(keepNamespaceKey(`ws_${i % 7}`, `ns_${i}`)).toBe(`ws_${i % 7}|ns_${i}`);
      // Never above the bound, and the pair just kept is counted (kept in a map still reachable).
      expect(namespaceKeysKept()).toBeLessThanOrEqual(10_000);
      expect(namespaceKeysKept()).toBeGreaterThan(0);
    }
    expect(namespaceKeysKept()).toBeGreaterThan(0);
    expect(keepNamespaceKey("ws_3", "ns_3")).toBe("ws_3|ns_3");
  });
});
