// A gRPC load generator (one process): `connections` concurrent callers over a few
// channels, for `seconds`; prints {requests, rps, p50, p99, errors} as JSON.
import * as grpc from "@grpc/grpc-js";

const [target, path, bodyB64, auth, connections, seconds, warmup] = process.argv.slice(2) as [string, string, string, string, string, string, string];
const body = Buffer.from(bodyB64, "base64");
const identity = (b: Buffer) => b;
const channels = Array.from({ length: 4 }, (_, i) => new grpc.Client(target, grpc.credentials.createInsecure(), { "grpc.channel_id": i } as never));
const metadata = new grpc.Metadata();
if (auth !== "-") metadata.set("authorization", auth);

function call(client: grpc.Client): Promise<void> {
  return new Promise((resolve, reject) =>
    client.makeUnaryRequest(path, identity, identity, body, metadata, (err) => (err ? reject(err) : resolve())),
  );
}

async function run(ms: number, record: boolean) {
  const latencies: number[] = [];
  let errors = 0;
  const end = Date.now() + ms;
  await Promise.all(
    Array.from({ length: Number(connections) }, async (_, i) => {
      const client = channels[i % channels.length] as grpc.Client;
      while (Date.now() < end) {
        const t = process.hrtime.bigint();
        try {
          await call(client);
        } catch {
          errors++;
        }
        if (record) latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
      }
    }),
  );
  return { latencies, errors };
}

await run(Number(warmup) * 1000, false);
const { latencies, errors } = await run(Number(seconds) * 1000, true);
latencies.sort((a, b) => a - b);
const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((latencies.length * p) / 100))] ?? 0;
process.stdout.write(
  `${JSON.stringify({ requests: latencies.length, rps: latencies.length / Number(seconds), p50: pct(50), p99: pct(99), errors })}\n`,
);
for (const c of channels) c.close();
process.exit(0);
