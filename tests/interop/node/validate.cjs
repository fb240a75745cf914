// validate: {"cases":[{"schema": "<export of @ag-ui/core/schemas>", "value": <json>}, ...]}
//        -> {"results":[{"ok": bool, "error": str|null, "value": <zod's parsed output>|null}, ...]}
"use strict";

const schemas = require("@ag-ui/core/schemas");
const { readRequest, writeReply, describe } = require("./batch.cjs");

function validate({ schema, value }) {
  const zodSchema = Object.prototype.hasOwnProperty.call(schemas, schema) ? schemas[schema] : undefined;
  if (zodSchema === undefined || typeof zodSchema.safeParse !== "function") {
    return { ok: false, error: `no schema named ${JSON.stringify(schema)} in @ag-ui/core/schemas`, value: null };
  }
  const parsed = zodSchema.safeParse(value);
  if (parsed.success) return { ok: true, error: null, value: parsed.data === undefined ? null : parsed.data };
  return { ok: false, error: describe(parsed.error), value: null };
}

writeReply({ results: readRequest().cases.map(validate) });
