// A server on the official TypeScript SDK v2 (npm `@modelcontextprotocol/server`, pinned
// in package.json), served the SDK's dual-era way (`serveStdio`): the first request
// decides the era of the process; a `server/discover` opens an optimistic modern
// instance that a handshake-era request after it discards (the process then serves the
// handshake era). One tool, `echo`.
//
//   node ts_v2_server.mjs --peers DIR [--delay MS]
//
// DIR is the npm peer install (.cache/peers). With --delay, stdin is not read at all
// for MS milliseconds (a slow start, like a server that loads its configuration or
// reaches a service first): what the client sends meanwhile waits in the pipe.
import { createRequire } from "node:module";
import { join } from "node:path";

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1];
}

const require = createRequire(join(option("peers", "."), "package.json"));
const { McpServer } = require("@modelcontextprotocol/server");
const { serveStdio } = require("@modelcontextprotocol/server/stdio");
const { z } = require("zod");

function factory() {
  const server = new McpServer({ name: "ts-v2-peer", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.registerTool(
    "echo",
    { description: "Echo the message back", inputSchema: z.object({ message: z.string() }) },
    async ({ message }) => ({ content: [{ type: "text", text: message }] }),
  );
  return server;
}

setTimeout(() => serveStdio(factory), Number(option("delay", "0")));
