// One key: its settings, credits, rate limits, roles, permissions and identity;
// disable/enable, update credits, delete (asked first), and its usage.
import { useState } from "preact/hooks";
import type { KeyResponseData } from "../../../gen/keyhold/v2/resources_pb.js";
import { keys } from "../api.js";
import { ConfirmButton, ErrorNote, Field, type FormEvent, Link, navigate, Spinner, useAction, useLoad, when } from "../ui.js";
import { UsagePanel } from "../usage.js";

const list = (items: string[]) => (items.length === 0 ? "—" : items.join(", "));

function Details({ k }: { k: KeyResponseData }) {
  const refill = k.credits?.refill;
  return (
    <dl class="details">
      <dt>Status</dt>
      <dd data-testid="key-status">{k.enabled ? "Enabled" : "Disabled"}</dd>
      <dt>Name</dt>
      <dd>{k.name ?? "—"}</dd>
      <dt>Starts with</dt>
      <dd>
        <code>{k.start}…</code>
      </dd>
      <dt>Created</dt>
      <dd>{when(k.createdAt)}</dd>
      <dt>Updated</dt>
      <dd>{when(k.updatedAt)}</dd>
      <dt>Expires</dt>
      <dd>{k.expires === undefined ? "Never" : when(k.expires)}</dd>
      <dt>Credits</dt>
      <dd data-testid="key-credits">
        {k.credits?.remaining === undefined ? "Unlimited" : String(k.credits.remaining)}
        {refill && ` (refill ${refill.amount} ${refill.interval}${refill.refillDay === undefined ? "" : ` on day ${refill.refillDay}`})`}
      </dd>
      <dt>Rate limits</dt>
      <dd>
        {k.ratelimits.length === 0
          ? "—"
          : k.ratelimits.map((r) => (
              <div key={r.id}>
                <code>{r.name}</code>: {String(r.limit)} per {String(r.duration)} ms{r.autoApply ? " (auto-applied)" : ""}
              </div>
            ))}
      </dd>
      <dt>Roles</dt>
      <dd>{list(k.roles)}</dd>
      <dt>Permissions</dt>
      <dd>{list(k.permissions)}</dd>
      <dt>Identity</dt>
      <dd>
        {k.identity === undefined ? (
          "—"
        ) : (
          <>
            <code>{k.identity.externalId}</code> ({k.identity.id})
          </>
        )}
      </dd>
      <dt>Meta</dt>
      <dd>{k.meta === undefined ? "—" : <code>{JSON.stringify(k.meta)}</code>}</dd>
    </dl>
  );
}

function Credits({ keyId, onDone }: { keyId: string; onDone: () => void }) {
  const [operation, setOperation] = useState("set");
  const [value, setValue] = useState("");
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => {
      // "set" with no value makes the key unlimited.
      await keys.updateCredits({ keyId, operation, ...(value.trim() === "" ? {} : { value: BigInt(value.trim()) }) });
      setValue("");
      onDone();
    });
  };
  return (
    <form onSubmit={submit} class="inline">
      <Field label="Credits operation">
        <select value={operation} onChange={(e) => setOperation(e.currentTarget.value)}>
          <option value="set">Set to</option>
          <option value="increment">Add</option>
          <option value="decrement">Take away</option>
        </select>
      </Field>
      <Field label="Credits" hint="Empty with “Set to”: unlimited">
        <input inputMode="numeric" pattern="[0-9]*" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={action.busy}>
        {action.busy ? "Updating…" : "Update credits"}
      </button>
      {action.error && <ErrorNote message={action.error} />}
    </form>
  );
}

export function KeyPage({ workspaceId, apiId, keyId }: { workspaceId: string; apiId: string; keyId: string }) {
  const key = useLoad(async () => (await keys.getKey({ keyId })).key, [keyId]);
  const toggle = useAction();
  const k = key.data;
  return (
    <section>
      <p class="crumbs">
        <Link to="/apis">APIs</Link> / <Link to={`/apis/${apiId}`}>{apiId}</Link> /
      </p>
      <h1>
        Key <code>{keyId}</code>
      </h1>
      {key.error !== undefined ? (
        <ErrorNote message={key.error} retry={key.reload} />
      ) : k === undefined ? (
        <Spinner />
      ) : (
        <>
          {key.loading && <Spinner label="Refreshing…" />}
          <div class="row">
            <button
              type="button"
              disabled={toggle.busy}
              onClick={() => void toggle.run(() => keys.updateKey({ keyId, enabled: !k.enabled })).then((ok) => ok && key.reload())}
            >
              {toggle.busy ? "Saving…" : k.enabled ? "Disable key" : "Enable key"}
            </button>
            <ConfirmButton
              label="Delete key"
              question="Delete this key? Verifications of it fail from now on."
              confirm="Yes, delete the key"
              onConfirm={async () => {
                await keys.deleteKey({ keyId });
                navigate(`/apis/${apiId}`);
              }}
            />
          </div>
          {toggle.error && <ErrorNote message={toggle.error} />}
          <Details k={k} />
          <h2>Credits</h2>
          <Credits keyId={keyId} onDone={key.reload} />
        </>
      )}
      <UsagePanel workspaceId={workspaceId} apiId={apiId} keyId={keyId} />
    </section>
  );
}
