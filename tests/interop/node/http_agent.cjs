// http_agent: the stock @ag-ui/client HttpAgent, no bridge and no patch, against an agui-core
// host served over HTTP + SSE (agui serve ... --http).
//
//   {"url": "http://host:port/", "threadId", "reloadThreadId", "forwardedProps",
//    "answers": [response per interrupt, in order], "headers"?: {...}}
//   -> {"results": [{"ok", "error", "steps": {name: step}, "view", "warnings"}]}
//
// A step is {"events", "result", "error", "verified", "pending", "inputs"}: the events the
// agent's subscriber saw, what runAgent resolved to (or the error it threw), the verdict of
// enforceEvents() + verifyEvents() on the events, the agent's pendingInterrupts afterwards,
// and the RunAgentInput bodies the agent POSTed. The steps, on "threadId":
//
//   interrupted      a run that ends with interrupts
//   clientRefused    a plain input on the same agent: HttpAgent refuses it itself
//   serverRefused    a plain input from a fresh HttpAgent that does not know the interrupts:
//                    the host answers RUN_ERROR PENDING_INTERRUPTS
//   resumed          the resume buildResumeArray builds from the agent's pendingInterrupts
//   replayed         the same resume sent again (a new runId)
//
// and on "reloadThreadId" (a page that reloads while interrupts are pending):
//
//   reloadInterrupted  a run that ends with interrupts, on one agent
//   reloadResumed      a fresh agent that reads GET /threads/{id} ("view" holds what it got),
//                      takes its messages, state and interrupts, and answers them
"use strict";

delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const { HttpAgent, buildResumeArray, enforceEvents, verifyEvents } = require("@ag-ui/client");
const { from, lastValueFrom, toArray } = require("rxjs");
const { readRequest, writeReply, describe } = require("./batch.cjs");

async function verify(events) {
  try {
    const out = await lastValueFrom(from(events).pipe(enforceEvents(), verifyEvents(), toArray()), {
      defaultValue: [],
    });
    return { ok: true, error: null, count: out.length };
  } catch (err) {
    return { ok: false, error: describe(err), count: null };
  }
}

/** An HttpAgent whose every request body is recorded in `inputs`. */
function newAgent(request, threadId, inputs) {
  return new HttpAgent({
    url: request.url,
    threadId,
    headers: request.headers ?? {},
    fetch: (url, init) => {
      inputs.push(JSON.parse(init.body));
      return fetch(url, init);
    },
  });
}

async function step(agent, inputs, parameters) {
  const events = [];
  const sent = inputs.length;
  let result = null;
  let error = null;
  try {
    const done = await agent.runAgent(parameters, { onEvent: ({ event }) => void events.push(event) });
    result = done.result ?? null;
  } catch (err) {
    error = describe(err);
  }
  return {
    events,
    result,
    error,
    verified: await verify(events),
    pending: agent.pendingInterrupts,
    inputs: inputs.slice(sent),
  };
}

function answersFor(interrupts, answers) {
  return Object.fromEntries(interrupts.map((interrupt, n) => [interrupt.id, answers[n]]));
}

async function journey(request) {
  const steps = {};
  const inputs = [];
  const agent = newAgent(request, request.threadId, inputs);
  steps.interrupted = await step(agent, inputs, { forwardedProps: request.forwardedProps });
  steps.clientRefused = await step(agent, inputs, { forwardedProps: request.forwardedProps });
  const forgetful = newAgent(request, request.threadId, inputs);
  steps.serverRefused = await step(forgetful, inputs, { forwardedProps: request.forwardedProps });
  const resume = buildResumeArray(agent.pendingInterrupts, answersFor(agent.pendingInterrupts, request.answers));
  steps.resumed = await step(agent, inputs, { resume });
  steps.replayed = await step(agent, inputs, { resume });

  const first = newAgent(request, request.reloadThreadId, inputs);
  steps.reloadInterrupted = await step(first, inputs, { forwardedProps: request.forwardedProps });
  // The page reloads: a new agent that knows nothing but the thread id.
  const reloaded = newAgent(request, request.reloadThreadId, inputs);
  const response = await fetch(new URL(`threads/${encodeURIComponent(request.reloadThreadId)}`, request.url), {
    headers: request.headers ?? {},
  });
  const view = { status: response.status, body: await response.json() };
  reloaded.messages = view.body.messages;
  reloaded.state = view.body.agentState ?? {};
  reloaded.pendingInterrupts = view.body.interrupts;
  const reloadResume = buildResumeArray(view.body.interrupts, answersFor(view.body.interrupts, request.answers));
  steps.reloadResumed = await step(reloaded, inputs, { resume: reloadResume });
  return { steps, view };
}

async function main() {
  const request = readRequest();
  const warnings = [];
  console.warn = (...args) => warnings.push(args.map(String).join(" "));
  let result;
  try {
    result = { ok: true, error: null, ...(await journey(request)) };
  } catch (err) {
    result = { ok: false, error: describe(err), steps: {}, view: null };
  }
  writeReply({ results: [{ ...result, warnings }] });
}

main();
