// An assistant-ui page (@assistant-ui/react-ag-ui) that answers agui-core's interrupts.
//
// Query: ?agent=URL (an agui-core host) and ?thread=ID. assistant-ui's AG-UI runtime keeps the
// pending interrupts (useAgUiInterrupts) and sends one resume for all of them
// (useAgUiSubmitInterruptResponses); the page collects a decision per interrupt and submits
// them together once each has one: an approval, a form (input_required) or a confirmation.
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { HttpAgent } from "@ag-ui/client";
import { AssistantRuntimeProvider } from "@assistant-ui/react";
import { useAgUiInterrupts, useAgUiRuntime, useAgUiSubmitInterruptResponses } from "@assistant-ui/react-ag-ui";

const query = new URLSearchParams(location.search);
const agent = new HttpAgent({ url: query.get("agent"), threadId: query.get("thread") });
window.__agui = { errors: [], finished: [] };
agent.subscribe({
  onRunErrorEvent: ({ event }) => void window.__agui.errors.push({ message: event.message, code: event.code }),
  onRunFinishedEvent: ({ event }) => void window.__agui.finished.push(event),
});

function Interrupts() {
  const interrupts = useAgUiInterrupts();
  const submit = useAgUiSubmitInterruptResponses();
  const [decided, setDecided] = useState({});
  const decide = (interrupt, entry) => {
    const next = { ...decided, [interrupt.id]: { interruptId: interrupt.id, ...entry } };
    setDecided(next);
    if (interrupts.every((i) => i.id in next)) {
      setDecided({});
      submit(interrupts.map((i) => next[i.id])).catch((err) => window.__agui.errors.push({ message: String(err) }));
    }
  };
  const [form, setForm] = useState({ name: "", guests: "" });
  const resolved = (interrupt, payload) => decide(interrupt, { status: "resolved", payload });
  return (
    <ul data-testid="interrupts">
      {interrupts.map((interrupt, n) => (
        <li key={interrupt.id} data-testid={`interrupt-${n}`} data-reason={interrupt.reason}>
          <span>{interrupt.message}</span>
          {interrupt.reason === "input_required" ? (
            <>
              <input data-testid={`interrupt-${n}-name`} onChange={(e) => setForm({ ...form, name: e.target.value })} />
              <input data-testid={`interrupt-${n}-guests`} onChange={(e) => setForm({ ...form, guests: e.target.value })} />
              <button
                data-testid={`interrupt-${n}-submit`}
                onClick={() => resolved(interrupt, { name: form.name, guests: Number(form.guests) })}
              >
                Submit
              </button>
            </>
          ) : interrupt.reason === "tool_call" ? (
            <>
              <button data-testid={`interrupt-${n}-approve`} onClick={() => resolved(interrupt, { approved: true })}>
                Approve
              </button>
              <button data-testid={`interrupt-${n}-deny`} onClick={() => resolved(interrupt, { approved: false })}>
                Deny
              </button>
            </>
          ) : (
            <button data-testid={`interrupt-${n}-yes`} onClick={() => resolved(interrupt, true)}>
              Yes
            </button>
          )}
          <button data-testid={`interrupt-${n}-cancel`} onClick={() => decide(interrupt, { status: "cancelled" })}>
            Cancel
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Interrupts found on the host after a reload (the runtime forgets them), answered through the HttpAgent. */
function Recovered() {
  const [view, setView] = useState(null);
  const [answers, setAnswers] = useState({});
  const [done, setDone] = useState(null);
  useEffect(() => {
    fetch(new URL(`threads/${encodeURIComponent(query.get("thread"))}`, query.get("agent"))).then(async (response) => {
      if (response.ok) setView(await response.json());
    });
  }, []);
  if (done) return <p data-testid="recovered-done">{done}</p>;
  if (!view || view.interrupts.length === 0) return null;
  const answer = (interrupt, entry) => {
    const next = { ...answers, [interrupt.id]: { interruptId: interrupt.id, ...entry } };
    setAnswers(next);
    if (view.interrupts.every((i) => i.id in next)) {
      agent.setMessages(view.messages);
      agent
        .runAgent({ resume: view.interrupts.map((i) => next[i.id]) })
        .then(() => setDone("answered"))
        .catch((err) => window.__agui.errors.push({ message: String(err) }));
    }
  };
  return (
    <ul data-testid="recovered">
      {view.interrupts.map((interrupt, n) => (
        <li key={interrupt.id}>
          <button data-testid={`recovered-${n}-approve`} onClick={() => answer(interrupt, { status: "resolved", payload: { approved: true } })}>
            Approve
          </button>
          <button data-testid={`recovered-${n}-deny`} onClick={() => answer(interrupt, { status: "resolved", payload: { approved: false } })}>
            Deny
          </button>
          <button data-testid={`recovered-${n}-cancel`} onClick={() => answer(interrupt, { status: "cancelled" })}>
            Cancel
          </button>
        </li>
      ))}
    </ul>
  );
}

function Chat({ runtime }) {
  const [messages, setMessages] = useState([]);
  const [text, setText] = useState("");
  useEffect(() => runtime.thread.subscribe(() => setMessages(runtime.thread.getState().messages)), [runtime]);
  const said = messages
    .filter((m) => m.role === "assistant")
    .flatMap((m) => m.content.filter((part) => part.type === "text").map((part) => part.text));
  const send = () => runtime.thread.append({ role: "user", content: [{ type: "text", text }] });
  return (
    <main>
      <ol data-testid="transcript">
        {said.map((line, n) => (
          <li key={n}>{line}</li>
        ))}
      </ol>
      <Interrupts />
      <Recovered />
      <input data-testid="say" value={text} onChange={(e) => setText(e.target.value)} />
      <button data-testid="send" onClick={send}>
        Send
      </button>
    </main>
  );
}

function App() {
  const runtime = useAgUiRuntime({ agent, onError: (e) => void window.__agui.errors.push({ message: String(e) }) });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <Chat runtime={runtime} />
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
