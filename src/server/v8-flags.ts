// V8 settings of the server process, set before any other module is evaluated
// (main.ts imports this first).
//
// Allocation-site pretenuring off: under gRPC load V8 decided, after a few
// scavenges that found many calls in flight, to allocate grpc-js's and
// Node's per-call objects (HTTP/2 streams, intercepting calls, metadata)
// straight in the old generation. They die within milliseconds, so the old
// generation filled at ~70 MB/s and every scavenge took 4-5 ms instead of ~1.
// Measured here on a hot gRPC verifyKey (h2load, 50 streams, server on one
// core): server CPU 100-105 µs a call with pretenuring, 86-89 without, in
// alternating runs; JSON verifyKey unchanged (31 vs 31 µs). See bench/README.md.
import v8 from "node:v8";

v8.setFlagsFromString("--no-allocation-site-pretenuring");
