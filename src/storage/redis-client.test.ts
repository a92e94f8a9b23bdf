// REDIS_URL's three forms, and a message naming what is wrong for each way one can be wrong.
import { describe, expect, it } from "vitest";
import { loadConfig } from "../server/config.js";
import { parseRedisUrl } from "./redis-client.js";

describe("parseRedisUrl", () => {
  it("redis:// and rediss:// are one Redis, passed to ioredis as they are", () => {
    expect(parseRedisUrl("redis://127.0.0.1:6379")).toEqual({ mode: "single", url: "redis://127.0.0.1:6379" });
    expect(parseRedisUrl("rediss://:p%40ss@cache.internal:6380/2")).toEqual({ mode: "single", url: "rediss://:p%40ss@cache.internal:6380/2" });
  });

  it("redis-cluster:// lists the nodes to start from, with credentials and TLS", () => {
    expect(parseRedisUrl("redis-cluster://10.0.0.1:7001,10.0.0.2:7002, node-3")).toEqual({
      mode: "cluster",
      nodes: [
        { host: "10.0.0.1", port: 7001 },
        { host: "10.0.0.2", port: 7002 },
        { host: "node-3", port: 6379 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseRedisUrl("rediss-cluster://app:s%3Acret%40x@[::1]:7001")).toEqual({
      mode: "cluster",
      nodes: [{ host: "::1", port: 7001 }],
      username: "app",
      password: "s:cret@x",
      tls: true,
    });
  });

  it("redis-sentinel:// lists the sentinels and names the master; db and sentinelPassword are optional", () => {
    expect(parseRedisUrl("redis-sentinel://:pw@s1:26379,s2/mymaster?db=3&sentinelPassword=s%26p+q")).toEqual({
      mode: "sentinel",
      sentinels: [
        { host: "s1", port: 26379 },
        { host: "s2", port: 26379 },
      ],
      name: "mymaster",
      db: 3,
      username: undefined,
      password: "pw",
      sentinelPassword: "s&p+q",
      tls: false,
    });
  });

  it.each([
    ["cache:6379", "REDIS_URL is not a URL"],
    ["http://cache:6379", "must start with redis://, rediss://, redis-cluster:// or redis-sentinel:// (got http://)"],
    ["redis-cluster://", '"" is not host:port'],
    ["redis-cluster://a:7001,,b:7002", '"" is not host:port'],
    ["redis-cluster://a:70010", '"a:70010" is not host:port'],
    ["redis-cluster://a:0", '"a:0" is not host:port'],
    ["redis-cluster://a:7001/1", "a Redis Cluster has only database 0"],
    ["redis-cluster://a:7001?db=1", "redis-cluster:// takes no parameters (got db)"],
    ["redis-sentinel://s1:26379", "needs the master's name as its path"],
    ["redis-sentinel://s1:26379/a/b", "needs the master's name as its path"],
    ["redis-sentinel://s1/m?db=x", "db must be a database number (got x)"],
    ["redis-sentinel://s1/m?timeout=1", "unknown parameter timeout"],
    ["redis-sentinel://u:%zz@s1/m", "not valid percent-encoding"],
  ])("%s is refused: %s", (url, message) => {
    expect(() => parseRedisUrl(url)).toThrow(message);
  });

  it("an error never repeats a parameter's value (sentinelPassword is a secret)", () => {
    expect(() => parseRedisUrl("redis-cluster://a:7001?sentinelPassword=hunter2")).toThrow(/takes no parameters \(got sentinelPassword\)$/);
    expect(() => parseRedisUrl("redis-sentinel://s1/m?sentinelPasswd=hunter2")).toThrow(
      /^REDIS_URL: unknown parameter sentinelPasswd \(redis-sentinel:\/\/ takes db and sentinelPassword\)$/,
    );
  });

  it("a wrong REDIS_URL stops the start with that message", () => {
    expect(() => loadConfig({ REDIS_URL: "redis-cluster://a:7001/1" })).toThrow(/REDIS_URL: a Redis Cluster has only database 0/);
    expect(loadConfig({ REDIS_URL: "redis-sentinel://s1,s2/mymaster" }).redisUrl).toBe("redis-sentinel://s1,s2/mymaster");
    // How long a call may take before the fallback answers: 200 ms unless set, within 10 ms to 60 s.
    expect(loadConfig({}).redisCommandTimeoutMs).toBe(200);
    expect(loadConfig({ REDIS_COMMAND_TIMEOUT_MS: "750" }).redisCommandTimeoutMs).toBe(750);
    expect(() => loadConfig({ REDIS_COMMAND_TIMEOUT_MS: "5" })).toThrow(/REDIS_COMMAND_TIMEOUT_MS/);
  });
});
