// The audit log: the workspace's records newest first, filtered by time range,
// actor, action and resource, one page at a time ("Load more" follows the cursor).
import { useState } from "preact/hooks";
import type { ListAuditLogsResponse } from "../../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import type { AuditLog } from "../../../gen/keyhold/v2/audit_logs_service_pb.js";
import { AUDIT_ACTIONS } from "../../../src/domain/audit/actions.js";
import { dashboard } from "../api.js";
import { ErrorNote, Field, type FormEvent, fromLocalInput, ListState, type Loaded, Table, useAction, useLoad, when } from "../ui.js";

const PAGE_SIZES = ["10", "25", "50", "100"];

/** The filters as typed: times are `datetime-local` values, empty means "any". */
interface Filters {
  from: string;
  to: string;
  actorId: string;
  action: string;
  resourceId: string;
  pageSize: string;
}

const NO_FILTERS: Filters = { from: "", to: "", actorId: "", action: "", resourceId: "", pageSize: "50" };

const filtered = (f: Filters): boolean => f.from !== "" || f.to !== "" || f.actorId.trim() !== "" || f.action !== "" || f.resourceId.trim() !== "";

function listPage(workspaceId: string, f: Filters, cursor?: string): Promise<ListAuditLogsResponse> {
  const start = fromLocalInput(f.from);
  // The input stops at minutes: "to 10:05" includes what happened during 10:05.
  const end = fromLocalInput(f.to);
  const actorId = f.actorId.trim();
  const resourceId = f.resourceId.trim();
  return dashboard.listAuditLogs({
    workspaceId,
    ...(start === undefined ? {} : { start: BigInt(start) }),
    ...(end === undefined ? {} : { end: BigInt(end + 59_999) }),
    ...(actorId === "" ? {} : { actorId }),
    actions: f.action === "" ? [] : [f.action],
    ...(resourceId === "" ? {} : { resourceId }),
    limit: Number(f.pageSize),
    ...(cursor === undefined ? {} : { cursor }),
  });
}

/** The pages after the first, tied to the first page they follow (a new first page drops them). */
interface More {
  after: ListAuditLogsResponse;
  logs: AuditLog[];
  cursor: string | undefined;
}

function FilterForm({ value, onApply }: { value: Filters; onApply: (f: Filters) => void }) {
  const [draft, setDraft] = useState(value);
  const set = (part: Partial<Filters>) => setDraft({ ...draft, ...part });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    onApply(draft);
  };
  return (
    // biome-ignore lint/a11y/useSemanticElements: <search> is not in every browser the dashboard supports; the role names the landmark
    <form onSubmit={submit} class="inline filters" role="search" aria-label="Filter the audit log">
      <Field label="From" hint="Your local time; the table shows UTC">
        <input type="datetime-local" value={draft.from} onInput={(e) => set({ from: e.currentTarget.value })} />
      </Field>
      <Field label="To">
        <input type="datetime-local" value={draft.to} onInput={(e) => set({ to: e.currentTarget.value })} />
      </Field>
      <Field label="Actor id">
        <input value={draft.actorId} placeholder="op_… or key_…" onInput={(e) => set({ actorId: e.currentTarget.value })} />
      </Field>
      <Field label="Action">
        <select value={draft.action} onChange={(e) => set({ action: e.currentTarget.value })}>
          <option value="">All actions</option>
          {AUDIT_ACTIONS.map((a) => (
            <option key={a} value={a}>
              {a}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Resource id">
        <input value={draft.resourceId} placeholder="key_…, api_…" onInput={(e) => set({ resourceId: e.currentTarget.value })} />
      </Field>
      <Field label="Per page">
        <select value={draft.pageSize} onChange={(e) => set({ pageSize: e.currentTarget.value })}>
          {PAGE_SIZES.map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </Field>
      <button type="submit" class="primary">
        Apply filters
      </button>
      <button
        type="button"
        onClick={() => {
          setDraft(NO_FILTERS);
          onApply(NO_FILTERS);
        }}
      >
        Clear filters
      </button>
    </form>
  );
}

export function AuditPage({ workspaceId }: { workspaceId: string }) {
  const [applied, setApplied] = useState<Filters>(NO_FILTERS);
  const first = useLoad(() => listPage(workspaceId, applied), [workspaceId, applied]);
  const [more, setMore] = useState<More>();
  const loadMore = useAction();
  const page = first.data;
  const extra = more !== undefined && more.after === page ? more : undefined;
  const cursor = extra === undefined ? page?.cursor : extra.cursor;
  const loaded: Loaded<AuditLog[]> = { ...first, data: page === undefined ? undefined : [...page.logs, ...(extra?.logs ?? [])] };
  const next = () => {
    if (page === undefined || cursor === undefined) return;
    void loadMore.run(async () => {
      const res = await listPage(workspaceId, applied, cursor);
      setMore({ after: page, logs: [...(extra?.logs ?? []), ...res.logs], cursor: res.cursor });
    });
  };
  return (
    <section>
      <h1>Audit log</h1>
      <p class="hint">Every change to this workspace, by whom and from where, newest first.</p>
      <FilterForm value={applied} onApply={setApplied} />
      <ListState loaded={loaded} empty={filtered(applied) ? "No audit records match these filters." : "No audit records in this workspace yet."}>
        {(logs) => (
          <div class="audit">
            <Table
              columns={["Time (UTC)", "Actor", "Action", "Resources", "Description", "Request id", "Address"]}
              items={logs}
              rowKey={(l) => l.id}
              cells={(l) => (
                <>
                  <td class="nowrap">{when(l.time)}</td>
                  <td>
                    {l.actor?.type ?? "—"}
                    <br />
                    <code>{l.actor?.id}</code>
                  </td>
                  <td class="action">
                    <code>{l.action}</code>
                  </td>
                  <td>
                    {l.resources.map((r) => (
                      <div key={`${r.type}:${r.id}`}>
                        {r.type} <code>{r.id}</code>
                      </div>
                    ))}
                  </td>
                  <td>{l.description}</td>
                  <td>{l.requestId ? <code>{l.requestId}</code> : "—"}</td>
                  <td title={l.userAgent || undefined}>{l.remoteAddress || "—"}</td>
                </>
              )}
            />
          </div>
        )}
      </ListState>
      {loaded.data !== undefined && loaded.data.length > 0 && (
        <div class="row more">
          <span class="hint" data-testid="audit-count">
            {cursor === undefined ? "Showing all " : "Showing the newest "}
            {loaded.data.length} record{loaded.data.length === 1 ? "" : "s"}
            {filtered(applied) ? " that match" : ""}.
          </span>
          {cursor !== undefined && (
            <button type="button" disabled={loadMore.busy} onClick={next}>
              {loadMore.busy ? "Loading…" : "Load more"}
            </button>
          )}
        </div>
      )}
      {loadMore.error && <ErrorNote message={loadMore.error} />}
    </section>
  );
}
