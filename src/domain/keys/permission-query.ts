// The verifyKey permission query language (docs/permissions.md, "The permission query of `keys.verifyKey`"):
//   query := or EOF; or := and (OR and)*; and := primary (AND primary)*;
//   primary := PERMISSION | "(" or ")"
// AND/OR are case-insensitive whole words. A leaf holds when some granted
// permission equals it or, containing `*`, matches it as an anchored glob.
import { AppError } from "../../core/errors.js";
import { anyGrantCovers } from "../auth/wildcard.js";

export type Query = { kind: "perm"; name: string } | { kind: "and" | "or"; children: Query[] };

interface Token {
  type: "perm" | "and" | "or" | "(" | ")";
  text: string;
  pos: number;
}

const syntaxError = (message: string): AppError => new AppError("err:user:bad_request:permissions_query_syntax_error", message);

function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i] as string;
    if (c === " " || c === "\t" || c === "\r" || c === "\n") {
      i++;
    } else if (c === "(" || c === ")") {
      tokens.push({ type: c, text: c, pos: i });
      i++;
    } else if (/[A-Za-z0-9._\-*:/]/.test(c)) {
      const start = i;
      while (i < input.length && /[A-Za-z0-9._\-*:/]/.test(input[i] as string)) i++;
      const text = input.slice(start, i);
      const upper = text.toUpperCase();
      tokens.push({ type: upper === "AND" ? "and" : upper === "OR" ? "or" : "perm", text, pos: start });
    } else {
      // The whole character, never half of a surrogate pair: the detail must stay well-formed
      // text (gRPC sends it in a header, and grpc-js cannot encode a lone surrogate).
      const cp = input.codePointAt(i) as number;
      const ch = cp >= 0xd800 && cp <= 0xdfff ? "\ufffd" : String.fromCodePoint(cp);
      throw syntaxError(`Invalid character '${ch}' found in query at position ${i}. Permissions may use letters, digits, '.', '_', '-', '*', ':' and '/'.`);
    }
  }
  return tokens;
}

// Parsed once per distinct query string: verification sends the same few queries over and over.
const parsed = new Map<string, Query>();
const PARSED_MAX = 10_000;

/** parseQuery with a bounded cache of parsed forms (syntax errors are not cached). */
export function parseQueryCached(input: string): Query {
  let q = parsed.get(input);
  if (q === undefined) {
    q = parseQuery(input);
    if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value as string);
    parsed.set(input, q);
  }
  return q;
}

export function parseQuery(input: string): Query {
  const tokens = tokenize(input);
  if (tokens.length === 0) throw syntaxError("The permissions query is empty.");
  let at = 0;
  const peek = (): Token | undefined => tokens[at];
  const unexpected = (t: Token | undefined): AppError =>
    t === undefined
      ? syntaxError("The permissions query ends unexpectedly: an operand is missing.")
      : syntaxError(`Unexpected token '${t.text}' at position ${t.pos}.`);

  const primary = (): Query => {
    const t = peek();
    if (t?.type === "perm") {
      at++;
      return { kind: "perm", name: t.text };
    }
    if (t?.type === "(") {
      at++;
      if (peek()?.type === ")") throw syntaxError(`Empty parentheses at position ${t.pos}.`);
      const inner = or();
      if (peek()?.type !== ")") throw syntaxError(`Missing ')' for the '(' at position ${t.pos}.`);
      at++;
      return inner;
    }
    throw unexpected(t);
  };
  const and = (): Query => {
    const children = [primary()];
    while (peek()?.type === "and") {
      at++;
      children.push(primary());
    }
    return children.length === 1 ? (children[0] as Query) : { kind: "and", children };
  };
  const or = (): Query => {
    const children = [and()];
    while (peek()?.type === "or") {
      at++;
      children.push(and());
    }
    return children.length === 1 ? (children[0] as Query) : { kind: "or", children };
  };
  const q = or();
  if (at < tokens.length) throw unexpected(tokens[at]);
  return q;
}

export function evaluateQuery(q: Query, granted: readonly string[]): boolean {
  switch (q.kind) {
    case "perm":
      return anyGrantCovers(granted, q.name);
    case "and":
      return q.children.every((c) => evaluateQuery(c, granted));
    case "or":
      return q.children.some((c) => evaluateQuery(c, granted));
  }
}
