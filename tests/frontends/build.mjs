// Bundle the test pages with esbuild: node build.mjs OUTDIR [PAGE...] -> OUTDIR/PAGE.js and
// OUTDIR/PAGE.html for each page of pages/ (PAGE.jsx), or those named.
import { build } from "esbuild";
import { readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2];
const pages = process.argv.slice(3).length
  ? process.argv.slice(3)
  : readdirSync(join(here, "pages")).filter((f) => f.endsWith(".jsx")).map((f) => f.slice(0, -4));
await build({
  entryPoints: Object.fromEntries(pages.map((p) => [p, join(here, "pages", `${p}.jsx`)])),
  bundle: true,
  outdir: out,
  format: "esm",
  jsx: "automatic",
  define: { "process.env.NODE_ENV": '"production"' },
  loader: { ".css": "empty" },
  logLevel: "error",
  minify: false,
});
for (const page of pages) {
  writeFileSync(
    join(out, `${page}.html`),
    `<!doctype html><meta charset="utf-8"><title>${page}</title><div id="root"></div><script type="module" src="${page}.js"></script>\n`,
  );
}
