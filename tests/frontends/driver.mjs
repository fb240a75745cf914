// A browser the Python tests steer one step at a time: Debian's Chromium through playwright-core.
//
//   node driver.mjs   (then one JSON step per line on stdin, one JSON reply per line on stdout)
//
// The pages come from the bundle directory, served by a static server of the driver's own on
// 127.0.0.1 (a page on loopback may call a host on loopback: Chromium's local network access
// rules let nothing else through), whose origin the host must allow. Every request to a host
// other than 127.0.0.1 is aborted, so a page phones nowhere. The driver records the body of
// every POST the page sends (the inputs a host or runtime received) and what the page printed
// on its console. Steps:
//
//   {"do": "serve", "bundle": DIR} -> {"origin": "http://127.0.0.1:PORT"}
//   {"do": "open", "page": "copilotkit", "query": "agent=...&thread=..."}
//   {"do": "click", "testid": T} / {"do": "fill", "testid": T, "value": V}
//   {"do": "wait", "testid": T, "text"?: S, "gone"?: true, "timeout"?: ms}
//   {"do": "reload"} / {"do": "read"} (the posted inputs, console lines, window.__agui)
//   {"do": "close"}
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { createInterface } from "node:readline";

const TIMEOUT = 20000;
let browser = null;
let page = null;
let origin = null;
const posted = [];
const consoleLines = [];

const types = { ".js": "text/javascript", ".html": "text/html", ".css": "text/css", ".map": "application/json" };

async function serve(step) {
  const server = createServer((request, response) => {
    const name = new URL(request.url, "http://x").pathname.slice(1);
    const ext = name.slice(name.lastIndexOf("."));
    try {
      const body = readFileSync(join(step.bundle, name));
      response.writeHead(200, { "content-type": types[ext] ?? "text/plain" }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  server.unref();
  origin = `http://127.0.0.1:${server.address().port}`;
  return { origin };
}

async function open(step) {
  if (browser === null) {
    browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
  }
  const context = await browser.newContext();
  await context.route(
    (url) => url.hostname !== "127.0.0.1",
    (route) => route.abort(),
  );
  page = await context.newPage();
  page.on("console", (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => consoleLines.push(`pageerror: ${error.message}`));
  page.on("request", (request) => {
    if (request.method() === "POST" && !request.url().startsWith(origin)) {
      let body = request.postData();
      try {
        body = JSON.parse(body);
      } catch {}
      posted.push({ url: request.url(), body });
    }
  });
  await page.goto(`${origin}/${step.page}.html?${step.query ?? ""}`);
  return {};
}

async function wait(step) {
  const locator = page.getByTestId(step.testid);
  const timeout = step.timeout ?? TIMEOUT;
  if (step.gone) {
    await locator.first().waitFor({ state: "detached", timeout });
  } else if (step.text !== undefined) {
    await page.waitForFunction(
      ([id, text]) => [...document.querySelectorAll(`[data-testid="${id}"]`)].some((e) => e.textContent.includes(text)),
      [step.testid, step.text],
      { timeout },
    );
  } else {
    await locator.first().waitFor({ state: "visible", timeout });
  }
  return { text: await locator.first().textContent().catch(() => null) };
}

async function read() {
  const agui = page ? await page.evaluate(() => window.__agui ?? null).catch(() => null) : null;
  return { posted, console: consoleLines, agui };
}

const handlers = {
  serve,
  open,
  wait,
  read,
  click: async (step) => (await page.getByTestId(step.testid).click({ timeout: TIMEOUT }), {}),
  fill: async (step) => (await page.getByTestId(step.testid).fill(step.value, { timeout: TIMEOUT }), {}),
  reload: async () => (await page.reload(), {}),
  close: async () => {
    if (browser) await browser.close();
    browser = null;
    return {};
  },
};

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const step = JSON.parse(line);
  let reply;
  try {
    reply = { ok: true, ...(await handlers[step.do](step)) };
  } catch (err) {
    reply = { ok: false, error: String(err?.stack ?? err), ...(await read().catch(() => ({}))) };
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
  if (step.do === "close") break;
}
if (browser) await browser.close();
process.exit(0); // the page server and stdin would keep the process alive
