// The console's JSON Schema checks: the subset of draft-07 that responseSchema documents use,
// with the host's rules (agui_core/protocol/payload.py: fastjsonschema, formats asserted), so
// that the console sends nothing the host would refuse. The host stays the authority: what this
// file does not know (a format it has no rule for, an external $ref) it lets through, and the
// host's verdict is shown if it refuses.
//
// validate(schema, value) returns every problem found, each {path, message}, path being the
// list of keys and indexes from the payload's root. An empty list: the value passes.

const DATE =
  "\\d{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|02-(?:0[1-9]|1\\d|2[0-8]))" +
  "|(?:\\d\\d(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29";

// The formats the host asserts, with its own patterns (fastjsonschema's), and how to say them.
export const FORMATS = {
  email: [/^(?!.*\.\..*@)[^@.][^@]*(?<!\.)@[^@]+\.[^@]+$/, "an email address"],
  date: [new RegExp(`^(?:${DATE})$`), "a date (YYYY-MM-DD)"],
  "date-time": [
    new RegExp(
      `^(?:${DATE})(t|T)(?:[01]\\d|2[0-3]):[0-5]\\d:(?:[0-5]\\d|60)(?:\\.\\d+)?` +
        "(?:[+-](?:[01]\\d|2[0-3]):[0-5]\\d|[+-](?:[01]\\d|2[0-3])[0-5]\\d|z|Z)$",
    ),
    "a date and time with a time zone (2026-12-31T09:30:00Z)",
  ],
  time: [/^([01]?\d|2[0-3]):([0-5]?\d)(?::([0-5]?\d|60)(?:\.(\d{1,6}))?([zZ]|[+-](?:[01]\d|2[0-3]):[0-5]\d)?)?$/, "a time (09:30)"],
  hostname: [
    /^(([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]{0,61}[a-zA-Z0-9])\.)*([A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]{0,61}[A-Za-z0-9])$/,
    "a host name",
  ],
  ipv4: [/^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/, "an IPv4 address"],
  uri: [/^\w+:(\/?\/?)[^\s]+$/, "an address (URI)"],
};

export function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value; // string, boolean, object
}

function hasType(value, type) {
  const found = typeOf(value);
  if (type === "number") return found === "number" || found === "integer";
  return found === type;
}

export function equal(a, b) {
  if (a === b) return true;
  const ta = typeOf(a);
  if (ta !== typeOf(b) && !(typeof a === "number" && typeof b === "number")) return false;
  if (ta === "array") return a.length === b.length && a.every((item, i) => equal(item, b[i]));
  if (ta === "object") {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && equal(a[k], b[k]));
  }
  return false;
}

const TYPE_WORDS = {
  string: "text",
  number: "a number",
  integer: "a whole number",
  boolean: "yes or no",
  object: "an object",
  array: "a list",
  null: "empty",
};

function show(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

// The schema a local "$ref" ("#/definitions/x", "#") points to, or undefined.
function resolve(root, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  let node = root;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    const key = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, key)) return undefined;
    node = node[key];
  }
  return node;
}

export function validate(schema, value, root = schema, path = [], depth = 0) {
  const problems = [];
  const fail = (message, at = path) => problems.push({ path: at, message });
  if (schema === true || schema === undefined || schema === null) return problems;
  if (schema === false) {
    fail("is not allowed");
    return problems;
  }
  if (typeof schema !== "object" || depth > 64) return problems;
  if (schema.$ref !== undefined) {
    // Draft-07: a $ref stands alone (its siblings are ignored).
    const target = resolve(root, schema.$ref);
    return target === undefined ? problems : validate(target, value, root, path, depth + 1);
  }
  const types = schema.type === undefined ? null : [].concat(schema.type);
  if (types && !types.some((t) => hasType(value, t))) {
    fail(`must be ${types.map((t) => TYPE_WORDS[t] ?? t).join(" or ")}`);
    return problems;
  }
  if (schema.enum !== undefined && !schema.enum.some((option) => equal(option, value))) {
    fail(`must be one of ${schema.enum.map(show).join(", ")}`);
  }
  if (Object.hasOwn(schema, "const") && !equal(schema.const, value)) fail(`must be ${show(schema.const)}`);
  if (typeof value === "number") {
    if (typeof schema.minimum === "number") {
      if (schema.exclusiveMinimum === true ? value <= schema.minimum : value < schema.minimum) {
        fail(`must be ${schema.exclusiveMinimum === true ? "more than" : "at least"} ${schema.minimum}`);
      }
    }
    if (typeof schema.maximum === "number") {
      if (schema.exclusiveMaximum === true ? value >= schema.maximum : value > schema.maximum) {
        fail(`must be ${schema.exclusiveMaximum === true ? "less than" : "at most"} ${schema.maximum}`);
      }
    }
    if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) {
      fail(`must be more than ${schema.exclusiveMinimum}`);
    }
    if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) {
      fail(`must be less than ${schema.exclusiveMaximum}`);
    }
    if (typeof schema.multipleOf === "number" && schema.multipleOf > 0) {
      const quotient = value / schema.multipleOf;
      if (Math.abs(quotient - Math.round(quotient)) > 1e-9) fail(`must be a multiple of ${schema.multipleOf}`);
    }
  }
  if (typeof value === "string") {
    const length = [...value].length; // characters, as the host counts them, not UTF-16 units
    if (typeof schema.minLength === "number" && length < schema.minLength) {
      fail(schema.minLength === 1 ? "must not be empty" : `must be at least ${schema.minLength} characters`);
    }
    if (typeof schema.maxLength === "number" && length > schema.maxLength) {
      fail(`must be at most ${schema.maxLength} characters`);
    }
    if (typeof schema.pattern === "string") {
      let pattern = null;
      try {
        pattern = new RegExp(schema.pattern, "u");
      } catch {
        pattern = null; // a pattern JavaScript cannot read: the host decides
      }
      if (pattern && !pattern.test(value)) fail(`must match the pattern ${schema.pattern}`);
    }
    const format = FORMATS[schema.format];
    if (format && !format[0].test(value)) fail(`must be ${format[1]}`);
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === "number" && value.length < schema.minItems) {
      fail(`must have at least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}`);
    }
    if (typeof schema.maxItems === "number" && value.length > schema.maxItems) {
      fail(`must have at most ${schema.maxItems} item${schema.maxItems === 1 ? "" : "s"}`);
    }
    if (schema.uniqueItems === true && value.some((item, i) => value.slice(0, i).some((other) => equal(item, other)))) {
      fail("must not repeat an item");
    }
    if (Array.isArray(schema.items)) {
      value.forEach((item, i) => {
        if (i < schema.items.length) problems.push(...validate(schema.items[i], item, root, [...path, i], depth + 1));
        else if (schema.additionalItems !== undefined) {
          problems.push(...validate(schema.additionalItems, item, root, [...path, i], depth + 1));
        }
      });
    } else if (schema.items !== undefined) {
      value.forEach((item, i) => problems.push(...validate(schema.items, item, root, [...path, i], depth + 1)));
    }
    if (schema.contains !== undefined && !value.some((item) => validate(schema.contains, item, root, [], depth + 1).length === 0)) {
      fail("must contain a matching item");
    }
  }
  if (typeOf(value) === "object") {
    const keys = Object.keys(value);
    for (const name of schema.required ?? []) {
      if (!Object.hasOwn(value, name)) fail("is required", [...path, name]);
    }
    if (typeof schema.minProperties === "number" && keys.length < schema.minProperties) {
      fail(`must have at least ${schema.minProperties} entries`);
    }
    if (typeof schema.maxProperties === "number" && keys.length > schema.maxProperties) {
      fail(`must have at most ${schema.maxProperties} entries`);
    }
    const properties = schema.properties ?? {};
    const patterns = Object.entries(schema.patternProperties ?? {}).map(([p, s]) => [new RegExp(p, "u"), s]);
    for (const key of keys) {
      let matched = false;
      if (Object.hasOwn(properties, key)) {
        matched = true;
        problems.push(...validate(properties[key], value[key], root, [...path, key], depth + 1));
      }
      for (const [pattern, sub] of patterns) {
        if (pattern.test(key)) {
          matched = true;
          problems.push(...validate(sub, value[key], root, [...path, key], depth + 1));
        }
      }
      if (!matched && schema.additionalProperties !== undefined) {
        if (schema.additionalProperties === false) fail("is not expected here", [...path, key]);
        else problems.push(...validate(schema.additionalProperties, value[key], root, [...path, key], depth + 1));
      }
    }
    for (const [key, needs] of Object.entries(schema.dependencies ?? {})) {
      if (!Object.hasOwn(value, key)) continue;
      if (Array.isArray(needs)) {
        for (const name of needs) if (!Object.hasOwn(value, name)) fail(`is required with ${key}`, [...path, name]);
      } else problems.push(...validate(needs, value, root, path, depth + 1));
    }
    if (schema.propertyNames !== undefined) {
      for (const key of keys) {
        if (validate(schema.propertyNames, key, root, [], depth + 1).length) fail("is not an allowed name", [...path, key]);
      }
    }
  }
  for (const sub of schema.allOf ?? []) problems.push(...validate(sub, value, root, path, depth + 1));
  if (Array.isArray(schema.anyOf) && !schema.anyOf.some((sub) => validate(sub, value, root, path, depth + 1).length === 0)) {
    fail("does not match any of the allowed forms");
  }
  if (Array.isArray(schema.oneOf)) {
    const passing = schema.oneOf.filter((sub) => validate(sub, value, root, path, depth + 1).length === 0).length;
    if (passing !== 1) fail(passing ? "matches more than one of the allowed forms" : "does not match any of the allowed forms");
  }
  if (schema.not !== undefined && validate(schema.not, value, root, path, depth + 1).length === 0) fail("is not allowed");
  if (schema.if !== undefined) {
    const branch = validate(schema.if, value, root, path, depth + 1).length === 0 ? schema.then : schema.else;
    if (branch !== undefined) problems.push(...validate(branch, value, root, path, depth + 1));
  }
  return problems;
}

// A path as people read it: "editedArgs › to", "items › 2".
export function describePath(path) {
  return path.length ? path.join(" › ") : "the answer";
}
