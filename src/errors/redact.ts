// Error messages quote what the client sent (a field name, a role, a rate-limit
// name, a path). When what it sent is an API key of the caller's workspace or a
// root key, the quote is cut to the key's first characters: error bodies end up
// in client logs and support tickets, and no answer of ours may carry a key it
// was not asked to return. Without a caller (an unauthenticated error) or with
// the database out of reach, every long token is cut, with no lookup: an
// unauthenticated client cannot make us query the database, and the lookup is
// scoped to the caller's own workspace, so it cannot tell whether a token is a
// key elsewhere. Only errors pay for this, and only those quoting long tokens.

import { AppError, type FieldError } from "../core/errors.js";
import { hasRootKeyShape } from "../domain/auth/root-key.js";
import type { Deps } from "../domain/deps.js";
import { hashKey } from "../domain/keys/generate.js";
import { outageOf } from "../domain/outage.js";
import { findWorkspaceKeyHashes } from "../storage/keys.js";

/** Runs of key characters (prefix, `_`, base58) long enough to be a key (16 random bytes or more). */
const TOKEN = /[A-Za-z0-9_-]{16,}/g;
const MAX_TOKENS = 32;

const cut = (token: string): string => `${token.slice(0, 8)}…`;

/** The error with every quoted key cut short; the same error when it quotes none. */
export async function redactKeys(deps: Pick<Deps, "pool">, err: AppError, workspaceId: string | undefined): Promise<AppError> {
  const texts = [err.detail ?? "", ...(err.errors ?? []).flatMap((e) => [e.location, e.message, e.fix ?? ""])];
  const tokens = new Set<string>();
  for (const t of texts) for (const m of t.matchAll(TOKEN)) if (tokens.size < MAX_TOKENS) tokens.add(m[0]);
  if (tokens.size === 0) return err;

  const keys = new Set([...tokens].filter(hasRootKeyShape));
  const byHash = new Map([...tokens].filter((t) => !keys.has(t)).map((t) => [hashKey(t), t]));
  if (byHash.size > 0) {
    const outage = outageOf(deps.pool);
    const hashes = [...byHash.keys()];
    const found =
      workspaceId === undefined || outage.down
        ? undefined
        : await outage.read(undefined, () => findWorkspaceKeyHashes(deps.pool, workspaceId, hashes)).catch(() => undefined);
    // No caller, or unable to check: cut every long token rather than risk quoting a key.
    if (found === undefined) for (const t of byHash.values()) keys.add(t);
    else for (const h of found) keys.add(byHash.get(h) as string);
  }
  if (keys.size === 0) return err;
  const clean = (s: string): string => s.replace(TOKEN, (t) => (keys.has(t) ? cut(t) : t));
  const errors = err.errors?.map(
    (e): FieldError => ({ ...e, location: clean(e.location), message: clean(e.message), ...(e.fix === undefined ? {} : { fix: clean(e.fix) }) }),
  );
  return new AppError(err.code, err.detail === undefined ? undefined : clean(err.detail), errors);
}
