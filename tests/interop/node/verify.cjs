// verify: {"streams":[[event, ...], ...]}
//      -> {"results":[{"ok": bool, "error": str|null, "events": [...], "warnings": [str, ...]}, ...]}
//
// Each stream goes through the reference client's own inbound checks, in the order its agents
// run them: enforceEvents() (drops unknown event types, strips unknown keys with a warning,
// rejects malformed known fields) then verifyEvents() (the ordering rules). "events" is what came
// out before any error; "warnings" is everything console.warn received while the stream ran,
// so the caller can see whether enforcement stripped anything ("[ag-ui][enforce] Removed ...").
"use strict";

// Enforcement only warns when this is unset; the warnings are the evidence we report.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

const { enforceEvents, verifyEvents } = require("@ag-ui/client");
const { from } = require("rxjs");
const { readRequest, writeReply, describe } = require("./batch.cjs");

function verify(events) {
  return new Promise((resolve) => {
    const out = [];
    const warnings = [];
    const restore = console.warn;
    console.warn = (...args) => warnings.push(args.map(String).join(" "));
    const finish = (ok, error) => {
      console.warn = restore;
      resolve({ ok, error, events: out, warnings });
    };
    try {
      from(events)
        .pipe(enforceEvents(), verifyEvents())
        .subscribe({
          next: (event) => out.push(event),
          error: (err) => finish(false, describe(err)),
          complete: () => finish(true, null),
        });
    } catch (err) {
      finish(false, describe(err));
    }
  });
}

async function main() {
  const results = [];
  // One stream at a time: the console.warn capture is per stream.
  for (const stream of readRequest().streams) results.push(await verify(stream));
  writeReply({ results });
}

main();
