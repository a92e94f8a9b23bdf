// Small pieces shared by the pages: the router, loading a call's result, the
// loading/empty/error states of a list, a button that asks before it acts, a
// list's table and a one-field create form.
import type { ComponentChildren, JSX } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { messageOf } from "./api.js";

export const BASE = "/dashboard";

type Listener = () => void;
const listeners = new Set<Listener>();
addEventListener("popstate", () => {
  for (const l of listeners) l();
});

/** Goes to a dashboard path (`/apis`, ...) without reloading the page. */
export function navigate(to: string): void {
  history.pushState(null, "", `${BASE}${to}`);
  for (const l of listeners) l();
}

/** The current dashboard path, without the /dashboard prefix. */
export function usePath(): string {
  const read = () => location.pathname.replace(/^\/dashboard\/?/, "/");
  const [path, setPath] = useState(read);
  useEffect(() => {
    const l = () => setPath(read());
    listeners.add(l);
    return () => listeners.delete(l);
  }, []);
  return path;
}

export function Link(props: { to: string; children: ComponentChildren; class?: string }) {
  const onClick = (e: MouseEvent) => {
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
    e.preventDefault();
    navigate(props.to);
  };
  return (
    <a href={`${BASE}${props.to}`} onClick={onClick} class={props.class}>
      {props.children}
    </a>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload(): void;
}

/** Runs `load` now and whenever `deps` change or reload() is called. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: string | undefined; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const run = useRef(0);
  useEffect(() => {
    const mine = ++run.current;
    setState((s) => ({ ...s, loading: true, error: undefined }));
    load().then(
      (data) => mine === run.current && setState({ data, error: undefined, loading: false }),
      (err: unknown) => mine === run.current && setState({ data: undefined, error: messageOf(err), loading: false }),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

export const Spinner = ({ label = "Loading…" }: { label?: string }) => (
  <p class="loading" role="status">
    <span class="spinner" aria-hidden="true" />
    {label}
  </p>
);

export const ErrorNote = ({ message, retry }: { message: string; retry?: () => void }) => (
  <div class="error" role="alert">
    <span>{message}</span>
    {retry && (
      <button type="button" onClick={retry}>
        Try again
      </button>
    )}
  </div>
);

/** A list's three states around its items: loading (first load), error, empty. */
export function ListState<T>(props: { loaded: Loaded<T[]>; empty: string; children: (items: T[]) => ComponentChildren }) {
  const { data, error, loading, reload } = props.loaded;
  if (error !== undefined) return <ErrorNote message={error} retry={reload} />;
  if (data === undefined) return <Spinner />;
  return (
    <>
      {loading && <Spinner label="Refreshing…" />}
      {data.length === 0 ? <p class="empty">{props.empty}</p> : props.children(data)}
    </>
  );
}

/** Tracks one action: busy while it runs, its error after. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();
  const run = async (act: () => Promise<unknown>): Promise<boolean> => {
    setBusy(true);
    setError(undefined);
    try {
      await act();
      return true;
    } catch (err) {
      setError(messageOf(err));
      return false;
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

/** A button that asks "are you sure" in place: focus moves to the confirming button, and back on Cancel or Escape. */
export function ConfirmButton(props: { label: string; question: string; confirm: string; onConfirm: () => Promise<unknown>; class?: string }) {
  const [asking, setAsking] = useState(false);
  const action = useAction();
  const yes = useRef<HTMLButtonElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (wasAsking.current) trigger.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" ref={trigger} class={props.class ?? "danger"} onClick={() => setAsking(true)}>
        {props.label}
      </button>
    );
  }
  return (
    // biome-ignore lint/a11y/useSemanticElements: a <fieldset> inside a table row breaks its layout; the group only needs its label
    <span class="confirm" role="group" aria-label={props.question} onKeyDown={(e) => e.key === "Escape" && setAsking(false)}>
      <span>{props.question}</span>
      <button type="button" class="danger" ref={yes} disabled={action.busy} onClick={() => action.run(props.onConfirm).then((ok) => ok && setAsking(false))}>
        {action.busy ? "Working…" : props.confirm}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
      {action.error && <ErrorNote message={action.error} />}
    </span>
  );
}

export const Field = (props: { label: string; children: ComponentChildren; hint?: string }) => (
  <div class="field">
    {/* biome-ignore lint/a11y/noLabelWithoutControl: the control is the children, inside the label */}
    <label>
      <span>{props.label}</span>
      {props.children}
    </label>
    {props.hint && <small>{props.hint}</small>}
  </div>
);

export const when = (ms: bigint | number | undefined): string =>
  ms === undefined || Number(ms) === 0 ? "—" : new Date(Number(ms)).toISOString().replace("T", " ").slice(0, 19);

/** A `datetime-local` input's value (the browser's local time, to the minute) as Unix ms; undefined when empty. */
export function fromLocalInput(value: string): number | undefined {
  if (value === "") return undefined;
  const ms = new Date(value).getTime();
  if (Number.isNaN(ms)) throw new Error(`Not a date and time: ${value}`);
  return ms;
}

export type FormEvent = JSX.TargetedEvent<HTMLFormElement, Event>;

/** A list's table: one header per column (plus an unnamed Actions column when `actions` is given), one row per item. */
export function Table<T>(props: {
  columns: string[];
  items: T[];
  rowKey: (item: T) => string;
  cells: (item: T) => ComponentChildren;
  actions?: (item: T) => ComponentChildren;
}) {
  const { actions } = props;
  return (
    <table>
      <thead>
        <tr>
          {props.columns.map((c) => (
            <th scope="col" key={c}>
              {c}
            </th>
          ))}
          {actions && (
            <th scope="col">
              <span class="sr-only">Actions</span>
            </th>
          )}
        </tr>
      </thead>
      <tbody>
        {props.items.map((item) => (
          <tr key={props.rowKey(item)}>
            {props.cells(item)}
            {actions && <td>{actions(item)}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A cell showing an id (or other code-like text) as code. */
export const CodeCell = ({ children }: { children: ComponentChildren }) => (
  <td>
    <code>{children}</code>
  </td>
);

/** A Delete button that asks `question` first. */
export const DeleteButton = (props: { question: string; onConfirm: () => Promise<unknown> }) => (
  <ConfirmButton label="Delete" question={props.question} confirm="Yes, delete" onConfirm={props.onConfirm} />
);

/** A form's submit button: disabled, and saying `busyLabel`, while its action runs. */
export const SubmitButton = (props: { busy: boolean; label: string; busyLabel: string; disabled?: boolean }) => (
  <button type="submit" class="primary" disabled={props.busy || props.disabled}>
    {props.busy ? props.busyLabel : props.label}
  </button>
);

/** "Create a …": a heading and a one-field form whose value is cleared once `onCreate` succeeds. */
export function CreateForm(props: {
  title: string;
  label: string;
  button: string;
  maxLength: number;
  minLength?: number;
  onCreate: (value: string) => Promise<unknown>;
}) {
  const [value, setValue] = useState("");
  const create = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void create.run(async () => {
      await props.onCreate(value);
      setValue("");
    });
  };
  return (
    <>
      <h2>{props.title}</h2>
      <form onSubmit={submit} class="inline">
        <Field label={props.label}>
          <input required minLength={props.minLength} maxLength={props.maxLength} value={value} onInput={(e) => setValue(e.currentTarget.value)} />
        </Field>
        <SubmitButton busy={create.busy} label={props.button} busyLabel="Creating…" />
      </form>
      {create.error && <ErrorNote message={create.error} />}
    </>
  );
}
