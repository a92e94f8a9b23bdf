// Root keys: create one with a permission picker (grouped by resource, with
// wildcards), see the key once with a copy button, list with last use, revoke.
import { useState } from "preact/hooks";
import { GRANTABLE_ACTIONS, type ResourceType } from "../../../src/domain/auth/operation-permissions.js";
import { dashboard } from "../api.js";
import { CodeCell, ConfirmButton, ErrorNote, Field, type FormEvent, ListState, SubmitButton, Table, useAction, useLoad, when } from "../ui.js";

const RESOURCES: { type: ResourceType; title: string; any: string }[] = [
  { type: "apis", title: "APIs and their keys", any: "of any API" },
  { type: "identity", title: "Identities", any: "of the workspace" },
  { type: "ratelimit", title: "Rate limits", any: "of any namespace" },
  { type: "rbac", title: "Roles and permissions", any: "of the workspace" },
];

const SPECIAL: Record<string, string> = {
  limit: "Apply rate limits in any namespace",
  encrypt_key: "Create recoverable (encrypted) keys in any API",
  decrypt_key: "Read the plaintext of recoverable keys in any API",
  read_analytics: "Read verification analytics of any API",
};

const PLURAL: Record<string, string> = {
  api: "APIs",
  identity: "identities",
  key: "keys",
  namespace: "namespaces",
  override: "overrides",
  permission: "permissions",
  role: "roles",
};

/** "create_key" → "Create keys in any API"; "add_role_to_key" → "Add roles to keys". */
function describe(type: ResourceType, action: string): string {
  const special = SPECIAL[action];
  if (special !== undefined) return special;
  const [verb = "", ...rest] = action.split("_");
  const text = [verb.charAt(0).toUpperCase() + verb.slice(1), ...rest.map((w) => PLURAL[w] ?? w)].join(" ");
  if (type === "apis" && action.endsWith("_key")) return `${text} in any API`;
  if (type === "ratelimit" && action.includes("override")) return `${text} in any namespace`;
  return text;
}

/** `apis.*.create_key`; rbac grants have no resource id. */
const grant = (type: ResourceType, action: string) => (type === "rbac" ? `rbac.*.${action}` : `${type}.*.${action}`);

function PermissionPicker({ value, onChange }: { value: Set<string>; onChange: (v: Set<string>) => void }) {
  const toggle = (p: string, on: boolean) => {
    const next = new Set(value);
    if (on) next.add(p);
    else next.delete(p);
    onChange(next);
  };
  const all = value.has("*");
  return (
    <div class="picker">
      <label class="check">
        <input type="checkbox" checked={all} onChange={(e) => toggle("*", e.currentTarget.checked)} />
        <code>*</code> <span>Everything in the workspace, now and later</span>
      </label>
      {RESOURCES.map((r) => {
        const wildcard = `${r.type}.*`;
        const whole = all || value.has(wildcard);
        return (
          <fieldset key={r.type} disabled={all}>
            <legend>{r.title}</legend>
            <label class="check">
              <input type="checkbox" checked={whole} onChange={(e) => toggle(wildcard, e.currentTarget.checked)} />
              <code>{wildcard}</code> <span>Every action {r.any}</span>
            </label>
            <div class="actions">
              {GRANTABLE_ACTIONS[r.type].map((a) => {
                const p = grant(r.type, a);
                return (
                  <label class="check" key={p}>
                    <input type="checkbox" disabled={whole} checked={whole || value.has(p)} onChange={(e) => toggle(p, e.currentTarget.checked)} />
                    <code>{p}</code> <span>{describe(r.type, a)}</span>
                  </label>
                );
              })}
            </div>
          </fieldset>
        );
      })}
    </div>
  );
}

function CreatedKey({ rootKey, onDone }: { rootKey: string; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  return (
    // biome-ignore lint/a11y/useSemanticElements: a <section> would be a heading level of its own; the region only needs its label
    <div class="created" role="region" aria-label="New root key">
      <h2>Your new root key</h2>
      <p>Copy it now: keyhold keeps only its hash, and it will not be shown again.</p>
      <p>
        <code class="secret" data-testid="root-key">
          {rootKey}
        </code>
      </p>
      <button
        type="button"
        class="primary"
        onClick={() =>
          navigator.clipboard.writeText(rootKey).then(
            () => setCopied(true),
            () => setCopied(false),
          )
        }
      >
        {copied ? "Copied" : "Copy root key"}
      </button>{" "}
      <button type="button" onClick={onDone}>
        Done
      </button>
    </div>
  );
}

export function RootKeysPage({ workspaceId }: { workspaceId: string }) {
  const list = useLoad(async () => (await dashboard.listRootKeys({ workspaceId })).rootKeys, [workspaceId]);
  const [name, setName] = useState("");
  const [perms, setPerms] = useState<Set<string>>(new Set());
  const [extra, setExtra] = useState("");
  const [created, setCreated] = useState<string>();
  const create = useAction();
  const permissions = [...perms, ...extra.split(/[\s,]+/).filter((p) => p !== "")];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      const res = await dashboard.createRootKey({ workspaceId, name, permissions });
      setCreated(res.rootKey);
      setName("");
      setPerms(new Set());
      setExtra("");
      list.reload();
    });
  };
  return (
    <section>
      <h1>Root keys</h1>
      {created !== undefined && <CreatedKey rootKey={created} onDone={() => setCreated(undefined)} />}
      <ListState loaded={list} empty="No root keys in this workspace yet.">
        {(items) => (
          <Table
            columns={["Name", "Starts with", "Permissions", "Created", "Last used"]}
            items={items}
            rowKey={(k) => k.keyId}
            cells={(k) => (
              <>
                <td>{k.name || <em>unnamed</em>}</td>
                <CodeCell>{k.start}…</CodeCell>
                <td class="perms">{k.permissions.join(", ")}</td>
                <td>{when(k.createdAt)}</td>
                <td>{k.lastUsedAt === undefined ? "Never" : when(k.lastUsedAt)}</td>
              </>
            )}
            actions={(k) => (
              <ConfirmButton
                label="Revoke"
                question={`Revoke ${k.name || k.keyId}? It stops working at once.`}
                confirm="Yes, revoke"
                onConfirm={async () => {
                  await dashboard.revokeRootKey({ workspaceId, keyId: k.keyId });
                  list.reload();
                }}
              />
            )}
          />
        )}
      </ListState>
      <h2>Create a root key</h2>
      <form onSubmit={submit}>
        <Field label="Name (optional)">
          <input maxLength={256} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <PermissionPicker value={perms} onChange={setPerms} />
        <Field label="More grants (optional)" hint="Space- or comma-separated, for one resource: apis.api_123.read_key, ratelimit.rlns_123.limit">
          <input value={extra} onInput={(e) => setExtra(e.currentTarget.value)} />
        </Field>
        <SubmitButton
          busy={create.busy}
          disabled={permissions.length === 0}
          label={`Create root key (${permissions.length} grant${permissions.length === 1 ? "" : "s"})`}
          busyLabel="Creating…"
        />
        {create.error && <ErrorNote message={create.error} />}
      </form>
    </section>
  );
}
