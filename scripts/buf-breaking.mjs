// `buf breaking` for proto/: fails when the protos in the working tree would break
// a client generated from any version of them that reached main. Every commit on
// main that changed proto/ is such a version, so each is checked, not only the
// last: a submission of several commits cannot break a client in its first commit
// and hide it behind the next. BUF_BREAKING_AGAINST adds a ref (a branch a pull
// request targets, e.g. origin/main). The rules are buf.yaml's `breaking` section.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { depsDir, writeBufDeps } from "./buf-deps.mjs";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const buf = path.join(root, "node_modules", ".bin", "buf");
const git = (args, opts = {}) => execFileSync("git", args, { cwd: root, stdio: ["ignore", "pipe", "pipe"], ...opts });

if (!fs.existsSync(path.join(root, ".git"))) {
  console.log("buf breaking: not a git checkout, so there is no earlier version to compare with; skipped");
  process.exit(0);
}

writeBufDeps();
const refs = git(["log", "--format=%H", "HEAD", "--", "proto"]).toString().split("\n").filter(Boolean);
if (process.env.BUF_BREAKING_AGAINST) refs.unshift(git(["rev-parse", "--verify", process.env.BUF_BREAKING_AGAINST]).toString().trim());

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "keyhold-buf-breaking-"));
let broken = 0;
try {
  for (const ref of new Set(refs)) {
    // An exported tree (not buf's own .git input): no clone, and the old buf.yaml comes along.
    const dir = path.join(tmp, ref);
    fs.mkdirSync(dir);
    const files = git(["ls-tree", "-r", "--name-only", ref, "--", "proto", "buf.yaml"]).toString().split("\n").filter(Boolean);
    for (const file of files) {
      fs.mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), git(["show", `${ref}:${file}`], { maxBuffer: 64 << 20 }));
    }
    // A version whose protos import protovalidate needs its .proto, which git does not hold (.buf-deps/ is written, not committed).
    if (fs.readFileSync(path.join(dir, "buf.yaml"), "utf8").includes(".buf-deps")) fs.cpSync(depsDir, path.join(dir, ".buf-deps"), { recursive: true });
    const subject = git(["log", "-1", "--format=%h %s", ref]).toString().trim();
    try {
      execFileSync(buf, ["breaking", "proto", "--against", path.join(dir, "proto")], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      console.log(`buf breaking: compatible with ${subject}`);
    } catch (err) {
      broken++;
      process.stderr.write(`buf breaking: would break clients generated from ${subject}:\n${err.stdout}${err.stderr}\n`);
    }
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
if (refs.length === 0) console.log("buf breaking: no earlier version of proto/ on this branch; nothing to compare");
process.exit(broken === 0 ? 0 : 1);
