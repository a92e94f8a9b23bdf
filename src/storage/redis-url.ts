// The three shapes of Redis that REDIS_URL can name, and the ioredis client for
// each (README, "Running in production"):
//
//   redis://[[user]:password@]host:6379[/db]            one Redis (rediss:// for TLS)
//   redis-cluster://[[user]:password@]host:7001,host:7002,…   a Redis Cluster: any
//       reachable nodes; the client learns the rest and follows MOVED/ASK itself
//   redis-sentinel://[[user]:password@]host:26379,host:26380,…/master[?db=N&sentinelPassword=…]
//       Sentinel: the client asks the sentinels where the master named `master` is,
//       and asks again when it fails over
//
// The URL forms with several hosts are not WHATWG URLs (a comma-separated
// authority), so they are parsed here, and every way they can be wrong has its
// own message: REDIS_URL is checked once at start (src/server/config.ts).
// Parsing only, without ioredis: the CLI reads the configuration too and never
// connects to Redis (the client is made in redis-client.ts).

export interface RedisNode {
  host: string;
  port: number;
}

export type RedisTarget =
  | { mode: "single"; url: string }
  | { mode: "cluster"; nodes: RedisNode[]; username?: string | undefined; password?: string | undefined; tls: boolean }
  | {
      mode: "sentinel";
      sentinels: RedisNode[];
      name: string;
      db: number;
      username?: string | undefined;
      password?: string | undefined;
      sentinelPassword?: string | undefined;
      tls: boolean;
    };

const FORMS = "redis://host:6379[/db], rediss://…, redis-cluster://host:7001,host:7002 or redis-sentinel://host:26379,host:26380/mastername";

/** Reads REDIS_URL; throws an Error whose message says what is wrong and which forms are accepted. */
export function parseRedisUrl(url: string): RedisTarget {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) throw new Error(`REDIS_URL is not a URL (expected ${FORMS})`);
  if (scheme === "redis" || scheme === "rediss") {
    try {
      new URL(url);
    } catch {
      throw new Error(`REDIS_URL is not a URL (expected ${FORMS})`);
    }
    return { mode: "single", url };
  }
  const kind = /^(rediss?)-(cluster|sentinel)$/.exec(scheme);
  if (kind === null) throw new Error(`REDIS_URL must start with redis://, rediss://, redis-cluster:// or redis-sentinel:// (got ${scheme}://)`);
  const tls = kind[1] === "rediss";
  let rest = url.slice(scheme.length + 3);
  let query = "";
  const q = rest.indexOf("?");
  if (q >= 0) {
    query = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  const slash = rest.indexOf("/");
  const authority = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash + 1) : "";
  const at = authority.lastIndexOf("@");
  const userinfo = at >= 0 ? authority.slice(0, at) : undefined;
  const nodes = parseNodes(at >= 0 ? authority.slice(at + 1) : authority, kind[2] === "cluster" ? 6379 : 26379);
  let username: string | undefined;
  let password: string | undefined;
  if (userinfo !== undefined) {
    const colon = userinfo.indexOf(":");
    username = decode(colon >= 0 ? userinfo.slice(0, colon) : userinfo) || undefined;
    password = colon >= 0 ? decode(userinfo.slice(colon + 1)) : undefined;
  }
  // Parameters are percent-decoded like the user name and password ("+" stays "+"); their values are
  // never repeated in an error, since sentinelPassword is a secret.
  const params = new Map<string, string>();
  for (const pair of query === "" ? [] : query.split("&")) {
    const eq = pair.indexOf("=");
    params.set(decode(eq >= 0 ? pair.slice(0, eq) : pair), decode(eq >= 0 ? pair.slice(eq + 1) : ""));
  }
  if (kind[2] === "cluster") {
    if (path !== "") throw new Error("REDIS_URL: a Redis Cluster has only database 0; remove the path after the hosts");
    if (params.size > 0) throw new Error(`REDIS_URL: redis-cluster:// takes no parameters (got ${[...params.keys()].join(", ")})`);
    return { mode: "cluster", nodes, username, password, tls };
  }
  const name = decode(path);
  if (name === "" || name.includes("/")) throw new Error("REDIS_URL: redis-sentinel:// needs the master's name as its path (…/mymaster)");
  for (const p of params.keys()) {
    if (p !== "db" && p !== "sentinelPassword") throw new Error(`REDIS_URL: unknown parameter ${p} (redis-sentinel:// takes db and sentinelPassword)`);
  }
  const dbText = params.get("db") ?? "0";
  if (!/^\d{1,2}$/.test(dbText)) throw new Error(`REDIS_URL: db must be a database number (got ${dbText})`);
  const sentinelPassword = params.get("sentinelPassword") ?? undefined;
  return { mode: "sentinel", sentinels: nodes, name, db: Number(dbText), username, password, sentinelPassword, tls };
}

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new Error("REDIS_URL: the user name, the password or a parameter is not valid percent-encoding");
  }
}

function parseNodes(list: string, defaultPort: number): RedisNode[] {
  const nodes = list.split(",").map((item) => {
    const m = /^(\[[0-9a-f:.]+\]|[^:[\]\s]+)(?::(\d{1,5}))?$/i.exec(item.trim());
    const port = m?.[2] === undefined ? defaultPort : Number(m[2]);
    if (m === null || port < 1 || port > 65535) throw new Error(`REDIS_URL: ${JSON.stringify(item)} is not host:port`);
    return { host: (m[1] as string).replace(/^\[(.*)\]$/, "$1"), port };
  });
  if (nodes.length === 0 || list.trim() === "") throw new Error("REDIS_URL names no host");
  return nodes;
}
