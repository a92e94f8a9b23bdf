// What the browser tests share: Debian's Chromium driven by playwright-core, and a
// page that records every request to another host (aborting it) and every error.
// Without Chromium the tests are skipped, saying so, except in CI where they fail.
import { existsSync } from "node:fs";
import { type Browser, type ConsoleMessage, chromium, type Page } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
const inCi = (process.env.CI ?? "") !== "";

/** Whether a browser test of `what` runs here (logs why not when it is skipped). */
export function browserTestsRun(what: string): boolean {
  if (!haveChromium && !inCi) console.log(`[tests] no Chromium at ${CHROMIUM}: the browser test of ${what} is skipped (apt-get install chromium)`);
  return haveChromium || inCi;
}

/** Throws the install hint when Chromium is missing (in CI, where the test is not skipped). */
export function requireChromium(): void {
  if (!haveChromium) throw new Error(`no Chromium at ${CHROMIUM} (set CHROMIUM_PATH, or apt-get install chromium)`);
}

export interface WatchedPage {
  browser: Browser;
  page: Page;
  /** URLs the page tried to reach outside `origin` (each was aborted). */
  offHost: string[];
  /** Console errors, page errors and failed requests. */
  errors: string[];
}

/** A 1280×900 page allowed to reach `origin` only; `expected` console errors are not recorded. */
export async function openWatchedPage(origin: string, expected: (m: ConsoleMessage) => boolean = () => false): Promise<WatchedPage> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // Without the background-networking switches Chromium calls Google by itself.
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
  const offHost: string[] = [];
  const errors: string[] = [];
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (new URL(url).origin === origin) return route.continue();
    offHost.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on("websocket", (ws) => offHost.push(ws.url()));
  page.on("console", (m) => {
    if (m.type() === "error" && !expected(m)) errors.push(`console: ${m.text()} (${m.location().url})`);
  });
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`));
  page.on("requestfailed", (r) => errors.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  return { browser, page, offHost, errors };
}
