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
    const c = loadConfig({ PORT: "8080", GRPC_PORT: "8081", DATABASE_URL: "mysql://u:p@db:3306/kh", DOCS_BASE_URL: "https://docs.example/", LOG_LEVEL: "WARN" });
    expect(c).toMatchObject({ port: 8080, grpcPort: 8081, databaseUrl: "mysql://u:p@db:3306/kh", docsBaseUrl: "https://docs.example", logLevel: "warn" });
  });

  it("names every bad value at once", () => {
    let err: unknown;
    try {
      loadConfig({ PORT: "http", GRPC_PORT: "99999", DATABASE_URL: "postgres://x/y", LOG_LEVEL: "loud", DOCS_BASE_URL: "not a url", KEYHOLD_ENCRYPTION_KEY: "short" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const problems = (err as ConfigError).problems.join("\n");
    for (const name of ["PORT=", "GRPC_PORT=99999", "DATABASE_URL", "LOG_LEVEL", "DOCS_BASE_URL", "KEYHOLD_ENCRYPTION_KEY"]) expect(problems).toContain(name);
  });

  it("refuses the same port for HTTP and gRPC", () => {
    expect(() => loadConfig({ PORT: "9000", GRPC_PORT: "9000" })).toThrow(/PORT and GRPC_PORT must differ/);
  });
});
