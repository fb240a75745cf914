// The smallest CopilotKit v2 page that answers an agui-core host's interrupts with useInterrupt.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { CopilotKitProvider, HttpAgent, useAgent, useCopilotKit, useInterrupt } from "@copilotkit/react-core/v2";

const HOST = "http://127.0.0.1:8000/"; // agui serve ... --http 127.0.0.1:8000

function Chat() {
  const { agent } = useAgent({ agentId: "default" });
  const { copilotkit } = useCopilotKit();
  const [text, setText] = useState("");
  // One element per open interrupt; CopilotKit sends a single resume once each is answered.
  const pending = useInterrupt({
    renderInChat: false,
    render: ({ interrupts, resolve, cancel }) => (
      <ul>
        {interrupts.map((interrupt) => (
          <li key={interrupt.id}>
            {interrupt.message}{" "}
            <button onClick={() => resolve({ approved: true }, interrupt.id)}>Approve</button>
            <button onClick={() => resolve({ approved: false }, interrupt.id)}>Deny</button>
            <button onClick={() => cancel(interrupt.id)}>Cancel</button>
          </li>
        ))}
      </ul>
    ),
  });
  const send = () => {
    agent.addMessage({ id: crypto.randomUUID(), role: "user", content: text });
    copilotkit.runAgent({ agent });
  };
  return (
    <main>
      {agent.messages
        .filter((m) => m.role === "assistant" && m.content)
        .map((m) => (
          <p key={m.id}>{m.content}</p>
        ))}
      {pending}
      <input value={text} onChange={(e) => setText(e.target.value)} />
      <button onClick={send}>Send</button>
    </main>
  );
}

function App() {
  const [agents] = useState(() => ({ default: new HttpAgent({ url: HOST, threadId: crypto.randomUUID() }) }));
  return (
    <CopilotKitProvider selfManagedAgents={agents}>
      <Chat />
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(<App />);
