// Each operation's own error codes are declared once, as `(keyhold.v2.raises)`
// options on its RPC in proto/ (the OpenAPI document lists them from there).
// Held here against the contract tests: a declared code that no contract test of
// the operation exercises is a stale declaration, and a code a contract test
// expects straight from the operation must be declared or common to every one.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ErrorCode } from "../../src/core/errors.js";
import type { Deps } from "../../src/domain/deps.js";
import { commonErrors, idempotencyErrors, raisedBy } from "../../src/gateway/openapi.js";
import { routeTable } from "../../src/gateway/plugin.js";
import { services } from "../../src/server/registry.js";

const contractDir = path.resolve(import.meta.dirname, "..", "contract");

/** Codes every operation may answer (the OpenAPI document's common responses, and idempotency's). */
const COMMON = new Set<string>([...commonErrors, ...idempotencyErrors]);

/** The text of an operation's contract tests, with the shared suites they import. */
function contractText(op: string): string {
  const dir = path.join(contractDir, op);
  const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
  const texts = files.map((f) => fs.readFileSync(f, "utf8"));
  const shared = new Set(texts.flatMap((t) => [...t.matchAll(/from "\.\.\/shared\/([\w-]+)\.js"/g)].map((m) => m[1])));
  for (const s of shared) texts.push(fs.readFileSync(path.join(contractDir, "shared", `${s}.ts`), "utf8"));
  return texts.join("\n");
}

// The route table needs only the services' shapes, not a database.
const routes = routeTable(services({ log: { info() {}, warn() {}, error() {} } } as unknown as Deps));

describe("each operation's declared error codes", () => {
  it.each(routes.map((r) => [r.path, r] as const))("%s: every declared code is exercised by its contract tests", (op, route) => {
    const text = contractText(op);
    for (const code of raisedBy(route.method)) expect(text.includes(code), `${op} declares ${code}, but no contract test of it expects that code`).toBe(true);
  });

  it.each(routes.map((r) => [r.path, r] as const))("%s: every code expected straight from it is declared or common", (op, route) => {
    const declared = new Set<string>(raisedBy(route.method));
    const text = contractText(op);
    // expectError(h, await h.post("/v2/<op>", ...), <status>, "<code>") on one line
    const direct = new RegExp(`expectError\\(h, await h\\.post\\("/v2/${op.replace(".", "\\.")}"[^\\n]*?"(err:[a-z_:]+)"`, "g");
    const seen = [...text.matchAll(direct)].map((m) => m[1] as ErrorCode);
    for (const code of seen) expect(COMMON.has(code) || declared.has(code), `${op} answers ${code} in its contract tests, but does not declare it`).toBe(true);
  });
});
