// Which of keyhold's error statuses the @unkey/api SDK reports only as its
// generic error (APIError, an UnkeyError), not as a typed error class: for each
// operation keyhold serves that the SDK also has, the statuses keyhold can answer
// (the codes every operation may answer, the Idempotency-Key ones on changing
// operations, and the RPC's own `(keyhold.v2.raises)` options, each mapped to
// its status by src/errors/catalog.ts) minus those the SDK's generated function
// parses into a typed error (`M.jsonErr(<status>, …)` in its funcs/*.ts). The
// README's "The @unkey/api SDK" table is this script's output.
//
// Plain Node, no build: the protos, the catalog and src/gateway/openapi.ts are
// read as text (their layouts are fixed by buf format and Biome).
//   node scripts/sdk-untyped-statuses.mjs
import fs from "node:fs";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "..");
const read = (p) => fs.readFileSync(path.join(root, p), "utf8");

// The status of every code (one `"err:…": spec(<status>, …` per code).
const status = new Map([...read("src/errors/catalog.ts").matchAll(/"(err:[a-z_:]+)":\s*spec\(\s*(\d{3})/g)].map((m) => [m[1], Number(m[2])]));
const codesOf = (name) => {
  const list = new RegExp(`export const ${name}\\b[^=]*=\\s*\\[([\\s\\S]*?)\\];`).exec(read("src/gateway/openapi.ts"));
  if (!list) throw new Error(`no ${name} in src/gateway/openapi.ts`);
  return [...list[1].matchAll(/"(err:[a-z_:]+)"/g)].map((m) => m[1]);
};
const common = codesOf("commonErrors");
const idempotency = codesOf("idempotencyErrors");
// As src/services/idempotency.ts's isReadOnly: the operations an Idempotency-Key does nothing for.
const readOnly = (op) => /^(get|list)[A-Z]/.test(op) || op === "whoami";

// keyhold's operations and their own codes, from proto/keyhold/v2/*_service.proto.
const ops = new Map();
const protoDir = path.join(root, "proto/keyhold/v2");
for (const file of fs.readdirSync(protoDir).filter((f) => f.endsWith("_service.proto"))) {
  const text = fs.readFileSync(path.join(protoDir, file), "utf8");
  const svc = /^service (\w+)Service \{$/m.exec(text);
  if (!svc) continue;
  const group = svc[1].charAt(0).toLowerCase() + svc[1].slice(1);
  for (const m of text.matchAll(/^ {2}rpc (\w+)\([^)]*\) returns \([^)]*\)( \{\n([\s\S]*?)\n {2}\})?/gm)) {
    const op = m[1].charAt(0).toLowerCase() + m[1].slice(1);
    ops.set(`${group}.${op}`, { op, raises: [...(m[3] ?? "").matchAll(/raises\) = "([^"]+)"/g)].map((r) => r[1]) });
  }
}

// The SDK's typed statuses per operation path.
const funcs = path.join(root, "node_modules/@unkey/api/src/funcs");
const typed = new Map();
for (const f of fs.readdirSync(funcs).filter((x) => x.endsWith(".ts"))) {
  const text = fs.readFileSync(path.join(funcs, f), "utf8");
  const p = /pathToFunc\("\/v2\/([^"]+)"\)/.exec(text)?.[1];
  if (p) typed.set(p, new Set([...text.matchAll(/M\.jsonErr\(\s*(\d{3})/g)].map((m) => Number(m[1]))));
}

const statusOf = (code) => {
  const s = status.get(code);
  if (s === undefined) throw new Error(`${code} is not in src/errors/catalog.ts`);
  return s;
};
const untyped = [];
for (const [path_, { op, raises }] of [...ops].sort(([a], [b]) => a.localeCompare(b))) {
  const sdk = typed.get(path_);
  if (sdk === undefined) continue; // keyhold's own operation: no SDK function
  const codes = [...common, ...(readOnly(op) ? [] : idempotency), ...raises];
  const byStatus = new Map();
  for (const c of codes) {
    const s = statusOf(c);
    if (sdk.has(s)) continue;
    byStatus.set(s, [...(byStatus.get(s) ?? []), c]);
  }
  untyped.push({ path: path_, changing: !readOnly(op), byStatus });
}

// Statuses untyped on every operation (from the common codes) first, then what each operation adds.
const everywhere = [...new Set(common.map(statusOf))].filter((s) => untyped.every((u) => u.byStatus.has(s))).sort();
console.log(`Untyped on every operation: ${everywhere.map((s) => `${s} (${common.filter((c) => statusOf(c) === s).join(", ")})`).join("; ")}`);
for (const u of untyped) {
  const extra = [...u.byStatus].filter(([s]) => !everywhere.includes(s)).sort(([a], [b]) => a - b);
  if (extra.length > 0) console.log(`${u.path}: ${extra.map(([s, cs]) => `${s} (${cs.join(", ")})`).join("; ")}`);
}
