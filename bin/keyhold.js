#!/usr/bin/env node
// The `keyhold` command (npx keyhold ...). Runs the compiled CLI from dist/,
// which `npm ci` / `npm install` build (the "prepare" script) and `npm start` refreshes.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const cli = join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "src", "cli", "main.js");
if (!existsSync(cli)) {
  process.stderr.write("keyhold: the CLI is not built yet; run `npm run build` (npm ci does it) and try again.\n");
  process.exit(1);
}
await import(pathToFileURL(cli).href);
