// Fails when gen/ is not what `buf generate` makes from proto/, or when buf lint
// or buf format complain. Generates into a temporary folder, so it never writes gen/.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { writeBufDeps } from "./buf-deps.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const buf = path.join(root, "node_modules", ".bin", "buf");
const env = { ...process.env, PATH: `${path.join(root, "node_modules", ".bin")}${path.delimiter}${process.env.PATH ?? ""}` };
const run = (args) => execFileSync(buf, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] }).toString();

function fail(msg) {
  process.stderr.write(`check-gen: ${msg}\n`);
  process.exit(1);
}

writeBufDeps();
try {
  run(["lint"]);
} catch (err) {
  fail(`buf lint failed:\n${err.stdout}${err.stderr}`);
}
try {
  run(["format", "-d", "--exit-code"]);
} catch (err) {
  fail(`proto files are not formatted (run npm run generate):\n${err.stdout}`);
}
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-gen-"));
try {
  const template = fs.readFileSync(path.join(root, "buf.gen.yaml"), "utf8").replace(/out: gen/g, `out: ${tmp}`);
  run(["generate", "--template", template]);
  const diff = [];
  const walk = (dir, rel = "") => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) walk(path.join(dir, e.name), r);
      else diff.push(r);
    }
  };
  walk(tmp);
  const committed = [];
  const walkGen = (dir, rel = "") => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) walkGen(path.join(dir, e.name), r);
      else committed.push(r);
    }
  };
  walkGen(path.join(root, "gen"));
  const stale = [];
  for (const f of new Set([...diff, ...committed])) {
    const a = fs.existsSync(path.join(tmp, f)) ? fs.readFileSync(path.join(tmp, f), "utf8") : undefined;
    const b = fs.existsSync(path.join(root, "gen", f)) ? fs.readFileSync(path.join(root, "gen", f), "utf8") : undefined;
    if (a !== b) stale.push(f);
  }
  if (stale.length > 0) fail(`gen/ is stale (run npm run generate and commit): ${stale.join(", ")}`);
  process.stdout.write("check-gen: buf lint clean, protos formatted, gen/ current\n");
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
