import { describe, expect, it } from "vitest";
import { codeMap, nameAt, normalise } from "../../bench/callgrind-names.js";

// Lines as `node --perf-basic-prof` writes them, out of order, one address reused by a later compile.
const MAP = codeMap(
  [
    "d2e1880 160 JS:*parseJson file:///work/new-kh/dist/src/transport/decode.js:34:26",
    "d29e640 7ec JS:*#C file:///work/main/node_modules/lru-cache/dist/esm/node/index.min.js:1:16696",
    "d100000 40 JS:~old file:///work/new-kh/dist/src/old.js:1:1",
    "d100000 80 JS:^ file:///work/new-kh/dist/src/gateway/plugin.js:161:43",
    "d2b0000 20 RegExp:^svc_[1-9A-HJ-NP-Za-km-z]{39}$",
    // Freed and its space reused by code starting below it: the address is the newer code's.
    "d300100 80 JS:*stale file:///work/new-kh/dist/src/stale.js:1:1",
    "d300000 200 JS:*fresh file:///work/new-kh/dist/src/fresh.js:1:1",
    "",
  ].join("\n"),
);

describe("callgrind's names (bench/where.ts)", () => {
  it("finds the code an address is in, the latest compile at an address winning", () => {
    expect(nameAt(MAP, 0xd2e1880)).toContain("parseJson");
    expect(nameAt(MAP, 0xd2e1880 + 0x15f)).toContain("parseJson");
    expect(nameAt(MAP, 0xd2e1880 + 0x160)).toBeUndefined();
    expect(nameAt(MAP, 0xd100050)).toContain("plugin.js");
    expect(nameAt(MAP, 0x1000)).toBeUndefined();
    expect(nameAt(MAP, 0xd300120)).toContain("fresh");
    expect(nameAt(MAP, 0xd3001f0)).toContain("fresh");
  });

  it("names compiled JavaScript the same in every build: no checkout, line or tier", () => {
    const checkout = "/work/new-kh";
    expect(normalise("???:0x000000000d2e1880 [???]", checkout, MAP)).toBe("JS parseJson src/transport/decode.js");
    expect(normalise("???:0x000000000d100010 [???]", checkout, MAP)).toBe("JS (anonymous) src/gateway/plugin.js");
    expect(normalise("???:0x000000000d29e700 [???]", checkout, MAP)).toBe("JS #C node_modules/lru-cache/dist/esm/node/index.min.js");
    expect(normalise("???:0x000000000d2b0004 [???]", checkout, MAP)).toBe("RegExp ^svc_[1-9A-HJ-NP-Za-km-z]{39}$");
    expect(normalise("???:0x000000000d900000 [???]", checkout, MAP)).toBe("(code V8 made and did not name)");
  });

  it("names native functions without their file, object or arguments", () => {
    expect(normalise("???:v8::internal::String::SlowFlatten(v8::internal::Isolate*, int) [/usr/bin/node]", "/x", MAP)).toBe(
      "v8::internal::String::SlowFlatten",
    );
    expect(normalise("???:v8::internal::(anonymous namespace)::IterateObjectCache(v8::internal::Isolate*) [/usr/bin/node]", "/x", MAP)).toBe(
      "v8::internal::{anonymous}::IterateObjectCache",
    );
    expect(normalise("./malloc/./malloc/malloc.c:_int_free [/usr/lib/x86_64-linux-gnu/libc.so.6]", "/x", MAP)).toBe("_int_free");
    expect(normalise("???:Builtins_LoadIC [/usr/bin/node]", "/x", MAP)).toBe("Builtins_LoadIC");
  });
});
