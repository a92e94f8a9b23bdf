// The house's layers (docs/architecture.md), held against the code: the import
// rules of .dependency-cruiser.cjs, and SQL written only in src/storage.
import { execFileSync, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "..", "..");
const depcruise = path.join(root, "node_modules", ".bin", "depcruise");
const config = path.join(root, ".dependency-cruiser.cjs");

/** Runs dependency-cruiser's rules over `dir`/src; its report and whether it passed. */
function cruise(dir: string): { ok: boolean; report: string } {
  const r = spawnSync(depcruise, ["src", "--config", config, "--output-type", "err"], { cwd: dir, encoding: "utf8" });
  return { ok: r.status === 0, report: `${r.stdout}${r.stderr}` };
}

/** A throwaway tree of two files, `from` importing `to`. */
function tree(from: string, to: string, extra = ""): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-layers-"));
  fs.writeFileSync(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions: { module: "nodenext", moduleResolution: "nodenext", strict: true } }));
  fs.mkdirSync(path.dirname(path.join(dir, from)), { recursive: true });
  fs.mkdirSync(path.dirname(path.join(dir, to)), { recursive: true });
  const spec = path.relative(path.dirname(path.join(dir, from)), path.join(dir, to)).replace(/\.ts$/, ".js");
  fs.writeFileSync(path.join(dir, from), `import { x } from "${spec.startsWith(".") ? spec : `./${spec}`}";\nexport const y = x;\n${extra}`);
  fs.writeFileSync(path.join(dir, to), "export const x = 1;\n");
  return dir;
}

/** The rules refuse the tree, naming `rule`; the tree is removed either way. */
function expectRefused(dir: string, rule: string): void {
  try {
    const { ok, report } = cruise(dir);
    expect(ok).toBe(false);
    expect(report).toContain(rule);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe("import rules", () => {
  it("the code keeps every rule", () => {
    const { ok, report } = cruise(root);
    expect(report).toContain("no dependency violations found");
    expect(ok).toBe(true);
  });

  // The rules must be able to fail: each forbidden direction is tried on a throwaway tree.
  it.each([
    ["storage-looks-down", "src/storage/keys.ts", "src/domain/ids.ts"],
    ["domain-knows-no-transport", "src/domain/keys/verify.ts", "src/transport/body.ts"],
    ["cache-looks-down", "src/cache/invalidation.ts", "src/domain/deps.ts"],
    ["server-is-the-composition-root", "src/gateway/plugin.ts", "src/server/metrics.ts"],
    ["core-imports-nothing", "src/core/ids.ts", "src/storage/sql.ts"],
    ["services-below-the-doors", "src/services/keys.ts", "src/gateway/answered.ts"],
    ["errors-below-transport", "src/errors/catalog.ts", "src/transport/body.ts"],
    ["transport-below-the-doors", "src/transport/invoke.ts", "src/grpc/server.ts"],
  ])("%s refuses %s importing %s", (rule, from, to) => {
    expectRefused(tree(from, to), rule);
  });

  it("sql-only-in-storage refuses mysql2 imported outside storage", () => {
    const dir = tree("src/transport/metrics.ts", "src/core/ids.ts", 'import type { Pool } from "mysql2/promise";\nexport type P = Pool;\n');
    fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
    expectRefused(dir, "sql-only-in-storage");
  });

  it("a lower layer importing a higher one in a loop is refused as a circle too", () => {
    const dir = tree("src/domain/a.ts", "src/domain/b.ts");
    fs.writeFileSync(path.join(dir, "src/domain/b.ts"), 'import { y } from "./a.js";\nexport const x = 1;\nexport const z = y;\n');
    expectRefused(dir, "no-circular");
  });
});

describe("SQL only in storage", () => {
  // A statement's text: a verb at the start of a string, then what it works on.
  const STATEMENT = /["'`]\s*(SELECT\s+[\w@`*(]|INSERT\s+INTO\b|UPDATE\s+`?\w+`?\s+SET\b|DELETE\s+FROM\b|REPLACE\s+INTO\b)/i;
  // The private server's supervisor asks the server it runs which data folder it
  // serves and which version it is: health checks of its own process, no table read.
  const ALLOWED = new Set(["src/embedded-db/private-server.ts"]);

  const sources = execFileSync("git", ["ls-files", "src"], { cwd: root, encoding: "utf8" })
    .split("\n")
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && fs.existsSync(path.join(root, f)));

  it("no statement is written outside src/storage", () => {
    const outside = sources
      .filter((f) => !f.startsWith("src/storage/") && !ALLOWED.has(f))
      .flatMap((f) =>
        fs
          .readFileSync(path.join(root, f), "utf8")
          .split("\n")
          .map((line, i) => ({ where: `${f}:${i + 1}`, line }))
          .filter(({ line }) => STATEMENT.test(line) && !line.trimStart().startsWith("//") && !line.trimStart().startsWith("*")),
      )
      .map(({ where, line }) => `${where}: ${line.trim()}`);
    expect(outside).toEqual([]);
  });

  it("the pattern finds the statements storage does write", () => {
    const found = sources.filter((f) => f.startsWith("src/storage/") && STATEMENT.test(fs.readFileSync(path.join(root, f), "utf8")));
    expect(found).toContain("src/storage/keys.ts");
    expect(found).toContain("src/storage/invalidations.ts");
    expect(found.length).toBeGreaterThan(10);
  });
});
