// Workspaces: the operator's list, create one, switch (the choice is kept in localStorage).
import { currentWorkspace, dashboard, setWorkspace, type Workspace } from "../api.js";
import { CodeCell, CreateForm, ListState, navigate, Table, useLoad } from "../ui.js";

export function WorkspacesPage({ onChange }: { onChange: (all: Workspace[]) => void }) {
  const list = useLoad(async () => (await dashboard.listWorkspaces({})).workspaces.map((w) => ({ id: w.id, name: w.name })), []);
  const use = (id: string, all: Workspace[]) => {
    setWorkspace(id);
    onChange(all);
    navigate("/apis");
  };
  return (
    <section>
      <h1>Workspaces</h1>
      <ListState loaded={list} empty="You belong to no workspace yet: create one below.">
        {(items) => (
          <Table
            columns={["Name", "Id"]}
            items={items}
            rowKey={(w) => w.id}
            cells={(w) => (
              <>
                <td>{w.name}</td>
                <CodeCell>{w.id}</CodeCell>
              </>
            )}
            actions={(w) =>
              w.id === currentWorkspace() ? (
                <strong>Current</strong>
              ) : (
                <button type="button" onClick={() => use(w.id, items)}>
                  Switch to {w.name}
                </button>
              )
            }
          />
        )}
      </ListState>
      <CreateForm
        title="Create a workspace"
        label="Workspace name"
        button="Create workspace"
        maxLength={256}
        onCreate={async (name) => {
          const res = await dashboard.createWorkspace({ name });
          const all = (await dashboard.listWorkspaces({})).workspaces.map((w) => ({ id: w.id, name: w.name }));
          use(res.workspace?.id ?? "", all);
        }}
      />
    </section>
  );
}
