// A CopilotKit v2 page that answers agui-core's interrupts with useInterrupt.
//
// Query: ?agent=URL (an agui-core host, HttpAgent straight to it) or ?runtime=URL (a
// CopilotRuntime that proxies to the host), and ?thread=ID. Everything the tests click or read
// carries a data-testid; nothing here decides anything for the host.
//
// The interrupt UI is CopilotKit's: useInterrupt hands the page the open interrupts and the
// resolve/cancel functions, and sends the resume itself once every interrupt is addressed.
// After a reload useInterrupt knows nothing (it learns interrupts from run events only), so the
// page asks the host (GET /threads/{id}) and answers what it finds through copilotkit.runAgent.
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { CopilotKitProvider, HttpAgent, useAgent, useCopilotKit, useInterrupt } from "@copilotkit/react-core/v2";

const query = new URLSearchParams(location.search);
const agentUrl = query.get("agent");
const runtimeUrl = query.get("runtime");
const threadId = query.get("thread");
window.__agui = { errors: [], finished: [] };

function Answers({ interrupts, answer, prefix }) {
  const [form, setForm] = useState({ name: "", guests: "" });
  return (
    <ul data-testid={`${prefix}-interrupts`}>
      {interrupts.map((interrupt, n) => (
        <li key={interrupt.id} data-testid={`${prefix}-${n}`} data-reason={interrupt.reason}>
          <span>{interrupt.message}</span>
          {interrupt.reason === "input_required" ? (
            <>
              <input data-testid={`${prefix}-${n}-name`} onChange={(e) => setForm({ ...form, name: e.target.value })} />
              <input data-testid={`${prefix}-${n}-guests`} onChange={(e) => setForm({ ...form, guests: e.target.value })} />
              <button
                data-testid={`${prefix}-${n}-submit`}
                onClick={() => answer(interrupt, { payload: { name: form.name, guests: Number(form.guests) } })}
              >
                Submit
              </button>
            </>
          ) : interrupt.reason === "tool_call" ? (
            <>
              <button data-testid={`${prefix}-${n}-approve`} onClick={() => answer(interrupt, { payload: { approved: true } })}>
                Approve
              </button>
              <button data-testid={`${prefix}-${n}-deny`} onClick={() => answer(interrupt, { payload: { approved: false } })}>
                Deny
              </button>
            </>
          ) : (
            <button data-testid={`${prefix}-${n}-yes`} onClick={() => answer(interrupt, { payload: true })}>
              Yes
            </button>
          )}
          <button data-testid={`${prefix}-${n}-cancel`} onClick={() => answer(interrupt, { cancel: true })}>
            Cancel
          </button>
        </li>
      ))}
    </ul>
  );
}

/** Interrupts found on the host after a reload, answered through copilotkit.runAgent. */
function Recovered({ agent }) {
  const { copilotkit } = useCopilotKit();
  const [view, setView] = useState(null);
  const [answers, setAnswers] = useState({});
  useEffect(() => {
    if (!agentUrl) return;
    fetch(new URL(`threads/${encodeURIComponent(threadId)}`, agentUrl)).then(async (response) => {
      if (response.ok) setView(await response.json());
    });
  }, []);
  if (!view || view.interrupts.length === 0) return null;
  const answer = (interrupt, decision) => {
    const next = { ...answers, [interrupt.id]: decision };
    setAnswers(next);
    if (view.interrupts.every((i) => i.id in next)) {
      const resume = view.interrupts.map((i) =>
        next[i.id].cancel ? { interruptId: i.id, status: "cancelled" } : { interruptId: i.id, status: "resolved", payload: next[i.id].payload },
      );
      agent.setMessages(view.messages);
      setView(null);
      copilotkit.runAgent({ agent, resume }).catch((err) => window.__agui.errors.push({ message: String(err) }));
    }
  };
  return <Answers interrupts={view.interrupts} answer={answer} prefix="recovered" />;
}

function Chat() {
  const { agent } = runtimeUrl
    ? useAgent({ agentId: "chat-1", runtimeAgentId: "default", threadId })
    : useAgent({ agentId: "default" });
  const { copilotkit } = useCopilotKit();
  const [text, setText] = useState("");
  useEffect(() => {
    const subscription = agent.subscribe({
      onRunErrorEvent: ({ event }) => void window.__agui.errors.push({ message: event.message, code: event.code }),
      onRunFinishedEvent: ({ event }) => void window.__agui.finished.push(event),
    });
    return () => subscription.unsubscribe();
  }, [agent]);
  const interrupt = useInterrupt({
    agentId: runtimeUrl ? "chat-1" : undefined, // the proxied agent, or the provider's default
    renderInChat: false,
    render: ({ interrupts, resolve, cancel }) => (
      <Answers
        interrupts={interrupts}
        prefix="interrupt"
        answer={(i, decision) => {
          const sent = decision.cancel ? cancel(i.id) : resolve(decision.payload, i.id);
          sent.catch((err) => window.__agui.errors.push({ message: String(err) }));
        }}
      />
    ),
  });
  const send = () => {
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
    copilotkit.runAgent({ agent }).catch((err) => window.__agui.errors.push({ message: String(err) }));
  };
  return (
    <main>
      <ol data-testid="transcript">
        {agent.messages
          .filter((m) => m.role === "assistant" && typeof m.content === "string" && m.content)
          .map((m) => (
            <li key={m.id}>{m.content}</li>
          ))}
      </ol>
      <p data-testid="status">{agent.isRunning ? "running" : "idle"}</p>
      {interrupt}
      <Recovered agent={agent} />
      <input data-testid="say" value={text} onChange={(e) => setText(e.target.value)} />
      <button data-testid="send" onClick={send}>
        Send
      </button>
    </main>
  );
}

function App() {
  if (runtimeUrl) {
    return (
      <CopilotKitProvider runtimeUrl={runtimeUrl}>
        <Chat />
      </CopilotKitProvider>
    );
  }
  const [agents] = useState(() => ({ default: new HttpAgent({ url: agentUrl, threadId }) }));
  return (
    <CopilotKitProvider selfManagedAgents={agents}>
      <Chat />
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
