// The API reference page at /docs in a real browser (Debian's Chromium, driven by
// playwright-core) against the real server process: it renders every operation
// of /openapi.json, fetches nothing from any other host (every such request is
// aborted and recorded), logs no error, and leaves a full-page screenshot in
// test-results/docs.png. Without Chromium it is skipped, saying so, except in CI.
import { mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { useHarness } from "../harness.js";
import { ROOT, type ServerProcess, startServer } from "../server-process.js";
import { browserTestsRun, openWatchedPage, requireChromium } from "./chromium.js";

const SCREENSHOT = path.join(ROOT, "test-results", "docs.png");
/** The first screen alone, at a size a person can read. */
const FIRST_SCREEN = path.join(ROOT, "test-results", "docs-first-screen.png");
/** Scrolls to the first section Scalar has not drawn yet; answers how many there were. */
const SCROLL_TO_FIRST_PLACEHOLDER = `(() => {
  const all = document.querySelectorAll('[data-placeholder="true"]');
  all[0]?.scrollIntoView();
  return all.length;
})()`;
const METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

interface Operation {
  method: string;
  path: string;
  /** The section's heading: the operation's summary (from the protos' comments), or its path without one. */
  title: string;
}

describe.runIf(browserTestsRun("/docs"))("API reference page at /docs", () => {
  beforeAll(requireChromium);
  const h = useHarness();
  let server: ServerProcess;
  let browser: Browser;
  let page: Page;
  let title: string;
  let operations: Operation[];
  let offHost: string[] = [];
  let errors: string[] = [];

  beforeAll(async () => {
    server = await startServer(h.config.databaseUrl ?? "");
    // biome-ignore lint/suspicious/noExplicitAny: the document is walked, not typed
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as any;
    title = doc.info.title;
    operations = Object.entries(doc.paths as Record<string, Record<string, { summary?: string }>>).flatMap(([p, item]) =>
      Object.entries(item)
        .filter(([m]) => METHODS.has(m))
        .map(([m, op]) => ({ method: m.toUpperCase(), path: p, title: op.summary ?? p })),
    );
    ({ browser, page, offHost, errors } = await openWatchedPage(server.url));
  });

  afterAll(async () => {
    await browser?.close();
    await server?.kill();
  });

  it("serves the page under a policy that allows this origin only", async () => {
    const res = await page.goto(`${server.url}/docs`);
    expect(res?.status()).toBe(200);
    expect(res?.url()).toBe(`${server.url}/docs/`);
    const csp = (await res?.allHeaders())?.["content-security-policy"] ?? "";
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("font-src 'self' data:");
    await page.getByRole("heading", { name: title, level: 1 }).waitFor({ timeout: 20_000 });
  });

  it("renders every operation of /openapi.json", { timeout: 120_000 }, async () => {
    expect(operations.length).toBeGreaterThan(30);
    const missing: string[] = [];
    for (const { method, path: p, title: opTitle } of operations) {
      // Scalar's section of an operation is `<document>/tag/<tag>/<METHOD><path>`, drawn when scrolled to.
      const slot = page.locator(`[id$="/${method}${p}"]`).first();
      const heading = page.locator(`section[id$="/${method}${p}"]`).getByRole("heading", { name: opTitle, exact: true });
      try {
        await slot.scrollIntoViewIfNeeded({ timeout: 10_000 });
        await heading.waitFor({ state: "visible", timeout: 10_000 });
      } catch {
        missing.push(`${method} ${p}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("saves a full-page screenshot to test-results/docs.png", { timeout: 180_000 }, async () => {
    // Scalar draws a section when it is scrolled to, so the rest (the models) are
    // scrolled to as well. Scrolled from the page rather than with a locator: a
    // placeholder Scalar has hidden (a collapsed group) would never become visible
    // and a locator's scroll would wait for it until the test timed out.
    const deadline = Date.now() + 60_000;
    let pending = Number.POSITIVE_INFINITY;
    while (pending > 0 && Date.now() < deadline) {
      pending = (await page.evaluate(SCROLL_TO_FIRST_PLACEHOLDER)) as number;
      await page.waitForTimeout(20);
    }
    await page.getByRole("heading", { name: title, level: 1 }).scrollIntoViewIfNeeded();
    await page.getByRole("heading", { name: title, level: 1 }).waitFor({ state: "visible" });
    mkdirSync(path.dirname(SCREENSHOT), { recursive: true });
    // The page is ~400 px an operation tall: on a slow machine under CI's load the
    // full-page capture alone passed Playwright's default 30 s (2026-11-30), the
    // page drawn and its fonts loaded.
    await page.screenshot({ path: SCREENSHOT, fullPage: true, timeout: 90_000 });
    const png = readFileSync(SCREENSHOT);
    expect(png.subarray(1, 4).toString()).toBe("PNG");
    // IHDR: width and height, big-endian, at bytes 16 and 20.
    expect(png.readUInt32BE(16)).toBe(1280);
    expect(png.readUInt32BE(20)).toBeGreaterThan(400 * operations.length);
    expect(png.length).toBeGreaterThan(100_000);
    await page.evaluate("window.scrollTo(0, 0)");
    await page.screenshot({ path: FIRST_SCREEN });
    expect(readFileSync(FIRST_SCREEN).readUInt32BE(16)).toBe(1280);
  });

  it("fetched nothing from another host and logged no error", () => {
    expect(offHost).toEqual([]);
    expect(errors).toEqual([]);
  });
});
