// The house's layers, from the bottom: storage (SQL and Redis) <- domain (the
// operations) <- services (proto messages <-> domain) <- transport <- the doors
// (gateway, grpc) <- server/ (the composition root: builds and wires everything).
// Each layer looks only down. `npm test` runs these rules (docs/architecture.md).
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment: "Files that import each other cannot be understood, tested or moved one at a time.",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "core-imports-nothing",
      severity: "error",
      comment: "core/ holds the values every layer shares (ids, records, AppError): it stands on nothing of ours.",
      from: { path: "^src/core/" },
      to: { path: "^src/", pathNot: "^src/core/" },
    },
    {
      name: "embedded-db-stands-apart",
      severity: "error",
      comment: "The private database server is a process supervisor, not storage access; only the composition root starts it.",
      from: { path: "^src/embedded-db/" },
      to: { path: "^src/", pathNot: "^src/(embedded-db/|paths\\.ts)" },
    },
    {
      name: "storage-looks-down",
      severity: "error",
      comment: "Storage reads and writes rows; it knows no operation, cache, message or door.",
      from: { path: "^src/storage/" },
      to: { path: "^src/(domain|services|transport|gateway|grpc|server|cli|cache|errors|embedded-db|main)" },
    },
    {
      name: "domain-knows-no-transport",
      severity: "error",
      comment: "The operations are the same behind every door: no protobuf, no HTTP, no mysql2 in them.",
      from: { path: "^src/domain/" },
      to: { path: "^src/(services|transport|gateway|grpc|server|cli)|^gen/|node_modules/(@bufbuild|@connectrpc|@grpc|mysql2|fastify|ioredis)/" },
    },
    {
      name: "cache-looks-down",
      severity: "error",
      from: { path: "^src/cache/" },
      to: { path: "^src/(domain|services|transport|gateway|grpc|server|cli)" },
    },
    {
      name: "services-below-the-doors",
      severity: "error",
      from: { path: "^src/services/" },
      to: { path: "^src/(transport|gateway|grpc|server|cli)" },
    },
    {
      name: "errors-below-transport",
      severity: "error",
      comment: "The catalogue and redaction serve every door; they know none of them.",
      from: { path: "^src/errors/" },
      to: { path: "^src/(transport|gateway|grpc|server|cli)" },
    },
    {
      name: "transport-below-the-doors",
      severity: "error",
      from: { path: "^src/transport/" },
      to: { path: "^src/(gateway|grpc|server|cli)" },
    },
    {
      name: "server-is-the-composition-root",
      severity: "error",
      comment: "server/ wires everything together; nothing but the entry points (main.ts, cli/) imports it.",
      from: { path: "^src/", pathNot: "^src/(server|main\\.ts|cli/)" },
      to: { path: "^src/server/" },
    },
    {
      name: "sql-only-in-storage",
      severity: "error",
      comment:
        "mysql2 is imported by storage alone (and by the private server's supervisor, which asks the server it runs which data folder it serves: a health check of its own process, no table read).",
      from: { path: "^src/", pathNot: "^src/(storage|embedded-db)/" },
      to: { path: "node_modules/mysql2/" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "\\.test\\.ts$" },
    tsConfig: { fileName: "tsconfig.json" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".js", ".d.ts"],
    },
  },
};
