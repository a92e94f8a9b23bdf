// Rate-limit namespaces: list, create, delete (asked first); open one to list,
// set (create or change) and delete its overrides.
import { useState } from "preact/hooks";
import { dashboard, ratelimit } from "../api.js";
import {
  CodeCell,
  CreateForm,
  DeleteButton,
  ErrorNote,
  Field,
  type FormEvent,
  Link,
  ListState,
  navigate,
  SubmitButton,
  Table,
  useAction,
  useLoad,
  when,
} from "../ui.js";

const PAGE = 100;

function Overrides({ namespace }: { namespace: string }) {
  const list = useLoad(async () => (await ratelimit.listOverrides({ namespace, limit: PAGE })).overrides, [namespace]);
  const [identifier, setIdentifier] = useState("");
  const [limit, setLimit] = useState("");
  const [duration, setDuration] = useState("60000");
  const set = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void set.run(async () => {
      await ratelimit.setOverride({ namespace, identifier, limit: BigInt(limit), duration: BigInt(duration) });
      setIdentifier("");
      list.reload();
    });
  };
  return (
    <>
      <h2>
        Overrides in <code>{namespace}</code>
      </h2>
      <ListState loaded={list} empty="This namespace has no overrides.">
        {(items) => (
          <Table
            columns={["Identifier", "Limit", "Duration (ms)"]}
            items={items}
            rowKey={(o) => o.overrideId}
            cells={(o) => (
              <>
                <CodeCell>{o.identifier}</CodeCell>
                <td>{String(o.limit)}</td>
                <td>{String(o.duration)}</td>
              </>
            )}
            actions={(o) => (
              <DeleteButton
                question={`Delete the override for ${o.identifier}?`}
                onConfirm={async () => {
                  await ratelimit.deleteOverride({ namespace, identifier: o.identifier });
                  list.reload();
                }}
              />
            )}
          />
        )}
      </ListState>
      <h2>Set an override</h2>
      <form onSubmit={submit} class="inline">
        <Field label="Identifier" hint="Exact, or with * wildcards">
          <input required value={identifier} onInput={(e) => setIdentifier(e.currentTarget.value)} />
        </Field>
        <Field label="Limit">
          <input required inputMode="numeric" pattern="[0-9]+" value={limit} onInput={(e) => setLimit(e.currentTarget.value)} />
        </Field>
        <Field label="Duration (ms)">
          <input required inputMode="numeric" pattern="[0-9]+" value={duration} onInput={(e) => setDuration(e.currentTarget.value)} />
        </Field>
        <SubmitButton busy={set.busy} label="Set override" busyLabel="Saving…" />
      </form>
      {set.error && <ErrorNote message={set.error} />}
    </>
  );
}

function Namespaces({ workspaceId, open }: { workspaceId: string; open: string | undefined }) {
  const list = useLoad(async () => (await dashboard.listNamespaces({ workspaceId })).namespaces, [workspaceId]);
  return (
    <>
      <ListState loaded={list} empty="No rate-limit namespaces in this workspace yet.">
        {(items) => (
          <Table
            columns={["Name", "Id", "Created"]}
            items={items}
            rowKey={(n) => n.id}
            cells={(n) => (
              <>
                <td>
                  <Link to={`/ratelimits/${encodeURIComponent(n.name)}`}>{n.name}</Link>
                </td>
                <CodeCell>{n.id}</CodeCell>
                <td>{when(n.createdAt)}</td>
              </>
            )}
            actions={(n) => (
              <DeleteButton
                question={`Delete namespace ${n.name}? Its limits will stop working.`}
                onConfirm={async () => {
                  await dashboard.deleteNamespace({ workspaceId, namespaceId: n.id });
                  if (open === n.name || open === n.id) navigate("/ratelimits");
                  list.reload();
                }}
              />
            )}
          />
        )}
      </ListState>
      <CreateForm
        title="Create a namespace"
        label="Namespace name"
        button="Create namespace"
        maxLength={512}
        onCreate={async (name) => {
          await dashboard.createNamespace({ workspaceId, name });
          list.reload();
        }}
      />
    </>
  );
}

export function RatelimitsPage({ workspaceId, namespace }: { workspaceId: string; namespace: string | undefined }) {
  return (
    <section>
      <h1>Rate limits</h1>
      <Namespaces workspaceId={workspaceId} open={namespace} />
      {namespace === undefined ? (
        <p class="empty">Choose a namespace to see and set its overrides.</p>
      ) : (
        <Overrides key={`${workspaceId}|${namespace}`} namespace={namespace} />
      )}
    </section>
  );
}
