// The dashboard app: the session decides between the sign-in page and the pages
// of the chosen workspace; paths under /dashboard/ pick the page.
import { render } from "preact";
import { useState } from "preact/hooks";
import { currentWorkspace, loadSession, messageOf, onSignedOut, type Session, setWorkspace, signOut } from "./api.js";
import { ApiPage, ApisPage } from "./pages/apis.js";
import { AuditPage } from "./pages/audit.js";
import { IdentitiesPage } from "./pages/identities.js";
import { KeyPage } from "./pages/key.js";
import { RatelimitsPage } from "./pages/ratelimits.js";
import { RootKeysPage } from "./pages/root-keys.js";
import { SignInPage } from "./pages/sign-in.js";
import { WorkspacesPage } from "./pages/workspaces.js";
import { ErrorNote, Link, navigate, Spinner, useLoad, usePath } from "./ui.js";
import "./style.css";

const NotFound = () => (
  <section>
    <h1>Not found</h1>
    <p>
      No page at this address. <Link to="/apis">Go to the APIs</Link>.
    </p>
  </section>
);

/** The path's segments, decoded; undefined for a malformed escape (a mangled link), which decodeURIComponent throws on. */
function segmentsOf(path: string): string[] | undefined {
  try {
    return path
      .split("/")
      .filter((p) => p !== "")
      .map(decodeURIComponent);
  } catch {
    return undefined;
  }
}

function Page({ path, onWorkspaces }: { path: string; session: Session; onWorkspaces: (s: Session["workspaces"]) => void }) {
  const parts = segmentsOf(path);
  if (parts === undefined) return <NotFound />;
  const ws = currentWorkspace();
  if (parts[0] === "workspaces" || ws === "") return <WorkspacesPage onChange={onWorkspaces} />;
  if (parts[0] === "root-keys") return <RootKeysPage workspaceId={ws} />;
  if (parts[0] === "identities") return <IdentitiesPage workspaceId={ws} />;
  if (parts[0] === "audit") return <AuditPage workspaceId={ws} />;
  if (parts[0] === "ratelimits") return <RatelimitsPage workspaceId={ws} namespace={parts[1]} />;
  if (parts[0] === "apis" && parts[1] !== undefined && parts[2] === "keys" && parts[3] !== undefined)
    return <KeyPage workspaceId={ws} apiId={parts[1]} keyId={parts[3]} />;
  if (parts[0] === "apis" && parts[1] !== undefined) return <ApiPage workspaceId={ws} apiId={parts[1]} />;
  if (parts[0] === undefined || parts[0] === "apis") return <ApisPage workspaceId={ws} />;
  return <NotFound />;
}

function Shell({ session, onSignedOut, onWorkspaces }: { session: Session; onSignedOut: () => void; onWorkspaces: (s: Session["workspaces"]) => void }) {
  const path = usePath();
  const [, rerender] = useState(0);
  const [signOutError, setSignOutError] = useState<string>();
  const ws = currentWorkspace();
  const switchTo = (id: string) => {
    setWorkspace(id);
    rerender((n) => n + 1);
    navigate("/apis");
  };
  return (
    <>
      <header>
        <Link to="/apis" class="brand">
          keyhold
        </Link>
        <nav aria-label="Main">
          <Link to="/apis">APIs</Link>
          <Link to="/root-keys">Root keys</Link>
          <Link to="/identities">Identities</Link>
          <Link to="/ratelimits">Rate limits</Link>
          <Link to="/audit">Audit log</Link>
          <Link to="/workspaces">Workspaces</Link>
        </nav>
        <label class="switcher">
          <span>Workspace</span>
          <select value={ws} onChange={(e) => switchTo(e.currentTarget.value)}>
            {ws === "" && <option value="">(none)</option>}
            {session.workspaces.map((w) => (
              <option key={w.id} value={w.id}>
                {w.name}
              </option>
            ))}
          </select>
        </label>
        <span class="who">{session.operator.email}</span>
        {/* Shown signed out only once the server has ended the session. */}
        <button type="button" onClick={() => signOut().then(onSignedOut, (err) => setSignOutError(`Sign-out failed: ${messageOf(err)}`))}>
          Sign out
        </button>
      </header>
      {signOutError !== undefined && <ErrorNote message={signOutError} />}
      <main key={ws}>
        <Page path={path} session={session} onWorkspaces={onWorkspaces} />
      </main>
    </>
  );
}

function App() {
  const loaded = useLoad(loadSession, []);
  const [session, setSession] = useState<Session | null>();
  onSignedOut(() => setSession(null));
  const current = session === undefined ? loaded.data : (session ?? undefined);
  if (loaded.error !== undefined) return <ErrorNote message={loaded.error} retry={loaded.reload} />;
  if (loaded.loading && session === undefined) return <Spinner label="Opening the dashboard…" />;
  if (current === undefined) return <SignInPage onSignedIn={setSession} />;
  return <Shell session={current} onSignedOut={() => setSession(null)} onWorkspaces={(workspaces) => setSession({ ...current, workspaces })} />;
}

render(<App />, document.getElementById("app") as HTMLElement);
