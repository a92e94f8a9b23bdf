// A TCP proxy between keyhold and its database, so a test can take the database
// away the two ways networks do: refused (nothing listens, open connections are
// cut) and blackholed (connections are accepted and kept, but nothing passes in
// either direction, so a client waits until its own timeout says otherwise).
import net from "node:net";

export type ProxyMode = "forward" | "refuse" | "blackhole";

interface Pair {
  client: net.Socket;
  upstream: net.Socket | undefined;
  /** A blackholed pair stays open but silent for good, as after a real partition. */
  dead: boolean;
}

export class TcpProxy {
  private server: net.Server | undefined;
  private readonly pairs = new Set<Pair>();
  private current: ProxyMode = "forward";

  private constructor(
    readonly port: number,
    private readonly targetHost: string,
    private readonly targetPort: number,
    private readonly targetPath?: string,
  ) {}

  /**
   * A proxy in front of a mysql:// URL's server (host:port, or the unix socket of
   * a `socketPath` parameter, as the tests' private server has), and that URL
   * rewritten to go through it.
   */
  static async inFrontOf(databaseUrl: string): Promise<{ proxy: TcpProxy; url: string }> {
    const direct = new URL(databaseUrl);
    const socketPath = direct.searchParams.get("socketPath") ?? direct.searchParams.get("socket") ?? undefined;
    const proxy = await TcpProxy.start(direct.hostname, Number(direct.port || 3306), socketPath);
    const url = new URL(direct);
    url.hostname = "127.0.0.1";
    url.port = String(proxy.port);
    url.searchParams.delete("socketPath");
    url.searchParams.delete("socket");
    return { proxy, url: url.toString() };
  }

  /** Listens on a free port of 127.0.0.1 and forwards to host:port (or to a unix socket path). */
  static async start(targetHost: string, targetPort: number, targetPath?: string): Promise<TcpProxy> {
    const probe = net.createServer();
    const port = await new Promise<number>((resolve, reject) => {
      probe.once("error", reject);
      probe.listen(0, "127.0.0.1", () => resolve((probe.address() as net.AddressInfo).port));
    });
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const proxy = new TcpProxy(port, targetHost, targetPort, targetPath);
    await proxy.listen();
    return proxy;
  }

  /**
   * forward: pass traffic on new connections (blackholed ones stay silent).
   * refuse: stop listening (ECONNREFUSED) and cut every open connection.
   * blackhole: keep every connection, new ones too, open and silent.
   */
  async setMode(mode: ProxyMode): Promise<void> {
    const was = this.current;
    this.current = mode;
    if (mode === "refuse") {
      for (const p of this.pairs) this.drop(p);
      await this.stopListening();
      return;
    }
    if (mode === "blackhole") for (const p of this.pairs) this.silence(p);
    if (was === "refuse") await this.listen();
  }

  async close(): Promise<void> {
    for (const p of this.pairs) this.drop(p);
    await this.stopListening();
  }

  private async listen(): Promise<void> {
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.port, "127.0.0.1", () => resolve());
    });
    this.server = server;
  }

  private async stopListening(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    const pair: Pair = { client, upstream: undefined, dead: false };
    this.pairs.add(pair);
    client.on("error", () => this.drop(pair));
    client.on("close", () => this.drop(pair));
    if (this.current === "blackhole") {
      pair.dead = true;
      return;
    }
    const upstream = this.targetPath === undefined ? net.connect(this.targetPort, this.targetHost) : net.connect(this.targetPath);
    pair.upstream = upstream;
    // The database hanging up is passed on, unless the pair is blackholed (then the client hears nothing).
    const upstreamGone = () => {
      if (!pair.dead) this.drop(pair);
    };
    upstream.on("error", upstreamGone);
    upstream.on("close", upstreamGone);
    client.on("data", (d) => {
      if (!pair.dead) upstream.write(d);
    });
    upstream.on("data", (d) => {
      if (!pair.dead) client.write(d);
    });
  }

  private silence(p: Pair): void {
    p.dead = true;
    // The database side is closed (its transactions roll back); the client side hears nothing.
    p.upstream?.destroy();
    p.upstream = undefined;
  }

  private drop(p: Pair): void {
    this.pairs.delete(p);
    p.client.destroy();
    p.upstream?.destroy();
  }
}
