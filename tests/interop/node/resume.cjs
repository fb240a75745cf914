// resume: {"cases":[{"interrupts":[...], "responses":{...}, "now": "<ISO-8601>"?}, ...]}
//      -> {"results":[{"ok": bool, "error": str|null, "value": [ResumeEntry, ...]|null,
//                      "expired": [bool, ...]}, ...]}
//
// "value" is buildResumeArray(interrupts, responses); "expired" is isInterruptExpired(i, now)
// for each interrupt in order, computed whether or not the build succeeded. Without "now" the
// reference's own default (the current time) applies.
"use strict";

const { buildResumeArray, isInterruptExpired } = require("@ag-ui/client");
const { readRequest, writeReply, describe } = require("./batch.cjs");

function resume({ interrupts, responses, now }) {
  const args = now === undefined || now === null ? [] : [new Date(now)];
  let expired;
  try {
    expired = interrupts.map((interrupt) => isInterruptExpired(interrupt, ...args));
  } catch (err) {
    return { ok: false, error: describe(err), value: null, expired: null };
  }
  try {
    return { ok: true, error: null, value: buildResumeArray(interrupts, responses), expired };
  } catch (err) {
    return { ok: false, error: describe(err), value: null, expired };
  }
}

writeReply({ results: readRequest().cases.map(resume) });
