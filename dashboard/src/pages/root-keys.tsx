// Root keys: create one with a permission picker (grouped by resource, with
// wildcards) and an optional expiry, see the key once with a copy button; list
// with state, expiry and last use; per key: disable/enable, edit its grants,
// rotate (the new secret shown once, the old one kept for a grace period), revoke.
import { useEffect, useRef, useState } from "preact/hooks";
import type { RootKey } from "../../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { GRANTABLE_ACTIONS, type ResourceType } from "../../../src/domain/auth/operation-permissions.js";
import { dashboard } from "../api.js";
import { CodeCell, ConfirmButton, ErrorNote, Field, type FormEvent, fromLocalInput, ListState, SubmitButton, Table, useAction, useLoad, when } from "../ui.js";

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

/** How long the old secret keeps working after a rotation (the server allows up to 30 days). */
const GRACE_PERIODS: { ms: number; label: string }[] = [
  { ms: 0, label: "None: the old secret stops at once" },
  { ms: 3_600_000, label: "1 hour" },
  { ms: 86_400_000, label: "24 hours" },
  { ms: 7 * 86_400_000, label: "7 days" },
];

/** Grants as typed: separated by commas, spaces or new lines. */
const splitGrants = (text: string): string[] => text.split(/[\s,]+/).filter((p) => p !== "");

const labelOf = (k: RootKey): string => k.name || k.keyId;

/** A secret shown this once: what it is, the secret with a copy button, and Done. */
interface Shown {
  title: string;
  rootKey: string;
  note?: string;
}

function ShownKey({ shown, onDone }: { shown: Shown; onDone: () => void }) {
  const [copied, setCopied] = useState(false);
  const box = useRef<HTMLDivElement>(null);
  // A rotation starts from a row far down the list: bring the secret into view, and the focus with it.
  useEffect(() => {
    box.current?.scrollIntoView({ block: "nearest" });
    box.current?.focus();
  }, [shown.rootKey]);
  return (
    // biome-ignore lint/a11y/useSemanticElements: a <section> would be a heading level of its own; the region only needs its label
    <div class="created" role="region" aria-label="New root key" ref={box} tabIndex={-1}>
      <h2>{shown.title}</h2>
      <p>Copy it now: keyhold keeps only its hash, and it will not be shown again.</p>
      {shown.note !== undefined && <p data-testid="root-key-note">{shown.note}</p>}
      <p>
        <code class="secret" data-testid="root-key">
          {shown.rootKey}
        </code>
      </p>
      <button
        type="button"
        class="primary"
        onClick={() =>
          navigator.clipboard.writeText(shown.rootKey).then(
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

/** The key's grants as editable text, one per line; saving replaces them all. */
function EditPermissions({ workspaceId, rootKey, onDone }: { workspaceId: string; rootKey: RootKey; onDone: () => void }) {
  const [text, setText] = useState(rootKey.permissions.join("\n"));
  const action = useAction();
  const permissions = splitGrants(text);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      await dashboard.updateRootKey({ workspaceId, keyId: rootKey.keyId, permissions, setPermissions: true });
      onDone();
    });
  };
  return (
    <form onSubmit={submit}>
      <Field label={`Permissions of ${labelOf(rootKey)}`} hint="One per line, or separated by commas">
        <textarea rows={Math.min(8, Math.max(3, permissions.length + 1))} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </Field>
      <div class="row">
        <SubmitButton busy={action.busy} disabled={permissions.length === 0} label="Save permissions" busyLabel="Saving…" />
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      {action.error && <ErrorNote message={action.error} />}
    </form>
  );
}

/** Asks for the old secret's grace period, then rotates: the new secret goes to `onRotated`. */
function RotateForm(props: { workspaceId: string; rootKey: RootKey; onRotated: (shown: Shown) => void; onCancel: () => void }) {
  const [grace, setGrace] = useState(String(86_400_000));
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      const res = await dashboard.rotateRootKey({ workspaceId: props.workspaceId, keyId: props.rootKey.keyId, gracePeriodMs: BigInt(grace) });
      props.onRotated({
        title: `The new secret of ${labelOf(props.rootKey)}`,
        rootKey: res.rootKey,
        note:
          grace === "0"
            ? `The old secret (${props.rootKey.start}…) was revoked.`
            : `The old secret (${props.rootKey.start}…) keeps working until ${when(res.previousExpires)} UTC.`,
      });
    });
  };
  return (
    <form onSubmit={submit} class="inline" aria-label={`Rotate ${labelOf(props.rootKey)}`}>
      <Field label="Grace period">
        <select value={grace} onChange={(e) => setGrace(e.currentTarget.value)}>
          {GRACE_PERIODS.map((g) => (
            <option key={g.ms} value={String(g.ms)}>
              {g.label}
            </option>
          ))}
        </select>
      </Field>
      <SubmitButton busy={action.busy} label="Rotate now" busyLabel="Rotating…" />
      <button type="button" onClick={props.onCancel}>
        Cancel
      </button>
      {action.error && <ErrorNote message={action.error} />}
    </form>
  );
}

/** Disable or Enable, saying so while it saves. */
function ToggleButton({ workspaceId, rootKey, onDone }: { workspaceId: string; rootKey: RootKey; onDone: () => void }) {
  const action = useAction();
  const toggle = () => action.run(() => dashboard.updateRootKey({ workspaceId, keyId: rootKey.keyId, enabled: !rootKey.enabled })).then((ok) => ok && onDone());
  return (
    <>
      <button type="button" disabled={action.busy} onClick={() => void toggle()}>
        {action.busy ? "Saving…" : rootKey.enabled ? "Disable" : "Enable"}
      </button>
      {action.error && <ErrorNote message={action.error} />}
    </>
  );
}

/** A time as `when` writes it, wrapping only between the date and the time of day (not at the date's hyphens). */
function Stamp({ ms }: { ms: bigint }) {
  const [date, time = ""] = when(ms).split(" ");
  return (
    <>
      <span class="nowrap">{date}</span>
      {time !== "" && " "}
      {time !== "" && <span class="nowrap">{time}</span>}
    </>
  );
}

function Expiry({ expires }: { expires: bigint | undefined }) {
  if (expires === undefined) return <>Never</>;
  const past = Number(expires) <= Date.now();
  return (
    <>
      <Stamp ms={expires} />
      {past && <strong class="expired"> (expired)</strong>}
    </>
  );
}

export function RootKeysPage({ workspaceId }: { workspaceId: string }) {
  const list = useLoad(async () => (await dashboard.listRootKeys({ workspaceId })).rootKeys, [workspaceId]);
  const [name, setName] = useState("");
  const [perms, setPerms] = useState<Set<string>>(new Set());
  const [extra, setExtra] = useState("");
  const [expires, setExpires] = useState("");
  const [shown, setShown] = useState<Shown>();
  const [editing, setEditing] = useState<string>();
  const [rotating, setRotating] = useState<string>();
  const create = useAction();
  const permissions = [...perms, ...splitGrants(extra)];
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      const at = fromLocalInput(expires);
      const res = await dashboard.createRootKey({ workspaceId, name, permissions, ...(at === undefined ? {} : { expires: BigInt(at) }) });
      setShown({ title: "Your new root key", rootKey: res.rootKey });
      setName("");
      setPerms(new Set());
      setExtra("");
      setExpires("");
      list.reload();
    });
  };
  return (
    <section>
      <h1>Root keys</h1>
      {shown !== undefined && <ShownKey shown={shown} onDone={() => setShown(undefined)} />}
      <ListState loaded={list} empty="No root keys in this workspace yet.">
        {(items) => (
          <Table
            columns={["Name", "Starts with", "Status", "Permissions", "Expires (UTC)", "Created (UTC)", "Last used (UTC)"]}
            items={items}
            rowKey={(k) => k.keyId}
            cells={(k) => (
              <>
                <td>
                  {k.name || <em>unnamed</em>}
                  <br />
                  <small>
                    <code class="id" data-testid="root-key-id">
                      {k.keyId}
                    </code>
                  </small>
                </td>
                <CodeCell>{k.start}…</CodeCell>
                <td data-testid="root-key-status">{k.enabled ? "Enabled" : "Disabled"}</td>
                <td class="perms">
                  {editing === k.keyId ? (
                    <EditPermissions
                      workspaceId={workspaceId}
                      rootKey={k}
                      onDone={() => {
                        setEditing(undefined);
                        list.reload();
                      }}
                    />
                  ) : (
                    k.permissions.join(", ")
                  )}
                </td>
                <td data-testid="root-key-expires">
                  <Expiry expires={k.expires} />
                </td>
                <td>
                  <Stamp ms={k.createdAt} />
                </td>
                <td data-testid="root-key-last-used">{k.lastUsedAt === undefined ? "Never" : <Stamp ms={k.lastUsedAt} />}</td>
              </>
            )}
            actions={(k) =>
              rotating === k.keyId ? (
                <RotateForm
                  workspaceId={workspaceId}
                  rootKey={k}
                  onCancel={() => setRotating(undefined)}
                  onRotated={(s) => {
                    setRotating(undefined);
                    setShown(s);
                    list.reload();
                  }}
                />
              ) : (
                <div class="key-actions">
                  <ToggleButton workspaceId={workspaceId} rootKey={k} onDone={list.reload} />
                  <button type="button" onClick={() => setRotating(k.keyId)}>
                    Rotate
                  </button>
                  {editing !== k.keyId && (
                    <button type="button" onClick={() => setEditing(k.keyId)}>
                      Edit permissions
                    </button>
                  )}
                  <ConfirmButton
                    label="Revoke"
                    question={`Revoke ${labelOf(k)}? It stops working at once.`}
                    confirm="Yes, revoke"
                    onConfirm={async () => {
                      await dashboard.revokeRootKey({ workspaceId, keyId: k.keyId });
                      list.reload();
                    }}
                  />
                </div>
              )
            }
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
        <Field label="Expires (optional)" hint="In your local time; empty: never. The list shows times in UTC.">
          <input type="datetime-local" value={expires} onInput={(e) => setExpires(e.currentTarget.value)} />
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
