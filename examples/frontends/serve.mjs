// One command for both pages and the host: `npm start` (after `npm install`).
//
// Bundles copilotkit.jsx and assistant.jsx with esbuild, serves them on http://127.0.0.1:5173/
// and starts `agui serve` (the AGUI environment variable names the command, default `agui`)
// with the example mail agent on 127.0.0.1:8000, allowing this page server's origin.
// Ctrl-C stops both.
import { build } from "esbuild";
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";

const out = join(import.meta.dirname, "dist");
const pages = ["copilotkit", "assistant"];
mkdirSync(out, { recursive: true });
await build({
  entryPoints: Object.fromEntries(pages.map((p) => [p, join(import.meta.dirname, `${p}.jsx`)])),
  bundle: true,
  minify: true,
  outdir: out,
  format: "esm",
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  loader: { ".css": "empty" },
});
for (const page of pages) {
  writeFileSync(join(out, `${page}.html`), `<!doctype html><meta charset="utf-8"><div id="root"></div><script type="module" src="${page}.js"></script>\n`);
}

const origin = "http://127.0.0.1:5173";
createServer((request, response) => {
  const name = new URL(request.url, origin).pathname.slice(1) || "copilotkit.html";
  try {
    const type = name.endsWith(".js") ? "text/javascript" : "text/html";
    response.writeHead(200, { "content-type": type }).end(readFileSync(join(out, name.replace(/\.\./g, ""))));
  } catch {
    response.writeHead(404).end();
  }
}).listen(5173, "127.0.0.1");

const host = spawn(
  process.env.AGUI ?? "agui",
  ["serve", "agui_core.examples.mail:team_email_agent", "--http", "127.0.0.1:8000", "--allow-origin", origin],
  { stdio: "inherit" },
);
host.on("exit", (code) => process.exit(code ?? 0));
console.log(`CopilotKit:   ${origin}/copilotkit.html\nassistant-ui: ${origin}/assistant.html`);
