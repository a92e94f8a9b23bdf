import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

function findProjectDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = path.join(dir, "package.json");
    if (fs.existsSync(pkg) && JSON.parse(fs.readFileSync(pkg, "utf8")).name === "keyhold") return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`cannot find keyhold's package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

/** The checkout (or installed package) root, whether running from src/ or dist/src/. */
export const projectDir = findProjectDir();
export const migrationsDir = path.join(projectDir, "src", "storage", "migrations");
export const stateDir = path.join(projectDir, ".keyhold");
