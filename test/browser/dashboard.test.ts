// The dashboard at /dashboard in a real browser (Debian's Chromium, driven by
// playwright-core) against the real server process: an operator made with the
// CLI signs in, creates a workspace and a root key; the test uses that root key
// with fetch on the JSON /v2 API to create an API and keys, verifies one; the
// browser finds the key, disables it, a verification then says DISABLED, and the
// usage chart's totals move once the counts are written behind, and its range
// buttons show the last hour, day, 7 and 30 days; the root key's
// last use shows once written behind too; identities get rate limits; namespaces
// are listed, opened, created and deleted; a root key made with an expiry is
// disabled, enabled, rotated with a grace period and given new grants, each change
// seen in the database and by the JSON API; the audit log shows those changes with
// the operator as actor, filtered and paged. Every page is
// saved as test-results/dashboard-*.png. Nothing is fetched from another host and
// nothing is logged as an error. Without Chromium it is skipped, except in CI.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Browser, ConsoleMessage, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_ACTIONS } from "../../src/domain/audit/audit.js";
import { buildServer } from "../../src/server/bootstrap.js";
import { services } from "../../src/server/registry.js";
import { uid } from "../contract/shared/helpers.js";
import { useHarness } from "../harness.js";
import { ensureBuilt, ROOT, type ServerProcess, startServer } from "../server-process.js";
import { insertRollupRows } from "../usage-rollups.js";
import { browserTestsRun, openWatchedPage, requireChromium } from "./chromium.js";

const RESULTS = path.join(ROOT, "test-results");
const PASSWORD = "a long enough dashboard passphrase";
/**
 * How long a poll waits for the page to show a server's answer. vitest's default
 * (1 s) was too short in CI, where this file runs beside 264 others on 2 cores:
 * "Disable key" once took longer than that to show "Disabled".
 */
const UI = { timeout: 10_000 };
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The dashboard's way of showing a time (UTC, to the second). */
const shownTime = (ms: number) => new Date(ms).toISOString().replace("T", " ").slice(0, 19);

/** A `datetime-local` value for `ms` in this process's time zone, to the minute. */
function localInput(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Runs `keyhold admin create` with the password piped in. */
function createOperator(databaseUrl: string, email: string, workspace: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [path.join(ROOT, "bin/keyhold.js"), "admin", "create", "--email", email, "--workspace", workspace, "--password-stdin"],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: databaseUrl, LOG_LEVEL: "silent" },
        stdio: ["pipe", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
    child.stdin.end(`${PASSWORD}\n`);
  });
}

describe.runIf(browserTestsRun("/dashboard"))("dashboard at /dashboard", () => {
  beforeAll(requireChromium);
  const h = useHarness();
  let server: ServerProcess;
  let browser: Browser;
  let page: Page;
  let offHost: string[] = [];
  let errors: string[] = [];
  const email = `${uid("op")}@example.test`;
  const workspaceName = uid("dash_ws");
  let rootKey: string;
  let apiId: string;
  let keyId: string;
  let key: string;

  /** A JSON /v2 call with the root key made in the browser. */
  async function v2(op: string, body: unknown) {
    const res = await fetch(`${server.url}/v2/${op}`, {
      method: "POST",
      headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    // biome-ignore lint/suspicious/noExplicitAny: JSON bodies are checked by assertions
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(200);
    return json.data;
  }

  /**
   * Lists identities with `secret` on the JSON API: 200 while the root key works,
   * else the status and the last segment of the error's type (`key_disabled`).
   */
  async function asRootKey(secret: string): Promise<{ status: number; error?: string }> {
    const res = await fetch(`${server.url}/v2/identities.listIdentities`, {
      method: "POST",
      headers: { authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({}),
    });
    const json = (await res.json()) as { error?: { type?: string } };
    return json.error === undefined ? { status: res.status } : { status: res.status, error: json.error.type?.split("/").pop() ?? "" };
  }

  /** A root key's row as the server process stored it. */
  async function storedRootKey(id: string) {
    const [rows] = await h.db.pool.query("SELECT name, enabled, expires_at_m, permissions, deleted_at_m FROM root_keys WHERE id = ?", [id]);
    const r = (rows as Array<Record<string, unknown>>)[0];
    if (r === undefined) return undefined;
    return {
      name: r.name,
      enabled: Boolean(r.enabled),
      expires: r.expires_at_m === null ? undefined : Number(r.expires_at_m),
      permissions: JSON.parse(String(r.permissions)) as string[],
      deleted: r.deleted_at_m !== null,
    };
  }

  const nav = (name: string) => page.getByRole("navigation", { name: "Main" }).getByRole("link", { name }).click();

  const shot = async (name: string) => {
    mkdirSync(RESULTS, { recursive: true });
    const file = path.join(RESULTS, `dashboard-${name}.png`);
    await page.screenshot({ path: file, fullPage: true });
    expect(readFileSync(file).subarray(1, 4).toString()).toBe("PNG");
  };

  /** The usage legend's totals by outcome, as the page shows them. */
  const legend = async (): Promise<Record<string, number>> => {
    const items = page.getByRole("list", { name: "Totals by outcome" }).getByRole("listitem");
    const out: Record<string, number> = {};
    for (const li of await items.all()) {
      const outcome = (await li.getAttribute("data-outcome")) ?? "";
      out[outcome] = Number(await li.locator("strong").textContent());
    }
    return out;
  };

  beforeAll(async () => {
    ensureBuilt();
    if (!existsSync(path.join(ROOT, "dist", "dashboard", "index.html"))) {
      execFileSync(path.join(ROOT, "node_modules", ".bin", "vite"), ["build", "--config", "dashboard/vite.config.ts", "--logLevel", "warn"], {
        cwd: ROOT,
        stdio: "inherit",
      });
    }
    const made = await createOperator(h.config.databaseUrl ?? "", email, uid("first_ws"));
    expect(made.code, made.stderr).toBe(0);
    server = await startServer(h.config.databaseUrl ?? "");
    // The browser logs every 4xx it gets; a 401 is the expected answer to the signed-out
    // session check and to the wrong password tried on purpose below.
    const expected = (m: ConsoleMessage) =>
      (/status of 401/.test(m.text()) && /\/dashboard\/api\/(session|sign-in)$/.test(m.location().url)) ||
      // The sign-out failure made up on purpose below.
      (/status of 503/.test(m.text()) && /\/dashboard\/api\/sign-out$/.test(m.location().url));
    ({ browser, page, offHost, errors } = await openWatchedPage(server.url, expected));
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await server?.kill();
  });

  it("serves the page under a same-origin policy, and its assets with long cache headers", async () => {
    const res = await page.goto(`${server.url}/dashboard`);
    expect(res?.status()).toBe(200);
    const headers = (await res?.allHeaders()) ?? {};
    expect(headers["content-security-policy"]).toContain("default-src 'none'");
    expect(headers["content-security-policy"]).toContain("script-src 'self'");
    expect(headers["cache-control"]).toBe("no-cache");
    const html = await (await fetch(`${server.url}/dashboard/apis/some/client/route`)).text();
    const script = /src="(\/dashboard\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${server.url}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("cache-control")).toContain("immutable");
    const api = await fetch(`${server.url}/dashboard/api/nothing-here`);
    expect(api.status).toBe(404);
    expect(((await api.json()) as { error: { status: number } }).error.status).toBe(404);
  });

  it("signs in", async () => {
    await page.getByRole("heading", { name: "Sign in to keyhold" }).waitFor();
    await shot("sign-in");
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("not the password at all");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("The email or password is wrong.").waitFor();
    // With the keyboard: Enter in the password field submits.
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByLabel("Password").press("Enter");
    await page.getByRole("heading", { name: "APIs", level: 1 }).waitFor();
    await page.getByText("No APIs in this workspace yet").waitFor();
    await page.getByText(email).waitFor();
  });

  it("creates a workspace and switches to it", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Workspaces" }).click();
    await page.getByRole("heading", { name: "Workspaces", level: 1 }).waitFor();
    await page.getByRole("table").waitFor();
    await page.getByLabel("Workspace name").fill(workspaceName);
    await page.getByRole("button", { name: "Create workspace" }).click();
    await page.getByRole("heading", { name: "APIs", level: 1 }).waitFor();
    await expect.poll(() => page.locator(".switcher select option:checked").textContent(), UI).toBe(workspaceName);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Workspaces" }).click();
    await page
      .getByRole("row", { name: new RegExp(workspaceName) })
      .getByText("Current")
      .waitFor();
    await shot("workspaces");
  });

  it("creates a root key with the permission picker and shows it once", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Root keys" }).click();
    await page.getByText("No root keys in this workspace yet.").waitFor();
    await page.getByLabel("Name (optional)").fill("e2e");
    const picker = page.locator(".picker");
    await picker
      .getByRole("group", { name: "APIs and their keys" })
      .getByRole("checkbox", { name: /^apis\.\* Every action/ })
      .check();
    const rate = picker.getByRole("group", { name: "Rate limits" });
    await rate.getByRole("checkbox", { name: /^ratelimit\.\*\.limit / }).check();
    // A namespace is created by its first use: that is a grant of its own.
    await rate.getByRole("checkbox", { name: /^ratelimit\.\*\.create_namespace / }).check();
    await page.getByRole("button", { name: "Create root key (3 grants)" }).click();
    const shown = page.getByTestId("root-key");
    await shown.waitFor();
    rootKey = (await shown.textContent())?.trim() ?? "";
    expect(rootKey.length).toBeGreaterThan(20);
    const row = page.getByRole("row", { name: /e2e/ });
    await row.waitFor();
    const granted = (await row.locator("td.perms").textContent())?.split(", ").sort();
    expect(granted).toEqual(["apis.*", "ratelimit.*.create_namespace", "ratelimit.*.limit"]);
    expect(await row.getByTestId("root-key-last-used").textContent()).toBe("Never");
    expect(await row.getByTestId("root-key-status").textContent()).toBe("Enabled");
    expect(await row.getByTestId("root-key-expires").textContent()).toBe("Never");
    await shot("root-keys");
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByTestId("root-key").count()).toBe(0);
  });

  it("the root key works from outside: an API and keys, one verified", async () => {
    apiId = (await v2("apis.createApi", { name: "e2e-api" })).apiId;
    const made = await v2("keys.createKey", { apiId, name: "checkout", externalId: "user_e2e", credits: { remaining: 100 } });
    keyId = made.keyId;
    key = made.key;
    await v2("keys.createKey", { apiId, name: "other" });
    for (let i = 0; i < 3; i++) expect((await v2("keys.verifyKey", { key })).code).toBe("VALID");
  });

  it("shows the root key's last use once it is written behind", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Root keys" }).click();
    const lastUsed = async () => {
      await page.reload();
      return page.getByRole("row", { name: /e2e/ }).getByTestId("root-key-last-used").textContent();
    };
    // Written behind about every second by the server.
    await expect.poll(lastUsed, { timeout: 15_000, interval: 1_000 }).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
  });

  it("lists the API, searches its keys and opens one", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "APIs" }).click();
    await page.getByRole("link", { name: "e2e-api" }).click();
    await page.getByRole("heading", { name: "e2e-api", level: 1 }).waitFor();
    await expect.poll(() => page.locator("tbody tr").count(), UI).toBe(2);
    await page.getByLabel("Search keys").fill("user_e2e");
    await expect.poll(() => page.locator("tbody tr").count(), UI).toBe(1);
    await page.getByLabel("Search keys").fill("no such key");
    await page.getByText("No key matches").waitFor();
    await page.getByLabel("Search keys").fill(keyId.slice(-6));
    await page.getByRole("link", { name: keyId }).waitFor();
    await expect.poll(() => page.locator("tbody tr").count(), UI).toBe(1);
    await shot("api");
    await page.getByRole("link", { name: keyId }).click();
    await page.getByRole("heading", { name: `Key ${keyId}` }).waitFor();
    expect(await page.getByTestId("key-status").textContent()).toBe("Enabled");
    expect(await page.getByTestId("key-credits").textContent()).toBe("97");
  });

  it("disables the key: a verification then says DISABLED", async () => {
    await page.getByRole("button", { name: "Disable key" }).click();
    await expect.poll(() => page.getByTestId("key-status").textContent(), UI).toBe("Disabled");
    await page.getByRole("button", { name: "Enable key" }).waitFor();
    const res = await v2("keys.verifyKey", { key });
    expect(res.valid).toBe(false);
    expect(res.code).toBe("DISABLED");
  });

  it("updates the key's credits", async () => {
    await page.getByRole("textbox", { name: /^Credits\b/ }).fill("250");
    await page.getByRole("button", { name: "Update credits" }).click();
    await expect.poll(() => page.getByTestId("key-credits").textContent(), UI).toBe("250");
  });

  it("shows the key's usage moving as verifications are counted", { timeout: 60_000 }, async () => {
    const before = async () => {
      await page.getByRole("button", { name: "Refresh usage" }).click();
      await page.getByRole("button", { name: "Refresh usage" }).waitFor();
      return (await page.getByText("No verifications in the last hour.").count()) > 0 ? {} : legend();
    };
    // The counts are written behind (every 2 s): wait until the first four (3 VALID, 1 DISABLED) are in.
    await expect.poll(before, { timeout: 20_000, interval: 1_000 }).toEqual({ VALID: 3, DISABLED: 1, total: 4 });
    for (let i = 0; i < 2; i++) expect((await v2("keys.verifyKey", { key })).code).toBe("DISABLED");
    await page.waitForTimeout(2_500);
    await page.reload();
    await page.getByRole("heading", { name: `Key ${keyId}` }).waitFor();
    await expect.poll(before, { timeout: 20_000, interval: 1_000 }).toEqual({ VALID: 3, DISABLED: 3, total: 6 });
    expect(await page.locator("svg.chart rect").count()).toBeGreaterThan(0);
    await shot("key");
  });

  it("offers the last hour, day, 7 days and 30 days of the key's usage", { timeout: 60_000 }, async () => {
    // Older verifications cannot be made now: they are put into the roll-ups the
    // recorder writes (hour and day, which the longer ranges read), each where it
    // shows in some ranges and not in others.
    const [found] = await h.db.pool.query("SELECT workspace_id, key_auth_id FROM `keys` WHERE id = ?", [keyId]);
    const { workspace_id: workspaceId, key_auth_id: keySpaceId } = (found as Array<{ workspace_id: string; key_auth_id: string }>)[0] ?? {};
    const row = (time: number, outcome: string, count: number) => ({
      time,
      workspaceId: String(workspaceId),
      keySpaceId: String(keySpaceId),
      apiId,
      keyId,
      outcome,
      count,
    });
    const now = Date.now();
    const hourOf = (t: number) => t - (t % HOUR);
    const dayOf = (t: number) => t - (t % DAY);
    await insertRollupRows(h.db.pool, "hour", [row(hourOf(now - 5 * HOUR), "RATE_LIMITED", 4), row(hourOf(now - 3 * DAY), "EXPIRED", 2)]);
    await insertRollupRows(h.db.pool, "day", [
      row(dayOf(now - 5 * HOUR), "RATE_LIMITED", 4),
      row(dayOf(now - 3 * DAY), "EXPIRED", 2),
      row(dayOf(now - 20 * DAY), "USAGE_EXCEEDED", 5),
    ]);

    const ranges = page.getByRole("group", { name: "Time range" });
    const chart = page.locator("svg.chart");
    // The verifications made above (last hour: 3 VALID, 3 DISABLED) are in every range.
    const made = { VALID: 3, DISABLED: 3 };
    const cases = [
      {
        button: "Last day",
        heading: "Verifications, last day",
        label: /^Verifications per hour over the last day;/,
        totals: { ...made, RATE_LIMITED: 4, total: 10 },
      },
      {
        button: "Last 7 days",
        heading: "Verifications, last 7 days",
        label: /^Verifications per hour over the last 7 days;/,
        totals: { ...made, RATE_LIMITED: 4, EXPIRED: 2, total: 12 },
      },
      {
        button: "Last 30 days",
        heading: "Verifications, last 30 days",
        label: /^Verifications per day over the last 30 days;/,
        totals: { ...made, RATE_LIMITED: 4, EXPIRED: 2, USAGE_EXCEEDED: 5, total: 17 },
      },
      { button: "Last hour", heading: "Verifications, last hour", label: /^Verifications per minute over the last hour;/, totals: { ...made, total: 6 } },
    ];
    expect(await ranges.getByRole("button", { name: "Last hour" }).getAttribute("aria-pressed")).toBe("true");
    for (const c of cases) {
      await ranges.getByRole("button", { name: c.button }).click();
      await page.getByRole("heading", { name: c.heading, exact: true }).waitFor();
      expect(await ranges.getByRole("button", { name: c.button }).getAttribute("aria-pressed")).toBe("true");
      expect(await ranges.getByRole("button", { pressed: true }).count()).toBe(1);
      await expect.poll(() => chart.getAttribute("aria-label"), UI).toMatch(c.label);
      await expect.poll(legend, UI).toEqual(c.totals);
      if (c.button === "Last 7 days") await shot("usage-ranges");
    }
  });

  it("shows the API's usage and deletes the API after asking", async () => {
    await page.getByRole("link", { name: apiId }).click();
    await page.getByRole("heading", { name: "e2e-api", level: 1 }).waitFor();
    await expect.poll(legend, { timeout: 10_000 }).toEqual({ VALID: 3, DISABLED: 3, total: 6 });
    // A slow answer shows a loading state until it comes.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    await page.route("**/keyhold.dashboard.v1.DashboardService/ListApis", async (route) => {
      await held;
      await route.fallback();
    });
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "APIs" }).click();
    await page.getByRole("status").getByText("Loading…").waitFor();
    release();
    const row = page.getByRole("row", { name: /e2e-api/ });
    await row.waitFor();
    await page.unroute("**/keyhold.dashboard.v1.DashboardService/ListApis");
    await row.getByRole("button", { name: "Delete" }).click();
    // Asking moves the focus to the confirming button, so Enter confirms and Tab reaches Cancel.
    await expect.poll(() => page.evaluate("document.activeElement.textContent"), UI).toBe("Yes, delete");
    await shot("apis");
    await page.keyboard.press("Escape");
    await expect.poll(() => page.evaluate("document.activeElement.textContent"), UI).toBe("Delete");
    await page.keyboard.press("Enter");
    await row.getByRole("button", { name: "Cancel" }).click();
    await row.getByRole("button", { name: "Delete" }).click();
    await row.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("No APIs in this workspace yet").waitFor();
  });

  it("lists, creates, searches, edits and deletes identities", async () => {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Identities" }).click();
    await page.getByRole("heading", { name: "Identities", level: 1 }).waitFor();
    // The identity createKey made for externalId user_e2e.
    await page.getByRole("row", { name: /user_e2e/ }).waitFor();
    await page.getByLabel("External id").fill("acme_corp");
    await page.getByLabel("Meta (optional JSON object)").fill('{"plan":"pro"}');
    await page.getByRole("button", { name: "Create identity" }).click();
    const row = page.getByRole("row", { name: /acme_corp/ });
    await row.getByText('{"plan":"pro"}').waitFor();
    await page.getByLabel("Search identities").fill("acme");
    await page.getByRole("button", { name: "Search", exact: true }).click();
    await expect.poll(() => page.locator("tbody tr").count(), UI).toBe(1);
    await row.getByRole("button", { name: "Edit meta" }).click();
    await row.getByLabel("Meta of acme_corp").fill('{"plan":"team"}');
    await row.getByRole("button", { name: "Save meta" }).click();
    await row.getByText('{"plan":"team"}').waitFor();
    // Rate limits: add two rows, save, then remove one and save again.
    await row.getByRole("button", { name: "Edit rate limits" }).click();
    await row.getByRole("button", { name: "Add limit" }).click();
    await row.getByLabel("Name of limit 1").fill("requests");
    await row.getByLabel("Limit of limit 1").fill("10");
    await row.getByLabel("Auto-apply limit 1").check();
    await row.getByRole("button", { name: "Add limit" }).click();
    await row.getByLabel("Name of limit 2").fill("tokens");
    await row.getByLabel("Limit of limit 2").fill("500");
    await row.getByLabel("Duration (ms) of limit 2").fill("3600000");
    await row.getByRole("button", { name: "Save limits" }).click();
    await row.getByText("requests: 10/60000 ms (auto), tokens: 500/3600000 ms").waitFor();
    await shot("identities");
    await row.getByRole("button", { name: "Edit rate limits" }).click();
    expect(await row.getByLabel("Name of limit 2").inputValue()).toBe("tokens");
    await row.getByRole("button", { name: "Remove limit 1" }).click();
    await row.getByRole("button", { name: "Save limits" }).click();
    // Exact: the text before the save contains it too.
    await row.getByText("tokens: 500/3600000 ms", { exact: true }).waitFor();
    expect(await row.textContent()).not.toContain("requests");
    await row.getByRole("button", { name: "Delete" }).click();
    await row.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("No identity matches “acme”.").waitFor();
  });

  it("lists namespaces, opens one to set and delete an override, creates and deletes one", async () => {
    const namespace = uid("e2e.requests");
    expect((await v2("ratelimit.limit", { namespace, identifier: "user_1", limit: 100, duration: 60_000 })).limit).toBe(100);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Rate limits" }).click();
    await page.getByText("Choose a namespace to see and set its overrides.").waitFor();
    await page.getByRole("link", { name: namespace }).click();
    await page.getByText("This namespace has no overrides.").waitFor();
    await page.getByRole("textbox", { name: /^Identifier/ }).fill("user_*");
    await page.getByRole("textbox", { name: /^Limit/ }).fill("5");
    await page.getByRole("button", { name: "Set override" }).click();
    const row = page.getByRole("row", { name: /user_\*/ });
    await row.waitFor();
    expect(await row.textContent()).toContain("60000");
    expect((await v2("ratelimit.limit", { namespace, identifier: "user_1", limit: 100, duration: 60_000 })).limit).toBe(5);
    await shot("ratelimits");
    await row.getByRole("button", { name: "Delete" }).click();
    await row.getByRole("button", { name: "Yes, delete" }).click();
    await page.getByText("This namespace has no overrides.").waitFor();

    // A namespace made here, then deleted after asking: limits in it then answer 410.
    const created = uid("e2e.created");
    await page.getByLabel("Namespace name").fill(created);
    await page.getByRole("button", { name: "Create namespace" }).click();
    const nsRow = page.getByRole("row", { name: created });
    await nsRow.waitFor();
    await nsRow.getByRole("button", { name: "Delete" }).click();
    await nsRow.getByRole("button", { name: "Cancel" }).click();
    await nsRow.getByRole("button", { name: "Delete" }).click();
    await nsRow.getByRole("button", { name: "Yes, delete" }).click();
    await expect.poll(() => nsRow.count(), UI).toBe(0);
    await page.getByRole("link", { name: namespace }).waitFor();
    const gone = await fetch(`${server.url}/v2/ratelimit.limit`, {
      method: "POST",
      headers: { authorization: `Bearer ${rootKey}`, "content-type": "application/json" },
      body: JSON.stringify({ namespace: created, identifier: "user_1", limit: 1, duration: 1_000 }),
    });
    expect(gone.status).toBe(410);
  });

  let expiringId = "";
  let rotatedId = "";

  it("creates a root key with an expiry, disables, enables and rotates it, and edits its grants", async () => {
    await nav("Root keys");
    await page.getByRole("heading", { name: "Root keys", level: 1 }).waitFor();
    await page.getByRole("row", { name: /e2e/ }).waitFor();
    await page.getByLabel("Name (optional)").fill("expiring");
    await page
      .locator(".picker")
      .getByRole("group", { name: "Identities" })
      .getByRole("checkbox", { name: /^identity\.\*\.read_identity / })
      .check();
    const typed = localInput(Date.now() + 30 * DAY);
    await page.getByLabel("Expires (optional)").fill(typed);
    // The input is in the browser's time zone: ask the browser what instant it means.
    const expires = Number(await page.evaluate(`new Date(${JSON.stringify(typed)}).getTime()`));
    await page.getByRole("button", { name: "Create root key (1 grant)" }).click();
    const shown = page.getByTestId("root-key");
    await shown.waitFor();
    const first = (await shown.textContent())?.trim() ?? "";
    await page.getByRole("button", { name: "Done" }).click();
    const row = page.getByRole("row", { name: /expiring/ });
    await row.waitFor();
    expiringId = (await row.getByTestId("root-key-id").textContent()) ?? "";
    expect(expiringId).toMatch(/^key_/);
    const byId = (id: string) => page.locator("tbody tr").filter({ hasText: id });
    expect(await row.getByTestId("root-key-status").textContent()).toBe("Enabled");
    expect(await row.getByTestId("root-key-expires").textContent()).toBe(shownTime(expires));
    expect(await storedRootKey(expiringId)).toMatchObject({ name: "expiring", enabled: true, expires, permissions: ["identity.*.read_identity"] });
    expect(await asRootKey(first)).toEqual({ status: 200 });

    // Disabled: refused on the JSON API at once (the server drops its cached record).
    await row.getByRole("button", { name: "Disable" }).click();
    await expect.poll(() => row.getByTestId("root-key-status").textContent(), UI).toBe("Disabled");
    expect(await storedRootKey(expiringId)).toMatchObject({ enabled: false });
    expect(await asRootKey(first)).toEqual({ status: 403, error: "key_disabled" });

    await row.getByRole("button", { name: "Enable" }).click();
    await expect.poll(() => row.getByTestId("root-key-status").textContent(), UI).toBe("Enabled");
    expect(await storedRootKey(expiringId)).toMatchObject({ enabled: true });
    expect(await asRootKey(first)).toEqual({ status: 200 });

    // Rotated with an hour's grace: a new secret, shown once; the old one works for the hour.
    await row.getByRole("button", { name: "Rotate" }).click();
    await row.getByLabel("Grace period").selectOption({ label: "1 hour" });
    const before = Date.now();
    await row.getByRole("button", { name: "Rotate now" }).click();
    await page.getByRole("heading", { name: "The new secret of expiring" }).waitFor();
    const after = Date.now();
    const second = (await page.getByTestId("root-key").textContent())?.trim() ?? "";
    expect(second.length).toBeGreaterThan(20);
    expect(second).not.toBe(first);
    expect(await page.getByTestId("root-key-note").textContent()).toMatch(
      /^The old secret \(.+…\) keeps working until \d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC\.$/,
    );
    await expect.poll(() => page.getByRole("row", { name: /expiring/ }).count(), UI).toBe(2);
    const ids = await page
      .getByRole("row", { name: /expiring/ })
      .getByTestId("root-key-id")
      .allTextContents();
    rotatedId = ids.find((id) => id !== expiringId) ?? "";
    expect(rotatedId).toMatch(/^key_/);
    await shot("root-keys-rotated");

    const old = await storedRootKey(expiringId);
    expect(old?.deleted).toBe(false);
    expect(old?.expires).toBeGreaterThanOrEqual(before + HOUR);
    expect(old?.expires).toBeLessThanOrEqual(after + HOUR);
    // The new key keeps the old one's name, grants, state and expiry.
    expect(await storedRootKey(rotatedId)).toMatchObject({ name: "expiring", enabled: true, expires, permissions: ["identity.*.read_identity"] });
    expect(await byId(expiringId).getByTestId("root-key-expires").textContent()).toBe(shownTime(old?.expires ?? 0));
    expect(await byId(rotatedId).getByTestId("root-key-expires").textContent()).toBe(shownTime(expires));
    expect(await asRootKey(second)).toEqual({ status: 200 });
    expect(await asRootKey(first)).toEqual({ status: 200 });

    // Shown once: gone after Done, and not on the page when it is loaded again.
    await page.getByRole("button", { name: "Done" }).click();
    expect(await page.getByTestId("root-key").count()).toBe(0);
    expect(await page.content()).not.toContain(second);
    await page.reload();
    await byId(rotatedId).waitFor();
    expect(await page.content()).not.toContain(second);

    // New grants for the new key, typed one per line; they replace the old ones.
    const rotated = byId(rotatedId);
    await rotated.getByRole("button", { name: "Edit permissions" }).click();
    await rotated.getByLabel("Permissions of expiring").fill("identity.*.read_identity\napis.*.read_api");
    await rotated.getByRole("button", { name: "Save permissions" }).click();
    await expect.poll(() => rotated.locator("td.perms").textContent(), UI).toBe("identity.*.read_identity, apis.*.read_api");
    expect((await storedRootKey(rotatedId))?.permissions).toEqual(["identity.*.read_identity", "apis.*.read_api"]);
  });

  it("shows those changes in the audit log with the operator as actor, filtered and paged", { timeout: 60_000 }, async () => {
    const operatorId = String(await page.evaluate(`fetch("/dashboard/api/session").then((r) => r.json()).then((s) => s.operator.id)`));
    const workspaceId = await page.locator(".switcher select").inputValue();
    await nav("Audit log");
    await page.getByRole("heading", { name: "Audit log", level: 1 }).waitFor();
    await page.getByRole("table").waitFor();
    // The page keeps its own copy of the actions: it must match the server's.
    // A select's name is its label's text and its chosen option's: "Action All actions".
    const action = page.getByRole("combobox", { name: /^Action\b/ });
    expect(await action.locator("option").allTextContents()).toEqual(["All actions", ...AUDIT_ACTIONS]);

    const rows = page.locator(".audit tbody tr");
    const column = (n: number) => rows.locator(`td:nth-child(${n})`).allTextContents();
    const apply = () => page.getByRole("button", { name: "Apply filters" }).click();
    // Newest first.
    const times = await column(1);
    expect(times.length).toBeGreaterThan(5);
    expect([...times].sort().reverse()).toEqual(times);

    // The root key's own records, newest first, each by the operator.
    await page.getByLabel("Resource id").fill(expiringId);
    await apply();
    await expect.poll(() => column(3), UI).toEqual(["root_key.rotate", "root_key.update", "root_key.update", "root_key.create"]);
    expect(await column(2)).toEqual(Array(4).fill(`operator${operatorId}`));
    const descriptions = await column(5);
    expect(descriptions[1]).toContain("(enabled)");
    expect(descriptions[2]).toContain("(disabled)");
    expect(await rows.first().locator("td:nth-child(4)").textContent()).toContain(rotatedId);
    await shot("audit-filtered");

    // Where a change came from: the key disabled on its page (through KeysService with the session).
    await page.getByLabel("Resource id").fill(keyId);
    await action.selectOption("key.update");
    await apply();
    await expect.poll(() => column(3), UI).toEqual(["key.update"]);
    expect(await column(2)).toEqual([`operator${operatorId}`]);
    expect(await column(6)).toEqual([expect.stringMatching(/^req_/)]);
    expect(await column(7)).toEqual(["127.0.0.1"]);

    // By action too: only the rotation.
    await page.getByLabel("Resource id").fill(expiringId);
    await action.selectOption("root_key.rotate");
    await apply();
    await expect.poll(() => column(3), UI).toEqual(["root_key.rotate"]);
    // By action alone: the new key's grants are an update of another resource.
    await page.getByLabel("Resource id").fill("");
    await action.selectOption("root_key.update");
    await apply();
    await expect.poll(() => rows.count(), UI).toBe(3);
    expect(await rows.first().textContent()).toContain(rotatedId);
    expect(await rows.first().locator("td:nth-child(5)").textContent()).toContain("permissions");
    // By actor: the operator's; none by a made-up actor.
    await page.getByLabel("Actor id").fill(operatorId);
    await apply();
    await expect.poll(() => rows.count(), UI).toBe(3);
    await page.getByLabel("Resource id").fill("key_no_such_thing");
    await apply();
    await page.getByText("No audit records match these filters.").waitFor();
    expect(await rows.count()).toBe(0);

    // Cleared, ten a page: "Load more" follows the cursor to the last record.
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => rows.count(), UI).toBe(times.length);
    const [counted] = await h.db.pool.query("SELECT COUNT(*) AS n FROM audit_logs WHERE workspace_id = ?", [workspaceId]);
    const total = Number((counted as Array<{ n: number }>)[0]?.n);
    expect(total).toBeGreaterThan(10);
    await page.getByLabel("Per page").selectOption("10");
    await apply();
    await expect.poll(() => rows.count(), UI).toBe(10);
    for (let shown = 10; shown < total; shown += 10) {
      await page.getByRole("button", { name: "Load more" }).click();
      await expect.poll(() => rows.count(), UI).toBe(Math.min(total, shown + 10));
    }
    expect(await page.getByRole("button", { name: "Load more" }).count()).toBe(0);
    expect(await page.getByTestId("audit-count").textContent()).toBe(`Showing all ${total} records.`);
    const all = await column(1);
    expect([...all].sort().reverse()).toEqual(all);
    await page.getByLabel("Per page").selectOption("50");
    await apply();
    await expect.poll(() => rows.count(), UI).toBe(Math.min(total, 50));
    // The same rows show while the page refreshes: wait for the answer before the picture.
    await expect.poll(() => page.getByRole("status").count(), UI).toBe(0);
    await shot("audit");
  });

  it("shows the not-found page for a malformed link, and an error when sign-out fails", async () => {
    // (The server answers 400 to such a path itself; the page meets one through history.)
    await page.evaluate(`history.pushState(null, "", "/dashboard/apis/%E0%A4%A"); dispatchEvent(new PopStateEvent("popstate"));`);
    await page.getByRole("heading", { name: "Not found" }).waitFor();
    await page.route(
      "**/dashboard/api/sign-out",
      (r) => r.fulfill({ status: 503, contentType: "application/json", body: JSON.stringify({ error: { detail: "Try again later." } }) }),
      { times: 1 },
    );
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("alert").getByText("Sign-out failed: Try again later.").waitFor();
    // Still signed in: the session was not ended.
    expect(await page.getByRole("heading", { name: "Sign in to keyhold" }).count()).toBe(0);
    await page.getByRole("link", { name: "Go to the APIs" }).click();
    await page.getByRole("heading", { name: "APIs" }).waitFor();
  });

  it("signs out", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { name: "Sign in to keyhold" }).waitFor();
    await page.reload();
    await page.getByRole("heading", { name: "Sign in to keyhold" }).waitFor();
  });

  it("fetched nothing from another host and logged no error", () => {
    expect(offHost).toEqual([]);
    expect(errors).toEqual([]);
  });
});

describe("dashboard without a build", () => {
  const h = useHarness();

  it("answers 503 in the error envelope, saying to run npm run build; /dashboard/api/* stays JSON", async () => {
    const app = await buildServer({ config: h.config, deps: h.deps, services: services(h.deps), dashboardDir: path.join(ROOT, "no-such-build") });
    try {
      for (const url of ["/dashboard", "/dashboard/", "/dashboard/apis/x"]) {
        const res = await app.inject({ method: "GET", url });
        expect(res.statusCode, url).toBe(503);
        const body = res.json() as { meta: { requestId: string }; error: { status: number; detail: string } };
        expect(body.error.status).toBe(503);
        expect(body.error.detail).toContain("npm run build");
        expect(body.meta.requestId).toMatch(/^req_/);
      }
      expect((await app.inject({ method: "GET", url: "/dashboard/api/session" })).statusCode).toBe(401);
      expect((await app.inject({ method: "GET", url: "/dashboard/api/unknown" })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });
});
