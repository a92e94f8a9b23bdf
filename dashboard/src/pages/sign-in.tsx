// Sign-in: an operator's email and password (operators are made with `keyhold admin create`).
import { useState } from "preact/hooks";
import { type Session, signIn } from "../api.js";
import { ErrorNote, Field, type FormEvent, useAction } from "../ui.js";

export function SignInPage({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [email, setEmail] = useState("");
  const [password, setPassword] = useState("");
  const action = useAction();
  const submit = (e: FormEvent) => {
    e.preventDefault();
    void action.run(async () => onSignedIn(await signIn(email, password)));
  };
  return (
    <main class="sign-in">
      <h1>Sign in to keyhold</h1>
      <form onSubmit={submit}>
        <Field label="Email">
          <input type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        </Field>
        <Field label="Password">
          <input type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        </Field>
        <button type="submit" class="primary" disabled={action.busy}>
          {action.busy ? "Signing in…" : "Sign in"}
        </button>
        {action.error && <ErrorNote message={action.error} />}
      </form>
      <p class="hint">
        No account yet? The first operator is created on the server with <code>npx keyhold admin create --email you@example.com --workspace acme</code>.
      </p>
    </main>
  );
}
