// Baseline B: a bare @grpc/grpc-js unary handler that echoes its request bytes.
import * as grpc from "@grpc/grpc-js";

const identity = (b: Buffer) => b;
const server = new grpc.Server();
server.addService(
  {
    Ping: {
      path: "/bench.Baseline/Ping",
      requestStream: false,
      responseStream: false,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  } as grpc.ServiceDefinition,
  { Ping: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request) },
);
server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  process.stdout.write(`${JSON.stringify({ port })}\n`);
});
process.on("SIGTERM", () => server.tryShutdown(() => process.exit(0)));
