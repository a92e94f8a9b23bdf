// Helpers for the rootKeys.* and auditLogs.listLogs tests: root keys made through
// the API (or the harness) with their ids, the workspace's listing, the audit log
// read page by page, and a poll that bounds how long a change may take to show.
import { expect } from "vitest";
import { hashKey } from "../../../src/domain/keys/generate.js";
import type { Harness, Res } from "../../harness.js";
import { admin, expectOk, type Json, show } from "../shared/helpers.js";

/** The four grants of the rootKeys group and the audit log's (docs/permissions.md). */
export const GRANT = {
  create: "workspace.*.create_root_key",
  read: "workspace.*.read_root_key",
  update: "workspace.*.update_root_key",
  delete: "workspace.*.delete_root_key",
  readAudit: "workspace.*.read_audit_log",
} as const;

/** The id of a root key the harness issued (h.rootKey returns only the secret). */
export async function rootKeyIdOf(h: Harness, key: string): Promise<string> {
  const [rs] = await h.db.pool.query("SELECT id FROM root_keys WHERE hash = ?", [hashKey(key)]);
  const id = (rs as Json[])[0]?.id;
  expect(id, "the root key is in root_keys").toBeTypeOf("string");
  return String(id);
}

/** A root key with exactly these grants, seeded by the harness, with its id. */
export async function seededRootKey(h: Harness, permissions: string[], workspace?: string): Promise<{ key: string; keyId: string }> {
  const key = await h.rootKey(permissions, workspace);
  return { key, keyId: await rootKeyIdOf(h, key) };
}

/** rootKeys.createRootKey through the API (by this file's admin unless told); expects 200. */
export async function createRootKey(h: Harness, body: Record<string, unknown>, rootKey?: string): Promise<{ keyId: string; key: string }> {
  const data = expectOk(await h.post("/v2/rootKeys.createRootKey", body, rootKey ?? (await admin(h))));
  return data as { keyId: string; key: string };
}

/** The workspace's root keys as rootKeys.listRootKeys lists them. */
export async function listRootKeys(h: Harness, rootKey?: string): Promise<Json[]> {
  const data = expectOk(await h.post("/v2/rootKeys.listRootKeys", {}, rootKey ?? (await admin(h))));
  expect(Array.isArray(data), "data is the list itself").toBe(true);
  return data as Json[];
}

/** One root key of the listing, or undefined when it is not listed. */
export async function listed(h: Harness, keyId: string, rootKey?: string): Promise<Json | undefined> {
  return (await listRootKeys(h, rootKey)).find((k) => k.keyId === keyId);
}

/**
 * A call that needs exactly `apis.*.read_api`: apis.getApi of an API that does
 * not exist answers 404 to a root key that authenticated and holds the grant,
 * 403 to one without it, and the root key's own refusal (401/403) otherwise.
 */
export const readApiProbe = (h: Harness, key: string): Promise<Res> => h.post("/v2/apis.getApi", { apiId: "api_probe_does_not_exist" }, key);

/** The error type's last two segments (`authorization/key_disabled`), or the status when it is not an error. */
export function outcome(res: Res): string {
  const type = res.body?.error?.type;
  return typeof type === "string" ? type.split("/").slice(-2).join("/") : String(res.status);
}

/**
 * Polls `fn` every `everyMs` until it is true or `withinMs` have passed; returns
 * whether it became true, and when (ms after the start). A bound measured by
 * polling, never a sleep that assumes the answer.
 */
export async function pollUntil(fn: () => Promise<boolean>, withinMs: number, everyMs = 50): Promise<{ ok: boolean; afterMs: number }> {
  const start = Date.now();
  for (;;) {
    if (await fn()) return { ok: true, afterMs: Date.now() - start };
    if (Date.now() - start >= withinMs) return { ok: false, afterMs: Date.now() - start };
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** One page of auditLogs.listLogs; expects 200 and returns the rows and pagination. */
export async function listLogs(h: Harness, body: Record<string, unknown>, rootKey?: string): Promise<{ logs: Json[]; pagination: Json }> {
  const res = await h.post("/v2/auditLogs.listLogs", body, rootKey ?? (await admin(h)));
  const data = expectOk(res, { pagination: true });
  expect(Array.isArray(data), show(res)).toBe(true);
  return { logs: data as Json[], pagination: res.body.pagination };
}

/** Every record matching the filters, walking the pages (`limit` per page). */
export async function allLogs(h: Harness, filters: Record<string, unknown>, rootKey?: string, limit = 100): Promise<Json[]> {
  const out: Json[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1000; page++) {
    const { logs, pagination } = await listLogs(h, { ...filters, limit, ...(cursor === undefined ? {} : { cursor }) }, rootKey);
    out.push(...logs);
    if (!pagination.hasMore) return out;
    cursor = pagination.cursor;
  }
  throw new Error("more than 1000 pages");
}

/** A listing without lastUsedAt, which the write-behind may fill in between two reads. */
export const withoutLastUse = (rows: Json[]): Json[] => rows.map(({ lastUsedAt: _u, ...k }) => k);
