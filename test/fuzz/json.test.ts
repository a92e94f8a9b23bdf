// Property-based bad input over JSON (issue 7): for every operation, generated
// bodies (see json-arbitrary.ts) get either a 2xx or a 4xx error envelope, never
// a 5xx, within 10 s; a 400 invalid_input names each offending field; and a
// rejected request leaves every table of the database as it was.
// FUZZ_SEED, FUZZ_RUNS, FUZZ_ONLY and FUZZ_PATH: see guard.ts; `node scripts/fuzz.mjs` runs it long.
import type { DescMessage } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { routeTable } from "../../src/gateway/plugin.js";
import { services } from "../../src/server/registry.js";
import type { Harness, Res } from "../harness.js";
import { useHarness } from "../harness.js";
import { clip, serialize } from "./body.js";
import { DataGuard, fuzz, OPERATION_TIMEOUT_MS, type Operation, operations, settings, summary, type Tally, within } from "./guard.js";
import { ALIASED, ARRAY_BODIES, buildBody, describeCase, type JsonCase, jsonCaseArb } from "./json-arbitrary.js";
import { Worlds } from "./world.js";

/** Whether the gateway saw the body as an object of fields (so each error must name one of them). */
function fieldsOf(text: string, op: Operation): Set<string> | undefined {
  // secure-json-parse refuses these keys outright: the error is about the whole body.
  if (/"(__proto__|constructor)"/.test(text)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text.replace(/^\ufeff/, ""));
  } catch {
    return undefined;
  }
  // The namespace aliases are refused as `namespace`.
  const aliases = ALIASED(op.path) ? ["namespace"] : [];
  const listField = ARRAY_BODIES[op.path];
  if (listField !== undefined && Array.isArray(parsed)) return new Set([listField, ...aliases]);
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
  return new Set([...Object.keys(parsed), ...aliases]);
}

/** The first field of a location: `body.apiId…` or `body["a.b"]…`. */
function topField(location: string): string | undefined {
  const plain = /^body\.([A-Za-z_$][\w$]*)/.exec(location);
  if (plain) return plain[1];
  const quoted = /^body\[("(?:[^"\\]|\\.)*")\]/.exec(location);
  return quoted ? (JSON.parse(quoted[1] as string) as string) : undefined;
}

const knownFields = (desc: DescMessage): string[] => desc.fields.map((f) => f.jsonName);

/** The answer is a 2xx or a complete 4xx envelope, and a 400 invalid_input names real fields. */
function checkAnswer(h: Harness, op: Operation, text: string, res: Res): void {
  const show = `${res.status} ${clip(res.text, 1500)}`;
  expect(res.status, `5xx or odd status: ${show}`).toBeGreaterThanOrEqual(200);
  expect(res.status, `5xx: ${show}`).toBeLessThan(500);
  expect(res.status >= 300 && res.status < 400, show).toBe(false);
  expect(res.body, `not JSON: ${show}`).toBeTypeOf("object");
  expect(res.body.meta?.requestId, show).toMatch(/./);
  if (res.status < 300) {
    expect(res.body.data, show).toBeDefined();
    return;
  }
  expect(Object.keys(res.body).sort(), `not the error envelope: ${show}`).toEqual(["error", "meta"]);
  const e = res.body.error;
  expect(e, show).toMatchObject({ title: expect.any(String), detail: expect.any(String), status: res.status, type: expect.any(String) });
  expect((e.type as string).startsWith(`${h.docsBase}/api-reference/errors-v2/`), show).toBe(true);
  expect(e.title.length > 0 && e.detail.length > 0, show).toBe(true);
  if (res.status !== 400 || !(e.type as string).endsWith("/invalid_input")) return;
  expect(Array.isArray(e.errors) && e.errors.length > 0, `invalid_input without errors[]: ${show}`).toBe(true);
  const sent = fieldsOf(text, op);
  const allowed = sent === undefined ? undefined : new Set([...knownFields(op.input), ...sent]);
  // One expect per body, not per error: a body with thousands of unknown fields gets thousands of errors.
  const bad = (e.errors as Array<{ location: unknown; message: unknown }>).find((fe) => {
    if (typeof fe.message !== "string" || fe.message.length === 0) return true;
    if (typeof fe.location !== "string" || !/^body($|[.[])/.test(fe.location)) return true;
    // An object body's errors name a field: one the request has, or one the body sent.
    if (allowed === undefined) return false;
    const top = topField(fe.location);
    return top === undefined || !allowed.has(top);
  });
  expect(bad, `an error without a message or a location naming a field of the body or request: ${show}`).toBeUndefined();
}

describe("JSON bad input, every operation", () => {
  const h = useHarness();
  let worlds: Worlds;
  let guard: DataGuard;
  const tally: Tally = { operations: 0, tried: 0, accepted: 0, rejected: 0 };

  beforeAll(async () => {
    worlds = await Worlds.seed(h);
    guard = await DataGuard.open(h);
  });

  afterAll(async () => {
    await guard?.close();
    if (tally.operations > 0) console.log(summary("json", tally));
  });

  const ops = operations();
  it.skipIf(settings.only !== undefined)("fuzzes every route the JSON gateway serves", () => {
    expect(ops.map((o) => o.path).sort()).toEqual(
      routeTable(services(h.deps))
        .map((r) => r.path)
        .sort(),
    );
  });

  for (const op of ops) {
    it(op.path, { timeout: OPERATION_TIMEOUT_MS }, async () => {
      tally.operations++;
      const check = async (c: JsonCase) => {
        const text = serialize(buildBody(c), worlds.w);
        const { result: res, changed } = await guard.run(
          () => within(h.post(`/v2/${op.path}`, text, worlds.w.rootKey), op.path),
          (r) => r.status >= 400,
        );
        tally.tried++;
        checkAnswer(h, op, text, res);
        if (res.status >= 400) {
          tally.rejected++;
          expect(changed, `a rejected request (${res.status} ${clip(res.text, 500)}) changed stored data`).toEqual([]);
        } else {
          tally.accepted++;
          if (op.path.includes(".delete")) await worlds.repair();
        }
      };
      await fuzz("JSON", op.path, jsonCaseArb(op.path, op.input), check, (c) => `${describeCase(c)}: ${clip(serialize(buildBody(c), worlds.w))}`);
    });
  }
});
