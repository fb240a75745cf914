// A CopilotKit runtime (@copilotkit/runtime v2) on loopback that proxies to an agui-core host.
//
//   node runtime.mjs HOST_URL PAGE_ORIGIN  -> prints {"url": "http://127.0.0.1:PORT/api/copilotkit"}
//
// The agent named "default" is an HttpAgent pointed at the host; pages reach it through the
// runtime (CopilotKitProvider runtimeUrl=...). Runs until killed.
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

// The runtime's own @ag-ui/client (0.0.59), not the one at the top of node_modules.
const { HttpAgent } = createRequire(import.meta.resolve("@copilotkit/runtime/v2"))("@ag-ui/client");
const [hostUrl, pageOrigin] = process.argv.slice(2);
const listener = createCopilotNodeListener({
  runtime: new CopilotRuntime({ agents: { default: new HttpAgent({ url: hostUrl }) } }),
  basePath: "/api/copilotkit",
  cors: { origin: pageOrigin },
  activateChannels: false,
});
const server = createServer(listener);
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${server.address().port}/api/copilotkit` }) + "\n");
});
