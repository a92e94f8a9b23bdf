import { describe, expect, it } from "vitest";
import { namespaceKey, namespaceKeysKept } from "./namespaces.js";

describe("namespaceKey", () => {
  it("is `<workspace>|<ref>`, whatever the ref holds, asked once or again", () => {
    for (const ref of ["api", "a|b", "rlns_1234", "ünï", "\ud800lone", ""]) {
      expect(namespaceKey("ws_1", ref)).toBe(`ws_1|${ref}`);
      expect(namespaceKey("ws_1", ref)).toBe(`ws_1|${ref}`);
      expect(namespaceKey("ws_2", ref)).toBe(`ws_2|${ref}`);
    }
  });

  it("keeps at most 10,000 pairs and still answers rightly past them", () => {
    for (let i = 0; i < 25_000; i++) {
      expect(namespaceKey(`ws_${i % 7}`, `ns_${i}`)).toBe(`ws_${i % 7}|ns_${i}`);
      expect(namespaceKeysKept()).toBeLessThanOrEqual(10_000);
    }
    expect(namespaceKeysKept()).toBeGreaterThan(0);
    expect(namespaceKey("ws_3", "ns_3")).toBe("ws_3|ns_3");
  });
});
