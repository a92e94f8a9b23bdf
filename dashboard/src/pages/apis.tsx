// APIs: the workspace's list, create, delete (asked first); one API's keys, a
// page at a time, with a search over all of them on the server, and its usage.
import { useEffect, useState } from "preact/hooks";
import type { KeyResponseData } from "../../../gen/keyhold/v2/resources_pb.js";
import { apis, dashboard } from "../api.js";
import { CodeCell, CreateForm, DeleteButton, ErrorNote, Field, Link, ListState, navigate, Spinner, Table, useAction, useLoad, when } from "../ui.js";
import { UsagePanel } from "../usage.js";

export function ApisPage({ workspaceId }: { workspaceId: string }) {
  const list = useLoad(async () => (await dashboard.listApis({ workspaceId })).apis, [workspaceId]);
  return (
    <section>
      <h1>APIs</h1>
      <ListState loaded={list} empty="No APIs in this workspace yet: create one below.">
        {(items) => (
          <Table
            columns={["Name", "Id", "Created"]}
            items={items}
            rowKey={(a) => a.id}
            cells={(a) => (
              <>
                <td>
                  <Link to={`/apis/${a.id}`}>{a.name}</Link>
                </td>
                <CodeCell>{a.id}</CodeCell>
                <td>{when(a.createdAt)}</td>
              </>
            )}
            actions={(a) => (
              <DeleteButton
                question={`Delete ${a.name} and all its keys?`}
                onConfirm={async () => {
                  await apis.deleteApi({ apiId: a.id });
                  list.reload();
                }}
              />
            )}
          />
        )}
      </ListState>
      <CreateForm
        title="Create an API"
        label="API name"
        button="Create API"
        minLength={3}
        maxLength={255}
        onCreate={async (name) => {
          await apis.createApi({ name });
          list.reload();
        }}
      />
    </section>
  );
}

const PAGE = 100;

/** Keys of an API, a page at a time; `more` loads the next page. */
function useKeys(apiId: string) {
  const [extra, setExtra] = useState<{ keys: KeyResponseData[]; cursor: string | undefined }>({ keys: [], cursor: undefined });
  const first = useLoad(async () => {
    const res = await apis.listKeys({ apiId, limit: PAGE });
    setExtra({ keys: [], cursor: res.pagination?.hasMore ? res.pagination.cursor : undefined });
    return res.keys;
  }, [apiId]);
  const more = useAction();
  const loadMore = () =>
    more.run(async () => {
      const res = await apis.listKeys({ apiId, limit: PAGE, ...(extra.cursor === undefined ? {} : { cursor: extra.cursor }) });
      setExtra((x) => ({ keys: [...x.keys, ...res.keys], cursor: res.pagination?.hasMore ? res.pagination.cursor : undefined }));
    });
  const keys = first.data === undefined ? undefined : [...first.data, ...extra.keys];
  return { loaded: { ...first, data: keys }, hasMore: extra.cursor !== undefined, loadMore, more };
}

/** How long typing must pause before the search is sent. */
const SEARCH_PAUSE_MS = 250;
const SEARCH_LIMIT = 50;

/** The API's keys matching `query` (all of them, searched by the server), once typing pauses. */
function useKeySearch(workspaceId: string, apiId: string, query: string) {
  const [sent, setSent] = useState(query);
  useEffect(() => {
    const t = setTimeout(() => setSent(query), SEARCH_PAUSE_MS);
    return () => clearTimeout(t);
  }, [query]);
  const found = useLoad(
    async (): Promise<{ keys: KeyResponseData[]; hasMore: boolean }> =>
      sent === "" ? { keys: [], hasMore: false } : dashboard.searchKeys({ workspaceId, apiId, query: sent, limit: SEARCH_LIMIT }),
    [workspaceId, apiId, sent],
  );
  return { sent, found };
}

function KeyTable({ apiId, keys }: { apiId: string; keys: KeyResponseData[] }) {
  return (
    <Table
      columns={["Key", "Name", "External id", "Status", "Created"]}
      items={keys}
      rowKey={(k) => k.keyId}
      cells={(k) => (
        <>
          <td>
            <Link to={`/apis/${apiId}/keys/${k.keyId}`}>
              <code>{k.keyId}</code>
            </Link>{" "}
            <code class="muted">{k.start}…</code>
          </td>
          <td>{k.name ?? "—"}</td>
          <td>{k.identity?.externalId ?? "—"}</td>
          <td>{k.enabled ? "Enabled" : <strong>Disabled</strong>}</td>
          <td>{when(k.createdAt)}</td>
        </>
      )}
    />
  );
}

export function ApiPage({ workspaceId, apiId }: { workspaceId: string; apiId: string }) {
  const api = useLoad(() => apis.getApi({ apiId }), [apiId]);
  const keys = useKeys(apiId);
  const [query, setQuery] = useState("");
  const search = useKeySearch(workspaceId, apiId, query.trim());
  return (
    <section>
      <p class="crumbs">
        <Link to="/apis">APIs</Link> /
      </p>
      {api.error !== undefined ? <ErrorNote message={api.error} retry={api.reload} /> : api.data === undefined ? <Spinner /> : <h1>{api.data.name}</h1>}
      <p>
        <code>{apiId}</code>
      </p>
      <UsagePanel workspaceId={workspaceId} apiId={apiId} />
      <h2>Keys</h2>
      <Field label="Search keys" hint="By id, the first characters of the key (start), name or externalId, over all of this API's keys.">
        <input type="search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
      </Field>
      {query.trim() !== search.sent || (search.sent !== "" && search.found.loading) ? (
        // Until the answer for what is typed arrives: never the last query's matches under the new text.
        <Spinner label="Searching…" />
      ) : search.sent !== "" ? (
        <ListState loaded={{ ...search.found, data: search.found.data?.keys }} empty={`No key matches “${search.sent}”.`}>
          {(items) => (
            <>
              <KeyTable apiId={apiId} keys={items} />
              {search.found.data?.hasMore && <p class="hint">Only the first {SEARCH_LIMIT} matches are shown: narrow the search.</p>}
            </>
          )}
        </ListState>
      ) : (
        <>
          <ListState loaded={keys.loaded} empty="This API has no keys yet. Create them with a root key (keys.createKey).">
            {(items) => <KeyTable apiId={apiId} keys={items} />}
          </ListState>
          {keys.hasMore && (
            <button type="button" onClick={() => void keys.loadMore()} disabled={keys.more.busy}>
              {keys.more.busy ? "Loading…" : "Load more keys"}
            </button>
          )}
          {keys.more.error && <ErrorNote message={keys.more.error} />}
        </>
      )}
      <p>
        <button type="button" class="link" onClick={() => navigate("/apis")}>
          Back to the APIs
        </button>
      </p>
    </section>
  );
}
