// ws_cycle: a plain Node WebSocket client (the `ws` package) drives an agui-core WebSocket
// host through one interrupt -> resume cycle, on one connection.
//
//   {"url": "ws://...", "threadId", "forwardedProps", "messages"?, "answers": [response, ...]}
//   -> {"results": [{"ok", "error", "inputs", "runs", "verified", "interrupts", "resume",
//                    "closeCode", "warnings"}]}
//
// It connects; sends an input prepared by the reference client (AbstractAgent's
// prepareRunAgentInput, then enforceOutgoingInput, serialized as HttpAgent serializes its
// body); collects frames until RUN_FINISHED or RUN_ERROR; runs them through @ag-ui/client's
// enforceEvents() and verifyEvents(); answers the run's interrupts in order with "answers"
// through buildResumeArray; sends the resume, prepared the same way with the messages and
// state the first run's snapshots carried; collects and verifies the second run; closes.
// "verified" holds, per run, {ok, error, count} from the reference checks.
"use strict";

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const WebSocket = require("ws");
const { AbstractAgent, buildResumeArray, enforceEvents, enforceOutgoingInput, verifyEvents } = require("@ag-ui/client");
const { from, lastValueFrom, toArray } = require("rxjs");
const { readRequest, writeReply, describe } = require("./batch.cjs");

/** Only here for its input preparation: nothing is run through it. */
class InputPreparer extends AbstractAgent {
  run() {
    throw new Error("not used");
  }
}

function connect(url) {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    const frames = [];
    const waiters = [];
    let ended = null;
    const finish = (reason) => {
      if (ended !== null) return;
      ended = reason;
      for (const waiter of waiters.splice(0)) waiter.reject(new Error(reason));
    };
    const closed = new Promise((done) => socket.on("close", (code) => (finish(`closed (${code})`), done(code))));
    socket.on("message", (data, isBinary) => {
      const frame = isBinary ? { binary: true } : JSON.parse(data.toString("utf8"));
      const waiter = waiters.shift();
      if (waiter) waiter.resolve(frame);
      else frames.push(frame);
    });
    socket.on("error", (err) => (finish(err.message), reject(err)));
    socket.on("open", () =>
      resolve({
        send: (object) => socket.send(JSON.stringify(object)),
        receive: () => {
          if (frames.length > 0) return Promise.resolve(frames.shift());
          if (ended !== null) return Promise.reject(new Error(ended));
          return new Promise((res, rej) => waiters.push({ resolve: res, reject: rej }));
        },
        close: () => (socket.close(1000, "done"), closed),
      }),
    );
  });
}

async function collectRun(connection) {
  const events = [];
  for (;;) {
    const event = await connection.receive();
    events.push(event);
    if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") return events;
  }
}

async function verify(events) {
  try {
    const out = await lastValueFrom(from(events).pipe(enforceEvents(), verifyEvents(), toArray()));
    return { ok: true, error: null, count: out.length };
  } catch (err) {
    return { ok: false, error: describe(err), count: null };
  }
}

function prepare(preparer, parameters) {
  return JSON.parse(JSON.stringify(enforceOutgoingInput(preparer.prepareRunAgentInput(parameters))));
}

async function cycle(request) {
  const inputs = [];
  const runs = [];
  const verified = [];
  const preparer = new InputPreparer({ threadId: request.threadId, initialMessages: request.messages ?? [] });
  const connection = await connect(request.url);

  inputs.push(prepare(preparer, { forwardedProps: request.forwardedProps }));
  connection.send(inputs[0]);
  runs.push(await collectRun(connection));
  verified.push(await verify(runs[0]));

  const last = runs[0][runs[0].length - 1];
  const interrupts = last.type === "RUN_FINISHED" && last.outcome?.type === "interrupt" ? last.outcome.interrupts : [];
  let resume = null;
  if (interrupts.length > 0) {
    for (const event of runs[0]) {
      if (event.type === "MESSAGES_SNAPSHOT") preparer.messages = event.messages;
      if (event.type === "STATE_SNAPSHOT") preparer.state = event.snapshot;
    }
    resume = buildResumeArray(interrupts, Object.fromEntries(interrupts.map((i, n) => [i.id, request.answers[n]])));
    inputs.push(prepare(preparer, { resume }));
    connection.send(inputs[1]);
    runs.push(await collectRun(connection));
    verified.push(await verify(runs[1]));
  }
  const closeCode = await connection.close();
  const failed = verified.find((v) => !v.ok);
  return {
    ok: failed === undefined && resume !== null,
    error: failed !== undefined ? failed.error : resume === null ? "the first run raised no interrupt" : null,
    inputs,
    runs,
    verified,
    interrupts,
    resume,
    closeCode,
  };
}

async function main() {
  const request = readRequest();
  const warnings = [];
  console.warn = (...args) => warnings.push(args.map(String).join(" "));
  let result;
  try {
    result = await cycle(request);
  } catch (err) {
    result = { ok: false, error: describe(err), inputs: [], runs: [], verified: [], resume: null };
  }
  writeReply({ results: [{ ...result, warnings }] });
}

main();
