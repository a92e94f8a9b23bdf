// How the dashboard talks to keyhold: sign-in, session and sign-out as JSON under
// /dashboard/api/, everything else through the generated Connect clients, with the
// session cookie, the CSRF token and the chosen workspace on every call.

import type { DescService } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { DashboardService } from "../../gen/keyhold/dashboard/v1/dashboard_service_pb.js";
import { ApisService } from "../../gen/keyhold/v2/apis_service_pb.js";
import { IdentitiesService } from "../../gen/keyhold/v2/identities_service_pb.js";
import { KeysService } from "../../gen/keyhold/v2/keys_service_pb.js";
import { RatelimitService } from "../../gen/keyhold/v2/ratelimit_service_pb.js";

export interface Workspace {
  id: string;
  name: string;
}

export interface Session {
  operator: { id: string; email: string };
  workspaces: Workspace[];
  csrfToken: string;
}

const WORKSPACE_KEY = "keyhold.workspace";

/** What every call needs besides the cookie; set on sign-in and workspace switch. */
const context = { csrf: "", workspace: localStorage.getItem(WORKSPACE_KEY) ?? "" };

export const currentWorkspace = (): string => context.workspace;

export function setWorkspace(id: string): void {
  context.workspace = id;
  if (id === "") localStorage.removeItem(WORKSPACE_KEY);
  else localStorage.setItem(WORKSPACE_KEY, id);
}

let signedOut = (): void => {};
/** Called when a call finds the session gone (expired, or signed out elsewhere). */
export const onSignedOut = (f: () => void): void => {
  signedOut = f;
};

const addHeaders: Interceptor = (next) => async (req) => {
  req.header.set("x-csrf-token", context.csrf);
  if (context.workspace !== "") req.header.set("x-keyhold-workspace", context.workspace);
  try {
    return await next(req);
  } catch (err) {
    if (err instanceof ConnectError && err.code === Code.Unauthenticated) signedOut();
    throw err;
  }
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: false,
  fetch: (input, init) => fetch(input, { ...init, credentials: "same-origin" }),
  interceptors: [addHeaders],
});

const client = <T extends DescService>(service: T): Client<T> => createClient(service, transport);

export const dashboard = client(DashboardService);
export const apis = client(ApisService);
export const keys = client(KeysService);
export const identities = client(IdentitiesService);
export const ratelimit = client(RatelimitService);

/** The message of a failed call, for people. */
export function messageOf(err: unknown): string {
  if (err instanceof ConnectError) return err.rawMessage;
  return err instanceof Error ? err.message : String(err);
}

async function json<T>(res: Response): Promise<T> {
  const body = (await res.json().catch(() => undefined)) as { error?: { detail?: string } } | undefined;
  if (!res.ok) throw new Error(body?.error?.detail ?? `HTTP ${res.status}`);
  return body as T;
}

function remember(s: Session): Session {
  context.csrf = s.csrfToken;
  if (!s.workspaces.some((w) => w.id === context.workspace)) setWorkspace(s.workspaces[0]?.id ?? "");
  return s;
}

/** The current session, or undefined when signed out. */
export async function loadSession(): Promise<Session | undefined> {
  const res = await fetch("/dashboard/api/session", { credentials: "same-origin" });
  if (res.status === 401) {
    // Read to the end, so the browser does not abort the response later.
    await res.text();
    return undefined;
  }
  return remember(await json<Session>(res));
}

export async function signIn(email: string, password: string): Promise<Session> {
  const res = await fetch("/dashboard/api/sign-in", {
    method: "POST",
    credentials: "same-origin",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email, password }),
  });
  return remember(await json<Session>(res));
}

export async function signOut(): Promise<void> {
  await json(await fetch("/dashboard/api/sign-out", { method: "POST", credentials: "same-origin", headers: { "x-csrf-token": context.csrf } }));
  context.csrf = "";
}
