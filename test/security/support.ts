// Helpers shared by the security tests: the operations the service descriptors
// define, grants resolved from the permission table, and a fingerprint of every
// row that belongs to (or points at) a workspace.
import type { Pool, RowDataPacket } from "mysql2/promise";
import { GRANTABLE_ACTIONS, type GrantRule, type Placeholder, RESOURCE_PLACEHOLDER, type ResourceType } from "../../src/domain/auth/operation-permissions.js";
import { grantCovers } from "../../src/domain/auth/wildcard.js";
import { groupOf } from "../../src/gateway/plugin.js";
import { services } from "../../src/server/registry.js";
import type { Harness } from "../harness.js";

/** `<group>.<operation>` of every RPC the registry serves (the JSON paths after /v2/). */
export function allOperations(h: Harness): string[] {
  return services(h.deps).flatMap(({ service }) => service.methods.map((m) => `${groupOf(service)}.${m.localName}`));
}

/** A namespace the call itself creates: it has no id a grant could name beforehand. */
export const NEW = "\u0000new";

export type Vars = Partial<Record<Placeholder, string[]>>;

/** One rule per namespace for `forEach` rules, each with its placeholders filled in; unknown ids drop their form. */
export function resolveRules(rules: readonly GrantRule[], vars: Vars): string[][] {
  const out: string[][] = [];
  for (const rule of rules) {
    const ph = rule.anyOf.flatMap((g) => [...g.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as Placeholder));
    const name = ph[0];
    if (name === undefined) {
      out.push([...rule.anyOf]);
      continue;
    }
    const values = vars[name];
    if (values === undefined || values.length === 0) throw new Error(`no value for {${name}} in ${rule.anyOf.join(" | ")}`);
    if (!rule.forEach && values.length !== 1) throw new Error(`{${name}} has ${values.length} values but the rule is not per-item`);
    for (const v of values) {
      out.push(rule.anyOf.flatMap((g) => (g.includes(`{${name}}`) ? (v === NEW ? [] : [g.replace(`{${name}}`, v)]) : [g])));
    }
  }
  return out;
}

/**
 * Every grant of the catalogue, in the `*` form and in the specific form for each
 * id given (and for decoy ids when asked: other resources of the same kind).
 */
export function catalogue(vars: Vars, decoys: boolean): string[] {
  const grants: string[] = [];
  for (const [resource, actions] of Object.entries(GRANTABLE_ACTIONS) as Array<[ResourceType, readonly string[]]>) {
    const ph = RESOURCE_PLACEHOLDER[resource];
    const ids = ["*", ...(ph === undefined ? [] : (vars[ph] ?? []).filter((v) => v !== NEW))];
    if (decoys) ids.push(`${resource}_decoy1`);
    for (const id of ids) for (const a of actions) grants.push(`${resource}.${id}.${a}`);
    if (decoys) grants.push(`${resource}.${resource}_decoy2.*`);
  }
  return grants;
}

/** Strings that look like the wanted grant but must not cover it (anchoring, case, spelling). */
export const nearMisses = (wanted: readonly string[]): string[] =>
  wanted.flatMap((w) => [`${w}_x`, `x${w}`, w.slice(0, -1), w.toUpperCase(), `${w}.x`, w.replace(/^(\w+)\./, "$1s.")]);

/** Whether any of these grants covers any of the wanted ones. */
export const coversAny = (grant: string, wanted: readonly string[]): boolean => wanted.some((w) => grantCovers(grant, w));

// ---------------------------------------------------------------------------
// Fingerprints of database rows.

type Row = Record<string, unknown>;

/** Columns holding row ids (externalId is a name the caller chose, not an id). */
export const idColumn = (c: string): boolean => c === "id" || (c.endsWith("_id") && c !== "external_id");

async function tables(pool: Pool): Promise<Map<string, string[]>> {
  const [rows] = await pool.query<RowDataPacket[]>(
    `SELECT c.TABLE_NAME AS t, c.COLUMN_NAME AS c FROM information_schema.COLUMNS c
       JOIN information_schema.TABLES x ON x.TABLE_SCHEMA = c.TABLE_SCHEMA AND x.TABLE_NAME = c.TABLE_NAME
      WHERE c.TABLE_SCHEMA = DATABASE() AND x.TABLE_TYPE = 'BASE TABLE' ORDER BY c.TABLE_NAME, c.ORDINAL_POSITION`,
  );
  const out = new Map<string, string[]>();
  for (const r of rows) out.set(r.t as string, [...(out.get(r.t as string) ?? []), r.c as string]);
  return out;
}

/** Left out of fingerprints: a root key's last use, written even when the request is refused (the key did authenticate). */
const BOOKKEEPING = new Set(["root_keys.last_used_at_m"]);

const show = (v: unknown): unknown => (Buffer.isBuffer(v) ? `hex:${v.toString("hex")}` : v);

/**
 * Every row of every table whose `id` or `*_id` column holds the workspace's id or
 * the id of one of its rows, followed to a fixpoint: the workspace's own rows, and
 * any row anywhere that points at them. Rows are sorted, so equal data compares equal.
 */
export async function fingerprint(pool: Pool, workspaceId: string): Promise<Record<string, string[]>> {
  const schema = await tables(pool);
  const ids = new Set([workspaceId]);
  let found: Record<string, Row[]> = {};
  for (let round = 0; round < 4; round++) {
    const before = ids.size;
    found = {};
    for (const [table, cols] of schema) {
      const refs = cols.filter(idColumn);
      if (refs.length === 0) continue;
      const list = [...ids];
      const [rows] = await pool.query<RowDataPacket[]>(
        `SELECT * FROM \`${table}\` WHERE ${refs.map((c) => `\`${c}\` IN (?)`).join(" OR ")}`,
        refs.map(() => list),
      );
      found[table] = rows;
      // An empty id (a usage row's "no key") refers to nothing: following it would pull in every workspace.
      for (const r of rows) for (const c of refs) if (typeof r[c] === "string" && r[c] !== "") ids.add(r[c] as string);
    }
    if (ids.size === before) break;
  }
  const out: Record<string, string[]> = {};
  for (const [table, rows] of Object.entries(found)) {
    out[table] = rows
      .map((r) =>
        JSON.stringify(
          Object.entries(r)
            .filter(([k]) => !BOOKKEEPING.has(`${table}.${k}`))
            .map(([k, v]) => [k, show(v)]),
        ),
      )
      .sort();
  }
  return out;
}

/** The id of the workspace with this name. */
export async function workspaceIdOf(pool: Pool, name: string): Promise<string> {
  const [rows] = await pool.query<RowDataPacket[]>("SELECT id FROM workspaces WHERE name = ?", [name]);
  const id = rows[0]?.id;
  if (typeof id !== "string") throw new Error(`no workspace ${name}`);
  return id;
}
