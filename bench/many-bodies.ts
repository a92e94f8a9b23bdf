// autocannon with a list of bodies instead of one, for the scenarios whose every
// request names another key (verifyCreditsMany): `node dist/bench/many-bodies.js
// <url> <connections> <seconds> <amount|-> <authorization> <bodies.json>` prints
// autocannon's result as JSON, as `autocannon -j` does. autocannon's command line
// takes one body only. Each connection goes through the list from its own place
// in it (connection i from i/connections of the way in), so that the connections
// do not ask for the same key at the same moment.
import fs from "node:fs";
import { createRequire } from "node:module";

/** What is used here of autocannon's API (it ships no types). */
interface Client {
  setRequests(requests: Array<{ method: string; body: string }>): void;
}
type Autocannon = (opts: Record<string, unknown>, done: (err: unknown, result: unknown) => void) => { stop(): void };
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

const [url, connections, seconds, amount, authorization, file] = process.argv.slice(2);
if (file === undefined) {
  console.error("usage: many-bodies.js <url> <connections> <seconds> <amount|-> <authorization> <bodies.json>");
  process.exit(2);
}
const bodies = JSON.parse(fs.readFileSync(file, "utf8")) as string[];
const n = Number(connections);
let client = 0;
const instance = autocannon(
  {
    url,
    connections: n,
    ...(amount === "-" ? { duration: Number(seconds) } : { amount: Number(amount) }),
    method: "POST",
    headers: { "content-type": "application/json", authorization: authorization as string },
    setupClient: (c: Client) => {
      const from = Math.floor((client++ * bodies.length) / n);
      const mine = [...bodies.slice(from), ...bodies.slice(0, from)];
      c.setRequests(mine.map((body) => ({ method: "POST", body })));
    },
  },
  (err, result) => {
    if (err) {
      console.error(err);
      process.exit(1);
    }
    process.stdout.write(`${JSON.stringify(result)}\n`);
  },
);
process.once("SIGINT", () => instance.stop());
