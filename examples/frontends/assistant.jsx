// The smallest assistant-ui page that answers an agui-core host's interrupts.
import React, { useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { HttpAgent } from "@ag-ui/client";
import { AssistantRuntimeProvider } from "@assistant-ui/react";
import { useAgUiInterrupts, useAgUiRuntime, useAgUiSubmitInterruptResponses } from "@assistant-ui/react-ag-ui";

const HOST = "http://127.0.0.1:8000/"; // agui serve ... --http 127.0.0.1:8000
const agent = new HttpAgent({ url: HOST, threadId: crypto.randomUUID() });

/** Collect one decision per open interrupt; submit them together (one resume answers all). */
function Interrupts() {
  const interrupts = useAgUiInterrupts();
  const submit = useAgUiSubmitInterruptResponses();
  const [decided, setDecided] = useState({});
  const decide = (interrupt, entry) => {
    const next = { ...decided, [interrupt.id]: { interruptId: interrupt.id, ...entry } };
    setDecided(next);
    if (interrupts.every((i) => i.id in next)) {
      setDecided({});
      submit(interrupts.map((i) => next[i.id]));
    }
  };
  return interrupts.map((interrupt) => (
    <p key={interrupt.id}>
      {interrupt.message}{" "}
      <button onClick={() => decide(interrupt, { status: "resolved", payload: { approved: true } })}>Approve</button>
      <button onClick={() => decide(interrupt, { status: "resolved", payload: { approved: false } })}>Deny</button>
      <button onClick={() => decide(interrupt, { status: "cancelled" })}>Cancel</button>
    </p>
  ));
}

function Chat({ runtime }) {
  const [messages, setMessages] = useState([]);
  const [text, setText] = useState("");
  useEffect(() => runtime.thread.subscribe(() => setMessages(runtime.thread.getState().messages)), [runtime]);
  const send = () => runtime.thread.append({ role: "user", content: [{ type: "text", text }] });
  return (
    <main>
      {messages
        .filter((m) => m.role === "assistant")
        .flatMap((m) => m.content.filter((part) => part.type === "text"))
        .map((part, n) => (
          <p key={n}>{part.text}</p>
        ))}
      <Interrupts />
      <input value={text} onChange={(e) => setText(e.target.value)} />
      <button onClick={send}>Send</button>
    </main>
  );
}

function App() {
  const runtime = useAgUiRuntime({ agent });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <Chat runtime={runtime} />
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
