// Reading a password for the CLI: from a terminal without echo (asked twice), or
// all of stdin with --password-stdin (one trailing newline dropped). Never a flag.

import readline from "node:readline/promises";
import { Writable } from "node:stream";

export class PasswordInputError extends Error {}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === "string" ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

async function prompt(question: string): Promise<string> {
  let muted = false;
  // The question is written, the typed characters are not.
  const output = new Writable({
    write(chunk, _enc, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = readline.createInterface({ input: process.stdin, output, terminal: true });
  try {
    const answer = rl.question(question);
    muted = true;
    return await answer;
  } finally {
    rl.close();
    process.stderr.write("\n");
  }
}

export async function readPassword(fromStdin: boolean): Promise<string> {
  if (fromStdin) return readAll(process.stdin);
  if (!process.stdin.isTTY) throw new PasswordInputError("stdin is not a terminal: pipe the password in with --password-stdin");
  const first = await prompt("Password: ");
  const second = await prompt("Password again: ");
  if (first !== second) throw new PasswordInputError("the passwords do not match");
  return first;
}
