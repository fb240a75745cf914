// Shared plumbing of the interop scripts: one JSON request on stdin, one JSON reply on stdout.
//
// The reference packages may log through console.*; stdout carries the reply, so everything a
// library prints is diverted to stderr (console.warn can be captured per case by the caller).
"use strict";

const fs = require("node:fs");

for (const name of ["log", "info", "debug", "warn", "error"]) {
  console[name] = (...args) => process.stderr.write(`[${name}] ${args.map(String).join(" ")}\n`);
}

/** Reads the whole of stdin as JSON. */
function readRequest() {
  return JSON.parse(fs.readFileSync(0, "utf8"));
}

/** Writes the reply and exits cleanly, even if a library left a timer behind. */
function writeReply(reply) {
  fs.writeSync(1, JSON.stringify(reply));
  process.exit(0);
}

/** A one-line message for any thrown value. */
function describe(err) {
  if (err && typeof err === "object" && Array.isArray(err.issues)) {
    // A ZodError: name each failing path, which is what the Python side compares and prints.
    return err.issues
      .map((issue) => `${issue.path.length ? issue.path.join(".") : "<root>"}: ${issue.message}`)
      .join("; ");
  }
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  return String(err);
}

module.exports = { readRequest, writeReply, describe };
