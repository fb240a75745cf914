// The approval console: the signed-in principal's open interrupts, answered from a page.
//
// Everything goes to the host that served the page, through its ordinary routes (relative to
// /console/): GET inbox, GET inbox/events (Server-Sent Events: a line each time the host saves
// one of the principal's threads), GET threads/{id}, GET audit/{id}, and POST / with a
// RunAgentInput whose resume answers every open interrupt of a thread, its events streamed back.
// No other origin is contacted; nothing is polled but the inbox, read again on each change the
// feed reports (and every few minutes, for changes saved by other hosts of the same store).

import { describePath, validate } from "./schema.mjs";
import { SIGNATURE_KEY, forget, heldKey, keep, newKey, sign } from "./signing.mjs";

const api = new URL("../", location.href);
const TOKEN_KEY = "agui-console-token";
const REFRESH_EVERY = 5 * 60 * 1000;
const MISSING = Symbol("missing");

const $ = (id) => document.getElementById(id);
let counter = 0;
const nextId = (prefix) => `${prefix}-${++counter}`;

const session = {
  token: sessionStorage.getItem(TOKEN_KEY) ?? "",
  principal: null,
  threads: [],
  selected: null, // thread id shown in the detail pane
  cards: [], // the cards of the selected thread's open interrupts
  feed: null, // AbortController of the live feed
  sending: false,
  signer: null, // this browser's registered signing key, when the host checks signed decisions
  others: [], // the selected thread's requests that others are to answer
};

// --- small DOM helpers -------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function pretty(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

// --- the host ----------------------------------------------------------------------------

class Refused extends Error {
  constructor(status, body) {
    super(body?.message ?? `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function headers(extra = {}) {
  const found = { ...extra };
  if (session.token) found.authorization = `Bearer ${session.token}`;
  return found;
}

async function getJson(path) {
  const response = await fetch(new URL(path, api), { headers: headers({ accept: "application/json" }), cache: "no-store" });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new Refused(response.status, body);
  return body;
}

// Server-Sent Events from a fetch response: each "data:" block parsed as JSON.
async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).replace(/^ /, ""))
        .join("\n");
      if (data) yield JSON.parse(data);
    }
  }
}

// --- signing in --------------------------------------------------------------------------

function showSignIn(message = "") {
  stopFeed();
  $("workspace").hidden = true;
  $("who").hidden = $("sign-out").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message;
  $("token").value = "";
  $("token").focus();
}

async function signIn(token) {
  session.token = token;
  try {
    const inbox = await getJson("inbox");
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    session.principal = inbox.principal;
    $("signin").hidden = true;
    $("workspace").hidden = false;
    // A host without an authenticator serves everyone as "anonymous": there is nobody to sign
    // in or out as, so the page shows none of that machinery.
    const anonymous = !token && inbox.principal === "anonymous";
    $("who").hidden = $("sign-out").hidden = anonymous;
    $("who").textContent = anonymous ? "" : `Signed in as ${inbox.principal}`;
    await showSigning();
    renderInbox(inbox.threads);
    startFeed();
    const wanted = new URLSearchParams(location.hash.slice(1)).get("thread");
    if (wanted) await select(wanted, { focus: false });
  } catch (error) {
    sessionStorage.removeItem(TOKEN_KEY);
    session.token = "";
    if (error instanceof Refused && error.status === 401) {
      showSignIn(token ? "That token was not accepted. Check it and try again." : "");
    } else {
      showSignIn(`The host could not be reached (${error.message}).`);
    }
  }
}

// --- signing decisions ---------------------------------------------------------------------

// Where the host checks signed decisions: whether this browser's key signs them, or a button
// to register one (once: later keys are the operator's to add).
async function showSigning() {
  const place = $("signing");
  session.signer = null;
  place.replaceChildren();
  place.hidden = true;
  let keys;
  try {
    keys = await getJson("keys");
  } catch (error) {
    if (error instanceof Refused && error.status === 404) return; // a host without the route: nothing is signed
    place.hidden = false;
    place.append(`Your signing keys could not be read (${error.message}): decisions sent from here are unsigned.`);
    return;
  }
  if (!keys.signing) return;
  place.hidden = false;
  const held = await heldKey(keys.principal).catch(() => null);
  if (held && keys.keys.includes(held.kid)) {
    session.signer = held;
    place.append(`Your decisions are signed (key ${held.kid}).`);
  } else if (keys.keys.length) {
    place.append("Your signing key is not in this browser: decisions sent from here are unsigned.");
  } else if (keys.registration) {
    const button = el("button", { type: "button", onclick: () => registerKey(keys.principal, button) }, "Sign my decisions from this browser");
    place.append(button);
  } else {
    place.append("You have no signing key: the host's operator registers one.");
  }
}

async function registerKey(principal, button) {
  button.disabled = true;
  try {
    // Kept here first: a key the host registered and this browser lost would lock the
    // principal out of registering again. One the host refuses is forgotten.
    const made = await newKey(principal);
    await keep(principal, made);
    const response = await fetch(new URL("keys", api), {
      method: "POST",
      headers: headers({ "content-type": "application/json", accept: "application/json" }),
      body: JSON.stringify(made.publicJwk),
    }).catch((error) => ({ ok: false, status: 0, json: async () => ({ message: error.message }) }));
    const body = await response.json().catch(() => null);
    if (!response.ok) {
      if (response.status >= 400 && response.status < 500) await forget(principal);
      throw new Error(body?.message ?? `HTTP ${response.status}`);
    }
    await showSigning();
  } catch (error) {
    button.disabled = false;
    $("signing").append(el("span", { class: "error", role: "alert", text: ` Not registered: ${error.message}` }));
  }
}

function signOut() {
  sessionStorage.removeItem(TOKEN_KEY);
  session.token = "";
  session.principal = null;
  session.selected = null;
  history.replaceState(null, "", location.pathname);
  showSignIn();
}

// --- the inbox and its live feed ---------------------------------------------------------

let refreshing = null;
let refreshAgain = false;

async function refreshInbox() {
  if (refreshing) {
    refreshAgain = true;
    return refreshing;
  }
  refreshing = (async () => {
    try {
      do {
        refreshAgain = false;
        const inbox = await getJson("inbox");
        renderInbox(inbox.threads);
      } while (refreshAgain);
    } catch (error) {
      if (error instanceof Refused && error.status === 401) signOut();
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

// The main argument of a proposed call, in words: the first argument that is text, a number or
// yes/no (never the arguments' JSON), or "" when there is none.
function mainArgument(args) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return "";
  for (const value of Object.values(args)) {
    if (typeof value === "string" && value.trim()) {
      const text = value.trim().replace(/\s+/g, " ");
      return text.length > 60 ? `${text.slice(0, 60)}…` : text;
    }
    if (typeof value === "number" || typeof value === "boolean") return String(value);
  }
  return "";
}

// What one request asks, in a person's words: the tool and its main argument, or the form's
// question.
function asked(interrupt, toolCalls) {
  const call = interrupt.toolCallId ? toolCalls[interrupt.toolCallId] : undefined;
  if (interrupt.reason === "tool_call" && call) {
    const main = mainArgument(call.arguments);
    return main ? `Approve ${call.name}: ${main}` : `Approve ${call.name}`;
  }
  return interrupt.message ?? { input_required: "The agent needs some information", confirmation: "The agent asks yes or no" }[interrupt.reason] ?? `A request (${interrupt.reason})`;
}

// An inbox entry: what is asked (each request's tool and main argument, or its question), and
// the agent's own message when it says more than the title.
function summary(thread) {
  const titles = [...new Set(thread.interrupts.map((i) => asked(i, thread.toolCalls)))];
  const title = titles.length > 2 ? `${titles.slice(0, 2).join("; ")}; and ${titles.length - 2} more` : titles.join("; ");
  const said = thread.interrupts.map((i) => i.message).find((m) => m && !titles.includes(m));
  return { title, said: said ?? "" };
}

function earliestExpiry(thread) {
  const times = thread.interrupts.map((i) => i.expiresAt).filter(Boolean);
  return times.sort((a, b) => Date.parse(a) - Date.parse(b))[0];
}

function renderInbox(threads) {
  session.threads = threads;
  const list = $("inbox");
  const focused = document.activeElement?.dataset?.thread;
  list.replaceChildren(
    ...threads.map((thread) => {
      const count = thread.interrupts.length;
      const expiry = earliestExpiry(thread);
      const button = el(
        "button",
        {
          type: "button",
          class: "thread",
          "data-thread": thread.threadId,
          "aria-current": thread.threadId === session.selected ? "true" : "false",
          onclick: () => select(thread.threadId),
        },
        el("span", { class: "title", text: summary(thread).title }),
        summary(thread).said ? el("span", { class: "said", text: summary(thread).said }) : null,
        el("span", {
          class: "meta",
          text: `${thread.owner ? `asked by ${thread.owner}'s agent · ` : ""}${count} request${count === 1 ? "" : "s"} · ${thread.threadId}${thread.raisedAt ? ` · ${ago(thread.raisedAt)}` : ""}`,
        }),
        expiry ? el("span", { class: "expiry", "data-expires": expiry }) : null,
        ...thread.interrupts.map(tallyText).filter(Boolean).map((text) => el("span", { class: "tally", text })),
      );
      return el("li", {}, button);
    }),
  );
  $("count").textContent = threads.length ? `(${threads.length})` : "";
  $("empty").hidden = threads.length > 0;
  if (focused) list.querySelector(`[data-thread="${CSS.escape(focused)}"]`)?.focus();
  tick();
  checkStillOpen();
}

function ago(instant) {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(instant)) / 1000));
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return new Date(instant).toLocaleDateString();
}

function stopFeed() {
  session.feed?.abort();
  session.feed = null;
}

function startFeed() {
  stopFeed();
  const controller = new AbortController();
  session.feed = controller;
  let delay = 1000;
  const status = $("feed");
  (async () => {
    while (!controller.signal.aborted) {
      try {
        const response = await fetch(new URL("inbox/events", api), {
          headers: headers({ accept: "text/event-stream" }),
          signal: controller.signal,
          cache: "no-store",
        });
        if (response.status === 401) {
          signOut();
          return;
        }
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        for await (const event of events(response)) {
          delay = 1000;
          if (event.type === "ready") {
            status.textContent = "Live: this list updates by itself.";
            refreshInbox(); // whatever changed while the feed was away
          } else if (event.type === "changed") {
            refreshInbox();
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
      }
      status.textContent = "Reconnecting…";
      await new Promise((done) => setTimeout(done, delay));
      delay = Math.min(delay * 2, 30000);
    }
  })();
}

// Changes saved by other hosts of the same store reach this page at the latest here.
setInterval(() => {
  if (session.principal !== null) refreshInbox();
}, REFRESH_EVERY);

// --- expiry, counted down every second --------------------------------------------------

function left(expiresAt) {
  const seconds = Math.ceil((Date.parse(expiresAt) - Date.now()) / 1000);
  if (!(seconds > 0)) return null;
  const m = Math.floor(seconds / 60);
  const s = String(seconds % 60).padStart(2, "0");
  return m >= 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m}:${s}`;
}

function tick() {
  for (const node of document.querySelectorAll("[data-expires]")) {
    const remaining = left(node.dataset.expires);
    node.textContent = remaining ? `expires in ${remaining}` : "expired";
    node.classList.toggle("expired", !remaining);
  }
  for (const card of session.cards) {
    if (!card.expired && card.interrupt.expiresAt && !left(card.interrupt.expiresAt)) markExpired(card);
  }
}
setInterval(tick, 1000);

// --- the selected thread -------------------------------------------------------------------

async function select(threadId, { focus = true } = {}) {
  session.selected = threadId;
  history.replaceState(null, "", `#thread=${encodeURIComponent(threadId)}`);
  for (const button of $("inbox").querySelectorAll("button.thread")) {
    button.setAttribute("aria-current", button.dataset.thread === threadId ? "true" : "false");
  }
  const detail = $("detail");
  const title = el("h2", { id: "detail-title", text: `Thread ${threadId}` });
  const conversation = el("div", { class: "conversation", "aria-label": "The conversation so far" });
  const answers = el("div", { id: "answers" });
  const run = el("section", { id: "run", class: "run", "aria-live": "polite", hidden: true }, el("h3", { text: "What happened" }));
  const audit = el("section", { id: "audit", class: "audit", hidden: true, "aria-labelledby": "audit-title" });
  const auditButton = el("button", { type: "button", id: "audit-button", onclick: () => showAudit(threadId) }, "Audit trail");
  detail.replaceChildren(title, el("div", { class: "actions" }, auditButton), conversation, answers, run, audit);
  session.cards = [];
  if (focus) detail.focus();
  let view;
  try {
    view = await getJson(`threads/${encodeURIComponent(threadId)}`);
  } catch (error) {
    auditButton.remove();
    if (error instanceof Refused && error.status === 404) {
      // The host answers a thread that is someone else's as one that does not exist.
      answers.append(el("p", { class: "refusal", role: "alert", text: "There is no such thread, or it is not yours to open." }));
    } else if (error instanceof Refused && error.status === 401) {
      signOut();
    } else {
      answers.append(el("p", { class: "refusal", role: "alert", text: `The thread could not be loaded (${error.message}).` }));
    }
    return;
  }
  if (session.selected !== threadId) return;
  renderConversation(conversation, view.messages);
  const entry = session.threads.find((t) => t.threadId === threadId);
  renderAnswers(answers, threadId, view, entry);
}

function renderConversation(container, messages) {
  const shown = messages.filter((m) => ["user", "assistant", "tool"].includes(m.role)).slice(-6);
  container.replaceChildren(
    ...shown.map((m) => {
      let text = typeof m.content === "string" ? m.content : "";
      if (m.role === "assistant" && m.toolCalls?.length) {
        const names = [...new Set(m.toolCalls.map((c) => c.function.name))].join(", ");
        const calls = m.toolCalls.length === 1 ? `a call of ${names}` : `${m.toolCalls.length} calls of ${names}`;
        text = text ? `${text} (proposes ${calls})` : `Proposes ${calls}.`;
      }
      if (!text) return null;
      return el("p", {}, el("span", { class: "role", text: m.role === "tool" ? "tool result" : m.role }), text);
    }),
  );
  container.hidden = container.childElementCount === 0;
}

function tallyText(interrupt) {
  const tally = interrupt.metadata?.["agui.quorum"];
  if (!tally) return null;
  return `${tally.approved} of ${tally.approvals} approvals so far; ${tally.remaining} more needed.`;
}

function othersList(others) {
  if (!others.length) return "";
  return el(
    "section",
    { class: "others", "aria-label": "Waiting for others" },
    el("h3", { text: "Waiting for others" }),
    el(
      "ul",
      {},
      others.map((i) => el("li", { "data-interrupt": i.id }, i.message ?? i.id, tallyText(i) ? ` (${tallyText(i)})` : "")),
    ),
  );
}

function renderAnswers(container, threadId, view, entry) {
  session.cards = [];
  session.others = view.waitingOnOthers ?? [];
  const interrupts = view.interrupts;
  if (!interrupts.length) {
    const none = session.others.length ? "Nothing here waits for your answer." : "Nothing on this thread waits for an answer.";
    container.replaceChildren(el("p", { class: "hint", text: none }), othersList(session.others));
    return;
  }
  const toolCalls = entry?.toolCalls ?? proposalsFromMessages(view.messages);
  const form = el("form", { novalidate: true, "aria-label": "Your answers" });
  for (const interrupt of interrupts) {
    const card = buildCard(interrupt, toolCalls);
    session.cards.push(card);
    form.append(card.node);
  }
  const problem = el("p", { class: "error", role: "alert" });
  const send = el("button", { type: "submit", class: "primary" }, interrupts.length > 1 ? "Send all answers" : "Send answer");
  form.append(el("div", { class: "actions" }, send, problem));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(threadId, problem, send, toolCalls);
  });
  container.replaceChildren(
    interrupts.length > 1
      ? el("p", { class: "hint", text: `${interrupts.length} requests: answer or cancel each, then send them together.` })
      : "",
    form,
    othersList(session.others),
  );
  tick();
}

function proposalsFromMessages(messages) {
  const found = {};
  for (const m of messages) {
    for (const call of m.toolCalls ?? []) {
      let args = {};
      try {
        args = JSON.parse(call.function.arguments || "{}");
      } catch {
        args = call.function.arguments;
      }
      found[call.id] = { name: call.function.name, arguments: args };
    }
  }
  return found;
}

// --- a card per interrupt, by reason -------------------------------------------------------

function choices(name, options, onchange) {
  const group = el("fieldset", { class: "choices" }, el("legend", { text: "Your decision" }));
  for (const [value, label] of options) {
    const chosen = () => {
      // A decision made: the reminders to make one are answered.
      group.closest(".card")?.querySelector(":scope > .error")?.replaceChildren();
      group.closest("form")?.querySelector(".actions > .error")?.replaceChildren();
      onchange(value);
    };
    const input = el("input", { type: "radio", name, value, onchange: chosen });
    group.append(el("label", {}, input, label));
  }
  return group;
}

function buildCard(interrupt, toolCalls) {
  const node = el("fieldset", { class: "card", "data-interrupt": interrupt.id });
  const card = { interrupt, node, decision: null, expired: false, fields: new Map(), read: null, error: null };
  const schema = interrupt.responseSchema;
  const reasonLabel = { tool_call: "approval", input_required: "form", confirmation: "yes or no" }[interrupt.reason] ?? interrupt.reason;
  const legend = el("legend", {}, el("span", { class: "reason", text: reasonLabel }), " ", interrupt.message ?? "A request from the agent");
  node.append(legend);
  if (interrupt.expiresAt) node.append(el("p", { class: "expiry", "data-expires": interrupt.expiresAt }));
  if (tallyText(interrupt)) node.append(el("p", { class: "tally", text: tallyText(interrupt) }));
  const group = `decision-${interrupt.id}`;
  card.error = el("p", { class: "error", role: "alert" });

  // A tool call asks for approval unless its schema wants another answer: then it is a form.
  const approval = interrupt.reason === "tool_call" && (!schema || Object.hasOwn(schema.properties ?? {}, "approved"));
  if (interrupt.reason === "tool_call") {
    const call = toolCalls[interrupt.toolCallId];
    node.append(el("p", {}, "Tool ", el("code", { text: call?.name ?? "(unknown tool)" }), " with:"));
    node.append(argumentList(call?.arguments));
  }
  if (approval) {
    const call = toolCalls[interrupt.toolCallId];
    const editSchema = schema?.properties?.editedArgs;
    const options = [["approve", "Approve"]];
    if (editSchema) options.push(["edit", "Approve with edits"]);
    options.push(["deny", "Deny"], ["cancel", "Cancel"]);
    const edits = el("div", { class: "edits", hidden: true });
    let readEdits = null;
    if (editSchema) {
      const args = call?.arguments && typeof call.arguments === "object" ? call.arguments : {};
      const built = buildField(editSchema, args, ["editedArgs"], true, schema, card, "Edited arguments");
      readEdits = built.read;
      edits.append(el("p", { class: "hint", text: "The edited arguments replace the proposed ones whole." }), built.node);
    }
    node.append(
      choices(group, options, (value) => {
        card.decision = value;
        edits.hidden = value !== "edit";
      }),
      edits,
    );
    card.read = () => {
      if (card.decision === "approve") return { approved: true };
      if (card.decision === "deny") return { approved: false };
      const edited = readEdits();
      return { approved: true, editedArgs: edited === MISSING ? {} : edited };
    };
  } else if (interrupt.reason === "confirmation" && (!schema || schema.type === "boolean")) {
    node.append(choices(group, [["yes", "Yes"], ["no", "No"], ["cancel", "Cancel"]], (value) => (card.decision = value)));
    card.read = () => card.decision === "yes";
  } else {
    // input_required, a confirmation or a tool call with a schema of its own, and any other
    // reason: a form generated from responseSchema, or raw JSON where the schema is beyond
    // the generator.
    if (!["input_required", "confirmation"].includes(interrupt.reason)) {
      if (interrupt.metadata) node.append(el("p", { class: "label", text: "Details" }), el("pre", { text: pretty(interrupt.metadata) }));
      if (schema) {
        const shown = el("details", {}, el("summary", { text: "The answer it expects (responseSchema)" }), el("pre", { text: pretty(schema) }));
        node.append(shown);
      }
    }
    const built = buildField(schema ?? {}, undefined, [], true, schema ?? {}, card, schema ? "Your answer" : "Your answer (JSON)");
    const form = el("div", { class: "answer-form" }, built.node);
    node.append(
      form,
      choices(group, [["answer", "Submit this answer"], ["cancel", "Cancel"]], (value) => {
        card.decision = value;
        form.hidden = value === "cancel";
      }),
    );
    node.querySelector(`input[value="answer"]`).checked = true;
    card.decision = "answer";
    card.read = built.read;
  }
  node.append(card.error);
  return card;
}

function argumentList(args) {
  if (!args || typeof args !== "object" || Array.isArray(args)) return el("pre", { text: pretty(args ?? "") });
  const list = el("dl", { class: "args" });
  for (const [key, value] of Object.entries(args)) list.append(el("dt", { text: key }), el("dd", { text: pretty(value) }));
  return list;
}

function markExpired(card) {
  card.expired = true;
  card.decision = "cancel";
  card.node.classList.add("expired");
  for (const control of card.node.querySelectorAll("input, select, textarea")) control.disabled = true;
  for (const part of card.node.querySelectorAll(".choices, .edits, .answer-form")) part.hidden = true;
  const when = new Date(card.interrupt.expiresAt).toLocaleTimeString();
  card.node.append(
    el("p", { class: "refusal", text: `This request expired at ${when}: it can no longer be answered. Sending dismisses it.` }),
  );
}

// --- forms generated from a JSON Schema ------------------------------------------------------

function resolveRef(schema, root) {
  let found = schema;
  for (let hops = 0; found && typeof found === "object" && typeof found.$ref === "string" && hops < 16; hops++) {
    if (!found.$ref.startsWith("#")) return {};
    let node = root;
    for (const raw of found.$ref.slice(1).split("/").slice(1)) {
      node = node?.[decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~")];
    }
    found = node ?? {};
  }
  return found && typeof found === "object" ? found : {};
}

function kindOf(schema) {
  if (Array.isArray(schema.enum) && schema.enum.length) return "enum";
  const types = [].concat(schema.type ?? []).filter((t) => t !== "null");
  if (types.length !== 1) return "json";
  const [type] = types;
  if (type === "object") return schema.properties && !schema.additionalProperties ? "object" : "json";
  if (["string", "number", "integer", "boolean"].includes(type)) return type;
  return "json";
}

// A field for `schema` at `path`; returns {node, read}. read() gives the value or MISSING.
function buildField(schemaIn, initial, path, required, root, card, label) {
  const schema = resolveRef(schemaIn, root);
  const kind = kindOf(schema);
  const id = nextId("field");
  const errorId = `${id}-error`;
  const title = schema.title ?? label ?? String(path.at(-1) ?? "Answer");
  const error = el("p", { class: "error", id: errorId });
  const labelNode = el("label", { for: id }, title, required ? el("span", { class: "required", text: " (required)" }) : "");
  const hint = schema.description ? el("p", { class: "hint", text: schema.description }) : null;

  const register = (input) => {
    card.fields.set(JSON.stringify(path), { input, error });
    input.setAttribute("aria-describedby", errorId);
  };

  if (kind === "object") {
    const group = el("fieldset", { class: "group" }, el("legend", { text: title }));
    if (hint) group.append(hint);
    const children = [];
    const requiredNames = new Set(schema.required ?? []);
    for (const [name, sub] of Object.entries(schema.properties)) {
      const value = initial && typeof initial === "object" ? initial[name] : undefined;
      const child = buildField(sub, value, [...path, name], requiredNames.has(name), root, card, name);
      children.push([name, child]);
      group.append(child.node);
    }
    group.append(error);
    card.fields.set(JSON.stringify(path), { input: group, error });
    const read = () => {
      const value = {};
      for (const [name, child] of children) {
        const got = child.read();
        if (got !== MISSING) value[name] = got;
      }
      return Object.keys(value).length || required ? value : MISSING;
    };
    // A form for the whole answer (path []) keeps its fields flat, without an extra frame.
    if (!path.length || (path.length === 1 && path[0] === "editedArgs")) {
      const flat = el("div", { class: "fields" }, ...children.map(([, child]) => child.node), error);
      return { node: flat, read };
    }
    return { node: group, read };
  }

  if (kind === "boolean") {
    const input = el("input", { type: "checkbox", id });
    input.checked = initial === true || (initial === undefined && schema.default === true);
    register(input);
    return { node: el("div", { class: "field check" }, input, labelNode, hint, error), read: () => input.checked };
  }

  if (kind === "enum") {
    const input = el("select", { id }, el("option", { value: "", text: "— choose —" }));
    schema.enum.forEach((option, i) => input.append(el("option", { value: String(i), text: pretty(option) })));
    const start = schema.enum.findIndex((option) => JSON.stringify(option) === JSON.stringify(initial));
    if (start >= 0) input.value = String(start);
    register(input);
    const read = () => (input.value === "" ? MISSING : schema.enum[Number(input.value)]);
    return { node: el("div", { class: "field" }, labelNode, hint, input, error), read };
  }

  if (kind === "string" || kind === "number" || kind === "integer") {
    const text = initial === undefined || initial === null ? "" : String(initial);
    let input;
    if (kind === "string" && (text.length > 60 || text.includes("\n") || (schema.maxLength ?? 0) > 200)) {
      input = el("textarea", { id, rows: 4 });
    } else {
      const type = kind !== "string" ? "text" : { email: "email", date: "date" }[schema.format] ?? "text";
      input = el("input", { id, type, inputmode: kind === "integer" ? "numeric" : kind === "number" ? "decimal" : undefined });
      if (schema.format === "date-time") input.placeholder = "2026-12-31T09:30:00Z";
    }
    input.value = text;
    register(input);
    const read = () => {
      const raw = input.value;
      if (raw.trim() === "") return MISSING;
      if (kind === "string") return raw;
      const number = Number(raw.trim());
      return /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw.trim()) && Number.isFinite(number) ? number : raw;
    };
    return { node: el("div", { class: "field" }, labelNode, hint, input, error), read };
  }

  // Anything else (lists, unions, free objects, no schema at all): JSON text.
  const input = el("textarea", { id, rows: 4, spellcheck: "false", class: "mono" });
  if (initial !== undefined) input.value = JSON.stringify(initial, null, 2);
  register(input);
  const read = () => {
    const raw = input.value.trim();
    if (!raw) return MISSING;
    try {
      return JSON.parse(raw);
    } catch {
      return { [NOT_JSON]: raw };
    }
  };
  const note = el("p", { class: "hint", text: "Write the answer as JSON (text in double quotes)." });
  return { node: el("div", { class: "field" }, labelNode, hint, note, input, error), read };
}

const NOT_JSON = "\u0000not json";

// --- sending the answers as one resume ---------------------------------------------------------

function clearErrors(card) {
  card.error.textContent = "";
  for (const { input, error } of card.fields.values()) {
    error.textContent = "";
    input.removeAttribute("aria-invalid");
  }
}

// Show `problems` of `card`: each at its field when the form has one, else on the card.
function showProblems(card, problems) {
  const loose = [];
  for (const problem of problems) {
    let path = problem.path;
    let field = card.fields.get(JSON.stringify(path));
    while (!field && path.length) {
      path = path.slice(0, -1);
      field = card.fields.get(JSON.stringify(path));
    }
    if (field && field.input.tagName !== "FIELDSET") {
      const prefix = path.length === problem.path.length ? "" : `${describePath(problem.path.slice(path.length))}: `;
      field.error.textContent = field.error.textContent || `${prefix}${capital(problem.message)}`;
      field.input.setAttribute("aria-invalid", "true");
    } else {
      loose.push(`${describePath(problem.path)} ${problem.message}`);
    }
  }
  card.error.textContent = loose.join(". ");
}

function capital(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

function resumeEntries() {
  const entries = [];
  let first = null;
  for (const card of session.cards) {
    clearErrors(card);
    if (!card.expired && card.interrupt.expiresAt && !left(card.interrupt.expiresAt)) markExpired(card);
    if (card.decision === null) {
      card.error.textContent = "Choose what to do with this request.";
      first ??= card.node.querySelector("input:not([disabled])");
      continue;
    }
    if (card.decision === "cancel") {
      entries.push({ interruptId: card.interrupt.id, status: "cancelled" });
      continue;
    }
    const payload = card.read();
    const problems = [];
    if (payload === MISSING) {
      if (card.interrupt.responseSchema) problems.push(...validate(card.interrupt.responseSchema, null));
      else problems.push({ path: [], message: "is required" });
    } else if (payload && typeof payload === "object" && hasNotJson(payload)) {
      problems.push({ path: [], message: "is not JSON" });
    } else if (card.interrupt.responseSchema) {
      problems.push(...validate(card.interrupt.responseSchema, payload));
    }
    if (problems.length) {
      showProblems(card, problems);
      first ??= card.node.querySelector("[aria-invalid='true']") ?? card.node.querySelector("input, select, textarea");
      continue;
    }
    const entry = { interruptId: card.interrupt.id, status: "resolved" };
    if (payload !== MISSING) entry.payload = payload;
    entries.push(entry);
  }
  return { entries, first };
}

function hasNotJson(value) {
  if (!value || typeof value !== "object") return false;
  if (Object.hasOwn(value, NOT_JSON)) return true;
  return Object.values(value).some(hasNotJson);
}

const REFUSALS = {
  INTERRUPT_EXPIRED: "Too late: a request expired before your answer reached the agent. Nothing was done with your answers.",
  INTERRUPT_ALREADY_RESOLVED:
    "These requests were already answered differently (perhaps from another window). Your answers were not used.",
  INVALID_PAYLOAD: "The agent did not accept one of the answers. Nothing was done.",
  THREAD_BUSY: "The agent is still working on this thread. Try again in a moment.",
  FORBIDDEN: "This thread belongs to someone else.",
  PARTIAL_RESUME: "The requests on this thread changed since the page showed them. They are shown again: please answer them.",
  UNKNOWN_INTERRUPT_ID: "The requests on this thread changed since the page showed them. They are shown again: please answer them.",
  PENDING_INTERRUPTS: "The requests on this thread changed since the page showed them. They are shown again: please answer them.",
  THREAD_MISMATCH: "An answer was sent to the wrong thread. Nothing was done.",
  DUPLICATE_RESUME_ENTRY: "The page answered one request twice. Nothing was done.",
  INVALID_RESUME: "The page sent answers the host could not accept. Nothing was done.",
  INVALID_INPUT: "The page sent something the host could not read. Nothing was done.",
  AGENT_ERROR: "The agent failed while carrying out your answers. Requests it had not finished stay open.",
  INVALID_SIGNATURE: "These requests need your signed decision, and this browser has no registered signing key. Nothing was done.",
};

async function submit(threadId, problem, button, toolCalls) {
  if (session.sending) return;
  problem.textContent = "";
  const { entries, first } = resumeEntries();
  if (entries.length !== session.cards.length) {
    problem.textContent = "Some answers need your attention (marked above). Nothing was sent.";
    first?.focus();
    return;
  }
  if (session.signer) {
    try {
      for (const entry of entries) entry.metadata = { [SIGNATURE_KEY]: await sign(session.signer, threadId, entry) };
    } catch (error) {
      problem.textContent = `The answers could not be signed (${error.message}). Nothing was sent.`;
      return;
    }
  }
  const known = new Set([...session.cards, ...session.others.map((interrupt) => ({ interrupt }))].map((c) => c.interrupt.id));
  const runId = `console-${crypto.randomUUID()}`;
  const input = { threadId, runId, messages: [], tools: [], context: [], forwardedProps: {}, resume: entries };
  const run = $("run");
  run.hidden = false;
  const log = el("div", { class: "log" });
  run.replaceChildren(el("h3", { text: "What happened" }), log);
  const say = (node) => log.append(node);
  session.sending = true;
  button.disabled = true;
  let outcome = null;
  try {
    const response = await fetch(api, {
      method: "POST",
      headers: headers({ "content-type": "application/json", accept: "text/event-stream" }),
      body: JSON.stringify(input),
    });
    if (response.status === 401) {
      session.sending = false;
      signOut();
      return;
    }
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      throw new Error(body?.message ?? `HTTP ${response.status}`);
    }
    const texts = new Map();
    const failed = [];
    for await (const event of events(response)) {
      if (event.type === "RUN_STARTED") {
        say(el("p", { text: "Sent. The agent is carrying out your answers…" }));
      } else if (event.type === "TEXT_MESSAGE_START") {
        const node = el("p", { class: "said" });
        texts.set(event.messageId, node);
        say(node);
      } else if (event.type === "TEXT_MESSAGE_CONTENT") {
        let node = texts.get(event.messageId);
        if (!node) {
          node = el("p", { class: "said" });
          texts.set(event.messageId, node);
          say(node);
        }
        node.textContent += event.delta;
      } else if (event.type === "TOOL_CALL_RESULT") {
        const name = toolCalls[event.toolCallId]?.name ?? "the tool";
        const failure = event.metadata?.["agui-core"]?.status === "failed" ? event.metadata["agui-core"] : null;
        if (failure) {
          // The host marks a tool that raised: say it failed, in the tool's own words.
          failed.push(name);
          say(el("p", { class: "refusal failed", role: "alert" }, el("code", { text: name }), ` failed: ${failure.error ?? event.content}`));
        } else {
          say(el("p", {}, "Result of ", el("code", { text: name }), ": ", el("span", { class: "mono", text: event.content })));
        }
      } else if (event.type === "RUN_FINISHED") {
        outcome = event.outcome?.type ?? "success";
        const failures = failed.length ? `${[...new Set(failed)].join(", ")} failed (see above)` : "";
        if (outcome === "interrupt" && event.outcome.interrupts.every((i) => known.has(i.id))) {
          // A vote: the answers are kept, and the thread waits for the other deciders.
          const tallies = event.outcome.interrupts.map(tallyText).filter(Boolean).join(" ");
          say(el("p", { class: "ok", text: `Your answers are recorded. The agent resumes once the others have decided. ${tallies}`.trim() }));
        } else if (outcome === "interrupt") {
          // The new request is rendered in place of the answered ones, above this log.
          const next = "The agent has a new request for you (above).";
          say(el("p", { class: failures ? "refusal" : "ok", text: failures ? `Finished, but ${failures}. ${next}` : `Done. ${next}` }));
        } else if (outcome === "cancelled") {
          say(el("p", { text: "The run was cancelled by its host." }));
        } else if (failures) {
          say(el("p", { class: "refusal", text: `Finished, but ${failures}.` }));
        } else {
          say(el("p", { class: "ok", text: "Done." }));
        }
      } else if (event.type === "RUN_ERROR") {
        outcome = "error";
        const words = REFUSALS[event.code] ?? "The host refused the answers.";
        say(
          el(
            "div",
            { class: "refusal", role: "alert", "data-code": event.code ?? "" },
            el("p", { text: words }),
            el("details", {}, el("summary", { text: "What the host said" }), el("p", { text: `${event.code ?? "error"}: ${event.message}` })),
          ),
        );
      }
    }
    if (outcome === null) say(el("p", { class: "refusal", role: "alert", text: "The connection ended before the agent finished. Reload to see where the thread stands." }));
  } catch (error) {
    say(el("p", { class: "refusal", role: "alert", text: `The answers could not be sent (${error.message}).` }));
  } finally {
    button.disabled = false;
  }
  try {
    await refreshInbox();
    if (session.selected !== threadId) return;
    if (outcome === "error") {
      // Nothing changed on the host (a refused input changes nothing): keep the answers on
      // screen, unless the requests themselves changed.
      const code = log.querySelector("[data-code]")?.dataset.code;
      if (!["PARTIAL_RESUME", "UNKNOWN_INTERRUPT_ID", "PENDING_INTERRUPTS"].includes(code)) return;
    }
    await rerenderAnswers(threadId);
  } finally {
    // Until the page shows what this run left open, its own saves are not news from elsewhere.
    session.sending = false;
    checkStillOpen();
  }
}

// Say so when the requests on screen are no longer open (answered from another window, say).
function checkStillOpen() {
  const notice = document.getElementById("stale");
  if (session.sending || !session.cards.length || session.selected === null) return;
  const entry = session.threads.find((t) => t.threadId === session.selected);
  const open = new Set((entry?.interrupts ?? []).map((i) => i.id));
  if (session.cards.every((card) => open.has(card.interrupt.id))) {
    notice?.remove();
    return;
  }
  if (notice) return;
  const threadId = session.selected;
  $("answers").prepend(
    el(
      "div",
      { id: "stale", class: "refusal", role: "status" },
      el("p", { text: "These requests were answered or changed elsewhere since the page showed them." }),
      el("button", { type: "button", onclick: () => rerenderAnswers(threadId) }, "Show what is open now"),
    ),
  );
}

async function rerenderAnswers(threadId) {
  try {
    const view = await getJson(`threads/${encodeURIComponent(threadId)}`);
    if (session.selected !== threadId) return;
    const entry = session.threads.find((t) => t.threadId === threadId);
    renderAnswers($("answers"), threadId, view, entry);
    const conversation = $("detail").querySelector(".conversation");
    if (conversation) renderConversation(conversation, view.messages);
  } catch {
    // The inbox says what is left; the run log already says what happened.
  }
}

// --- the audit trail ---------------------------------------------------------------------------

async function showAudit(threadId) {
  const section = $("audit");
  section.hidden = false;
  const heading = el("h3", { id: "audit-title", tabindex: "-1", text: "Audit trail" });
  const body = el("div", {}, el("p", { class: "hint", text: "Loading…" }));
  section.replaceChildren(heading, body);
  heading.focus();
  let trail;
  try {
    trail = await getJson(`audit/${encodeURIComponent(threadId)}`);
  } catch (error) {
    body.replaceChildren(el("p", { class: "refusal", text: `The audit trail could not be read (${error.message}).` }));
    return;
  }
  if (!trail.entries.length) {
    body.replaceChildren(el("p", { class: "hint", text: "No request of this thread has been answered yet." }));
    return;
  }
  const list = el("ol");
  for (const entry of trail.entries) {
    const item = el("li", { "data-interrupt": entry.interruptId });
    item.append(el("p", {}, el("span", { class: "reason", text: entry.reason }), " ", entry.message ?? entry.interruptId));
    if (entry.proposed) item.append(el("p", {}, "Proposed: ", el("code", { text: `${entry.proposed.name} ${JSON.stringify(entry.proposed.arguments)}` })));
    const decided = { resolved: "Answered", cancelled: "Cancelled", expired: "Expired unanswered" }[entry.status] ?? entry.status;
    const by = entry.decidedBy ? ` by ${entry.decidedBy}` : "";
    const when = entry.answeredAt ? ` at ${new Date(entry.answeredAt).toLocaleString()}` : "";
    item.append(el("p", { class: `status-${entry.status}` }, `${decided}${by}${when}`));
    if (entry.status === "resolved") item.append(el("p", {}, "Decision: ", el("code", { text: JSON.stringify(entry.payload) })));
    if (entry.decidedKey) item.append(el("p", { text: `Signed with key ${entry.decidedKey}` }));
    if (entry.votes?.length) {
      const said = (v) => (v.status === "cancelled" ? "cancelled" : v.payload?.approved === false ? "denied" : "approved");
      item.append(el("ul", { class: "votes" }, entry.votes.map((v) => el("li", { text: `${said(v)} by ${v.principal}${v.key ? ` (signed, key ${v.key})` : ""} at ${new Date(v.at).toLocaleString()}` }))));
    }
    if (entry.ran) item.append(el("p", {}, "Ran: ", el("code", { text: `${entry.ran.name} ${JSON.stringify(entry.ran.arguments)}` })));
    else if (entry.ranBy === "agent") item.append(el("p", { text: "Answered by the agent's own code (not a tool of the host), which reported the result below" }));
    else if (entry.proposed) item.append(el("p", { text: "Ran: nothing" }));
    if (entry.result !== undefined) item.append(el("p", {}, "Result: ", el("code", { text: pretty(entry.result) })));
    list.append(item);
  }
  body.replaceChildren(list);
}

// --- start -------------------------------------------------------------------------------------

$("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const token = $("token").value.trim();
  if (!token) {
    // An empty token is no sign-in: say so here rather than asking the host as nobody.
    $("signin-error").textContent = "Enter the access token your host's operator gave you.";
    $("token").focus();
    return;
  }
  signIn(token);
});
$("sign-out").addEventListener("click", signOut);
window.addEventListener("hashchange", () => {
  const wanted = new URLSearchParams(location.hash.slice(1)).get("thread");
  if (wanted && wanted !== session.selected && session.principal !== null) select(wanted);
});
signIn(session.token);
