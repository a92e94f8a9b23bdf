// Configuration is checked once at start; every bad value is named in the error.
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "./config.js";

describe("loadConfig", () => {
  it("has working defaults", () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ port: 7070, grpcPort: 7071, databaseUrl: undefined, logLevel: "info" });
    expect(c.docsBaseUrl).toMatch(/^https:\/\//);
  });

  it("reads the documented variables", () => {
    const c = loadConfig({
      PORT: "8080",
      GRPC_PORT: "8081",
      DATABASE_URL: "mysql://u:p@db:3306/kh",
      DOCS_BASE_URL: "https://docs.example/",
      LOG_LEVEL: "WARN",
    });
    expect(c).toMatchObject({ port: 8080, grpcPort: 8081, databaseUrl: "mysql://u:p@db:3306/kh", docsBaseUrl: "https://docs.example", logLevel: "warn" });
  });

  it("names every bad value at once", () => {
    let err: unknown;
    try {
      loadConfig({
        PORT: "http",
        GRPC_PORT: "99999",
        DATABASE_URL: "postgres://x/y",
        LOG_LEVEL: "loud",
        DOCS_BASE_URL: "not a url",
        KEYHOLD_ENCRYPTION_KEY: "short",
      });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join("\n");
    for (const name of ["PORT=", "GRPC_PORT=99999", "DATABASE_URL", "LOG_LEVEL", "DOCS_BASE_URL", "KEYHOLD_ENCRYPTION_KEY"]) expect(problems).toContain(name);
  });

  it("reads TRUST_PROXY: off by default, true, a hop count, or addresses/CIDRs; anything else is refused", () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "false" }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: "true" }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: "2" }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: "127.0.0.1, 10.0.0.0/8,::1" }).trustProxy).toEqual(["127.0.0.1", "10.0.0.0/8", "::1"]);
    for (const bad of ["yes", "10.0.0.0/33", "10.0.0.1,", "lb.internal"]) expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/TRUST_PROXY/);
  });

  it("reads GRPC_REFLECTION: on by default, off with false; anything else is refused", () => {
    expect(loadConfig({}).grpcReflection).toBe(true);
    expect(loadConfig({ GRPC_REFLECTION: "true" }).grpcReflection).toBe(true);
    expect(loadConfig({ GRPC_REFLECTION: " FALSE " }).grpcReflection).toBe(false);
    for (const bad of ["0", "off", "no"]) expect(() => loadConfig({ GRPC_REFLECTION: bad })).toThrow(/GRPC_REFLECTION/);
  });

  describe("key-encryption keys", () => {
    const K1 = Buffer.alloc(32, 1).toString("base64");
    const K2 = Buffer.alloc(32, 2).toString("base64");
    const problemsOf = (env: NodeJS.ProcessEnv, opts?: { needsEncryptionKey?: boolean }): string[] => {
      try {
        loadConfig(env, opts);
        return [];
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as ConfigError).problems;
      }
    };

    it("production (NODE_ENV or KEYHOLD_ENV) without KEYHOLD_ENCRYPTION_KEY is refused, naming the variable and how to generate one", () => {
      for (const env of [{ NODE_ENV: "production" }, { KEYHOLD_ENV: "production" }, { NODE_ENV: "production", KEYHOLD_ENCRYPTION_KEY: "  " }]) {
        const problems = problemsOf(env);
        expect(problems, JSON.stringify(env)).toHaveLength(1);
        expect(problems[0]).toMatch(/^KEYHOLD_ENCRYPTION_KEY is required in production \((NODE_ENV|KEYHOLD_ENV)=production\)/);
        expect(problems[0]).toContain("npx keyhold encryption-key generate");
        expect(problems[0]).not.toContain("\n");
      }
    });

    it("outside production an unset key is allowed (the local file default), and KEYHOLD_ENV=development overrides NODE_ENV", () => {
      expect(loadConfig({})).toMatchObject({ production: false, encryptionKey: undefined, previousEncryptionKeys: [] });
      expect(loadConfig({ NODE_ENV: "test" }).production).toBe(false);
      expect(loadConfig({ NODE_ENV: "production", KEYHOLD_ENV: "development" }).production).toBe(false);
      expect(problemsOf({ KEYHOLD_ENV: "staging" }).join()).toContain("KEYHOLD_ENV");
    });

    it("production with a well-formed key starts; commands that never decrypt may run without one", () => {
      expect(loadConfig({ NODE_ENV: "production", KEYHOLD_ENCRYPTION_KEY: K1 })).toMatchObject({ production: true, encryptionKey: K1 });
      expect(loadConfig({ NODE_ENV: "production" }, { needsEncryptionKey: false }).encryptionKey).toBeUndefined();
    });

    it.each([
      ["too short", Buffer.alloc(16).toString("base64")],
      ["too long", Buffer.alloc(33).toString("base64")],
      ["not base64", "!".repeat(44)],
      ["base64url", Buffer.alloc(32, 0xfb).toString("base64url")],
      ["non-canonical padding bits", `${K1.slice(0, 42)}B=`],
    ])("a malformed key (%s) is refused in every mode, without echoing it", (_label, key) => {
      for (const env of [{}, { NODE_ENV: "production" }]) {
        const problems = problemsOf({ ...env, KEYHOLD_ENCRYPTION_KEY: key });
        expect(problems).toHaveLength(1);
        expect(problems[0]).toMatch(/^KEYHOLD_ENCRYPTION_KEY must be the base64 of exactly 32 bytes/);
        expect(problems[0]).not.toContain(key);
      }
    });

    it("KEYHOLD_PREVIOUS_ENCRYPTION_KEYS is a comma-separated list; a bad entry is named by position, never echoed", () => {
      expect(loadConfig({ KEYHOLD_ENCRYPTION_KEY: K2, KEYHOLD_PREVIOUS_ENCRYPTION_KEYS: ` ${K1} ,, ${K2}` }).previousEncryptionKeys).toEqual([K1, K2]);
      expect(loadConfig({ KEYHOLD_PREVIOUS_ENCRYPTION_KEYS: "" }).previousEncryptionKeys).toEqual([]);
      const problems = problemsOf({ KEYHOLD_ENCRYPTION_KEY: K2, KEYHOLD_PREVIOUS_ENCRYPTION_KEYS: `${K1},secret-but-wrong` });
      expect(problems).toEqual([expect.stringMatching(/^KEYHOLD_PREVIOUS_ENCRYPTION_KEYS entry 2 must be the base64 of exactly 32 bytes/)]);
      expect(problems[0]).not.toContain("secret-but-wrong");
    });
  });

  it("reads the timeouts and the idempotency window, and refuses a headers timeout longer than the request timeout", () => {
    expect(loadConfig({})).toMatchObject({
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      dbConnectTimeoutMs: 5_000,
      dbQueryTimeoutMs: 15_000,
      idempotencyTtlMs: 86_400_000,
    });
    const c = loadConfig({
      HEADERS_TIMEOUT_MS: "2000",
      REQUEST_TIMEOUT_MS: "4000",
      DB_CONNECT_TIMEOUT_MS: "300",
      DB_QUERY_TIMEOUT_MS: "900",
      IDEMPOTENCY_TTL_MS: "60000",
    });
    expect(c).toMatchObject({ headersTimeoutMs: 2000, requestTimeoutMs: 4000, dbConnectTimeoutMs: 300, dbQueryTimeoutMs: 900, idempotencyTtlMs: 60_000 });
    expect(() => loadConfig({ HEADERS_TIMEOUT_MS: "5000", REQUEST_TIMEOUT_MS: "4000" })).toThrow(
      /HEADERS_TIMEOUT_MS \(5000\) must not exceed REQUEST_TIMEOUT_MS \(4000\)/,
    );
    expect(() => loadConfig({ DB_QUERY_TIMEOUT_MS: "0" })).toThrow(/DB_QUERY_TIMEOUT_MS/);
    expect(() => loadConfig({ IDEMPOTENCY_TTL_MS: "soon" })).toThrow(/IDEMPOTENCY_TTL_MS/);
  });

  it("refuses the same port for HTTP and gRPC", () => {
    expect(() => loadConfig({ PORT: "9000", GRPC_PORT: "9000" })).toThrow(/PORT and GRPC_PORT must differ/);
  });

  it("keeps usage counts 90 days unless USAGE_RETENTION_DAYS says otherwise (1-3650)", () => {
    expect(loadConfig({}).usageRetentionDays).toBe(90);
    expect(loadConfig({ USAGE_RETENTION_DAYS: "7" }).usageRetentionDays).toBe(7);
    expect(() => loadConfig({ USAGE_RETENTION_DAYS: "0" })).toThrow(/USAGE_RETENTION_DAYS=0 is out of range \(expected 1-3650\)/);
    expect(() => loadConfig({ USAGE_RETENTION_DAYS: "a month" })).toThrow(/USAGE_RETENTION_DAYS="a month" is not a whole number/);
  });
});
