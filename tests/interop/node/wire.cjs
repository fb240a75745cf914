// A wire to an agui-core host, for the end-to-end scripts: JSON objects out, events in.
//
//   {"kind": "ws", "url": "ws://127.0.0.1:PORT"}   one text frame per object, with the `ws` package
//   {"kind": "stdio", "command": [...], "cwd": "..."}  a host process started here, in JSON lines
//
// openWire(spec) resolves to {send(object), next(), nextRun(), close()}: next() resolves to the
// next event; nextRun() to the events of one run, up to its RUN_FINISHED or RUN_ERROR. Both
// reject if the wire ends first. close() resolves to the WebSocket's close code or the host
// process's exit status.
"use strict";

const { spawn } = require("node:child_process");
const WebSocket = require("ws");

/** Frames in arrival order, handed to whoever waits for the next one. */
class FrameQueue {
  constructor() {
    this.frames = [];
    this.waiters = [];
    this.ended = null;
  }

  push(frame) {
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve(frame);
    else this.frames.push(frame);
  }

  end(reason) {
    if (this.ended !== null) return;
    this.ended = reason;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new Error(reason));
  }

  next() {
    if (this.frames.length > 0) return Promise.resolve(this.frames.shift());
    if (this.ended !== null) return Promise.reject(new Error(this.ended));
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  async nextRun() {
    const events = [];
    for (;;) {
      const event = await this.next();
      events.push(event);
      if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") return events;
    }
  }
}

function parseFrame(queue, text) {
  try {
    queue.push(JSON.parse(text));
  } catch (err) {
    queue.end(`the host sent something that is not JSON: ${JSON.stringify(text.slice(0, 200))}`);
  }
}

function openWebSocket(url) {
  return new Promise((resolve, reject) => {
    const queue = new FrameQueue();
    const socket = new WebSocket(url);
    let closed = null;
    const whenClosed = new Promise((done) => {
      socket.on("close", (code) => {
        closed = code;
        queue.end(`the WebSocket closed (code ${code})`);
        done(code);
      });
    });
    socket.on("message", (data, isBinary) => {
      if (isBinary) queue.end("the host sent a binary frame");
      else parseFrame(queue, data.toString("utf8"));
    });
    socket.on("error", (err) => {
      queue.end(`WebSocket error: ${err.message}`);
      reject(err);
    });
    socket.on("open", () =>
      resolve({
        kind: "ws",
        send: (object) => socket.send(JSON.stringify(object)),
        next: () => queue.next(),
        nextRun: () => queue.nextRun(),
        close: async () => {
          if (closed === null) socket.close(1000, "done");
          return { closeCode: await whenClosed };
        },
      }),
    );
  });
}

function openStdio(command, cwd) {
  const queue = new FrameQueue();
  const child = spawn(command[0], command.slice(1), { cwd, stdio: ["pipe", "pipe", "inherit"] });
  const whenExited = new Promise((done) => child.on("exit", (code, signal) => done(code ?? signal)));
  child.on("error", (err) => queue.end(`could not start the host: ${err.message}`));
  let pending = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    pending += chunk;
    let end;
    while ((end = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, end).trim();
      pending = pending.slice(end + 1);
      if (line) parseFrame(queue, line);
    }
  });
  child.stdout.on("end", () => queue.end("the host process closed its output"));
  return Promise.resolve({
    kind: "stdio",
    send: (object) => child.stdin.write(`${JSON.stringify(object)}\n`),
    next: () => queue.next(),
    nextRun: () => queue.nextRun(),
    close: async () => {
      child.stdin.end();
      return { exitCode: await whenExited };
    },
  });
}

/** Opens the wire ``spec`` describes (see the top of this file). */
function openWire(spec) {
  if (spec.kind === "ws") return openWebSocket(spec.url);
  if (spec.kind === "stdio") return openStdio(spec.command, spec.cwd);
  return Promise.reject(new Error(`no wire of kind ${JSON.stringify(spec.kind)}`));
}

module.exports = { openWire };
