// agent_cycle: the reference client's own agent class runs an interrupt -> resume cycle
// against an agui-core host.
//
//   {"wire": <see wire.cjs>, "cases": [{"threadId", "forwardedProps", "answers": [response, ...],
//     "messages"?, "state"?, "tools"?, "context"?}, ...]}
//   -> {"results": [{"ok", "error", "inputs", "runs", "results", "interrupts", "resume",
//                    "pending", "messages", "state", "warnings"}, ...], "wire": {...}}
//
// Each case is one AbstractAgent of @ag-ui/client (the class HttpAgent extends) whose run()
// sends its input over the wire the way HttpAgent sends its request body
// (JSON.stringify(enforceOutgoingInput(input))) and streams back the events. runAgent()
// prepares the input (prepareRunAgentInput), checks it against the open interrupts, and runs
// the events through enforceEvents, verifyEvents and its reducer. When the first run ends
// with interrupts, the case answers them in order with "answers", builds the resume with
// buildResumeArray(agent.pendingInterrupts, responses) and runs again on the same thread.
// "inputs" is what went on the wire, "runs" the events that came back (one list per run),
// "results" what runAgent returned per run ({result, newMessages} or {error}), "pending"
// agent.pendingInterrupts at the end. Cases run one after another on one wire.
"use strict";

// Enforcement only warns when this is unset; the warnings are the evidence we report.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const { AbstractAgent, buildResumeArray, enforceOutgoingInput } = require("@ag-ui/client");
const { Observable } = require("rxjs");
const { readRequest, writeReply, describe } = require("./batch.cjs");
const { openWire } = require("./wire.cjs");

/** HttpAgent's run() with a wire in place of fetch. */
class WireAgent extends AbstractAgent {
  run(input) {
    return new Observable((subscriber) => {
      const body = JSON.parse(JSON.stringify(enforceOutgoingInput(input)));
      const events = [];
      this.sent.push(body);
      this.received.push(events);
      this.wire.send(body);
      (async () => {
        for (;;) {
          const event = await this.wire.next();
          events.push(event);
          subscriber.next(event);
          if (event.type === "RUN_FINISHED" || event.type === "RUN_ERROR") break;
        }
        subscriber.complete();
      })().catch((err) => subscriber.error(err));
    });
  }
}

async function attempt(runAgent) {
  try {
    const { result, newMessages } = await runAgent();
    return { ok: true, result: result === undefined ? null : result, newMessages };
  } catch (err) {
    return { ok: false, error: describe(err) };
  }
}

async function cycle(wire, spec) {
  const warnings = [];
  const restore = console.warn;
  console.warn = (...args) => warnings.push(args.map(String).join(" "));
  try {
    const agent = new WireAgent({
      threadId: spec.threadId,
      initialMessages: spec.messages ?? [],
      initialState: spec.state ?? {},
    });
    agent.wire = wire;
    agent.sent = [];
    agent.received = [];
    const parameters = { tools: spec.tools ?? [], context: spec.context ?? [] };
    const results = [await attempt(() => agent.runAgent({ ...parameters, forwardedProps: spec.forwardedProps }))];
    const interrupts = structuredClone(agent.pendingInterrupts);
    let resume = null;
    if (results[0].ok && interrupts.length > 0) {
      const responses = Object.fromEntries(interrupts.map((interrupt, n) => [interrupt.id, spec.answers[n]]));
      resume = buildResumeArray(interrupts, responses);
      results.push(await attempt(() => agent.runAgent({ ...parameters, resume })));
    }
    const failed = results.find((r) => !r.ok);
    return {
      ok: failed === undefined,
      error: failed === undefined ? null : failed.error,
      inputs: agent.sent,
      runs: agent.received,
      results,
      interrupts,
      resume,
      pending: agent.pendingInterrupts,
      messages: agent.messages,
      state: agent.state === undefined ? null : agent.state,
      warnings,
    };
  } catch (err) {
    return { ok: false, error: describe(err), inputs: [], runs: [], results: [], warnings };
  } finally {
    console.warn = restore;
  }
}

async function main() {
  const request = readRequest();
  const wire = await openWire(request.wire);
  const results = [];
  for (const spec of request.cases) results.push(await cycle(wire, spec));
  writeReply({ results, wire: await wire.close() });
}

main().catch((err) => {
  process.stderr.write(`agent_cycle: ${describe(err)}\n`);
  process.exit(1);
});
