// Identities: list (searched by the server), create, edit meta and rate limits,
// delete (asked first).
import type { JsonObject } from "@bufbuild/protobuf";
import { useState } from "preact/hooks";
import type { Identity } from "../../../gen/keyhold/v2/resources_pb.js";
import { identities } from "../api.js";
import { CodeCell, DeleteButton, ErrorNote, Field, type FormEvent, ListState, SubmitButton, Table, useAction, useLoad } from "../ui.js";

const PAGE = 100;

/** Meta as typed: empty for none, else a JSON object. */
function parseMeta(text: string): JsonObject | undefined {
  if (text.trim() === "") return undefined;
  const v: unknown = JSON.parse(text);
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error('Meta must be a JSON object, such as {"plan": "pro"}.');
  return v as JsonObject;
}

function EditMeta({ identity, onDone }: { identity: Identity; onDone: () => void }) {
  const [text, setText] = useState(identity.meta === undefined ? "" : JSON.stringify(identity.meta));
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      await identities.updateIdentity({ identity: identity.id, meta: parseMeta(text) ?? {} });
      onDone();
    });
  };
  return (
    <form onSubmit={submit} class="inline">
      <Field label={`Meta of ${identity.externalId}`}>
        <input value={text} onInput={(e) => setText(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={action.busy}>
        {action.busy ? "Saving…" : "Save meta"}
      </button>
      <button type="button" onClick={onDone}>
        Cancel
      </button>
      {action.error && <ErrorNote message={action.error} />}
    </form>
  );
}

/** A rate-limit row as typed: numbers stay text until saved. */
interface LimitRow {
  name: string;
  limit: string;
  duration: string;
  autoApply: boolean;
}

function EditRatelimits({ identity, onDone }: { identity: Identity; onDone: () => void }) {
  const [rows, setRows] = useState<LimitRow[]>(
    identity.ratelimits.map((r) => ({ name: r.name, limit: String(r.limit), duration: String(r.duration), autoApply: r.autoApply })),
  );
  const action = useAction();
  const change = (at: number, part: Partial<LimitRow>) => setRows(rows.map((r, i) => (i === at ? { ...r, ...part } : r)));
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      // The list replaces the identity's limits whole; an empty list removes them all.
      const ratelimits = rows.map((r) => ({ name: r.name, limit: BigInt(r.limit), duration: BigInt(r.duration), autoApply: r.autoApply }));
      await identities.updateIdentity({ identity: identity.id, ratelimits, setRatelimits: true });
      onDone();
    });
  };
  return (
    <form onSubmit={submit} aria-label={`Rate limits of ${identity.externalId}`}>
      {rows.length === 0 && <p class="empty">No rate limits.</p>}
      {rows.map((r, i) => (
        // Rows have no id until saved: their index is their key.
        <div class="row" key={i}>
          <input required aria-label={`Name of limit ${i + 1}`} placeholder="name" value={r.name} onInput={(e) => change(i, { name: e.currentTarget.value })} />
          <input
            required
            aria-label={`Limit of limit ${i + 1}`}
            placeholder="limit"
            inputMode="numeric"
            pattern="[0-9]+"
            value={r.limit}
            onInput={(e) => change(i, { limit: e.currentTarget.value })}
          />
          <input
            required
            aria-label={`Duration (ms) of limit ${i + 1}`}
            placeholder="duration (ms)"
            inputMode="numeric"
            pattern="[0-9]+"
            value={r.duration}
            onInput={(e) => change(i, { duration: e.currentTarget.value })}
          />
          <label>
            <input
              type="checkbox"
              aria-label={`Auto-apply limit ${i + 1}`}
              checked={r.autoApply}
              onChange={(e) => change(i, { autoApply: e.currentTarget.checked })}
            />{" "}
            Auto-apply
          </label>
          <button type="button" aria-label={`Remove limit ${i + 1}`} onClick={() => setRows(rows.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <div class="row">
        <button type="button" onClick={() => setRows([...rows, { name: "", limit: "", duration: "60000", autoApply: false }])}>
          Add limit
        </button>
        <SubmitButton busy={action.busy} label="Save limits" busyLabel="Saving…" />
        <button type="button" onClick={onDone}>
          Cancel
        </button>
      </div>
      {action.error && <ErrorNote message={action.error} />}
    </form>
  );
}

export function IdentitiesPage({ workspaceId }: { workspaceId: string }) {
  const [search, setSearch] = useState("");
  const [query, setQuery] = useState("");
  const list = useLoad(
    async () => (await identities.listIdentities({ limit: PAGE, ...(query === "" ? {} : { search: query }) })).identities,
    [workspaceId, query],
  );
  const [editing, setEditing] = useState<string>();
  const [editingLimits, setEditingLimits] = useState<string>();
  const [externalId, setExternalId] = useState("");
  const [meta, setMeta] = useState("");
  const create = useAction();
  const submitSearch = (e: FormEvent) => {
    e.preventDefault();
    setQuery(search.trim());
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      const m = parseMeta(meta);
      await identities.createIdentity({ externalId, ...(m === undefined ? {} : { meta: m }) });
      setExternalId("");
      setMeta("");
      list.reload();
    });
  };
  return (
    <section>
      <h1>Identities</h1>
      {/* biome-ignore lint/a11y/useSemanticElements: <search> is not in every browser the dashboard supports; the role names the landmark */}
      <form onSubmit={submitSearch} class="inline" role="search">
        <Field label="Search identities">
          <input type="search" value={search} onInput={(e) => setSearch(e.currentTarget.value)} />
        </Field>
        <button type="submit">Search</button>
      </form>
      <ListState loaded={list} empty={query === "" ? "No identities in this workspace yet." : `No identity matches “${query}”.`}>
        {(items) => (
          <Table
            columns={["External id", "Id", "Meta", "Rate limits"]}
            items={items}
            rowKey={(i) => i.id}
            cells={(i) => (
              <>
                <td>{i.externalId}</td>
                <CodeCell>{i.id}</CodeCell>
                <td>
                  {editing === i.id ? (
                    <EditMeta
                      identity={i}
                      onDone={() => {
                        setEditing(undefined);
                        list.reload();
                      }}
                    />
                  ) : (
                    <code>{i.meta === undefined ? "—" : JSON.stringify(i.meta)}</code>
                  )}
                </td>
                <td>
                  {editingLimits === i.id ? (
                    <EditRatelimits
                      identity={i}
                      onDone={() => {
                        setEditingLimits(undefined);
                        list.reload();
                      }}
                    />
                  ) : i.ratelimits.length === 0 ? (
                    "—"
                  ) : (
                    i.ratelimits.map((r) => `${r.name}: ${r.limit}/${r.duration} ms${r.autoApply ? " (auto)" : ""}`).join(", ")
                  )}
                </td>
              </>
            )}
            actions={(i) => (
              <div class="row">
                {editing !== i.id && (
                  <button type="button" onClick={() => setEditing(i.id)}>
                    Edit meta
                  </button>
                )}
                {editingLimits !== i.id && (
                  <button type="button" onClick={() => setEditingLimits(i.id)}>
                    Edit rate limits
                  </button>
                )}
                <DeleteButton
                  question={`Delete identity ${i.externalId}?`}
                  onConfirm={async () => {
                    await identities.deleteIdentity({ identity: i.id });
                    list.reload();
                  }}
                />
              </div>
            )}
          />
        )}
      </ListState>
      <h2>Create an identity</h2>
      <form onSubmit={submit} class="inline">
        <Field label="External id">
          <input required value={externalId} onInput={(e) => setExternalId(e.currentTarget.value)} />
        </Field>
        <Field label="Meta (optional JSON object)">
          <input value={meta} onInput={(e) => setMeta(e.currentTarget.value)} />
        </Field>
        <SubmitButton busy={create.busy} label="Create identity" busyLabel="Creating…" />
      </form>
      {create.error && <ErrorNote message={create.error} />}
    </section>
  );
}
