"""assistant-ui (``@assistant-ui/react-ag-ui``) in Chromium answering ``agui serve --http``'s interrupts.

assistant-ui's AG-UI runtime has interrupt support of its own: ``useAgUiInterrupts`` lists the
pending interrupts and ``useAgUiSubmitInterruptResponses`` sends one resume for them, in a run
with a new ``runId``, with no message of its own added. The page (``pages/assistant.jsx``)
answers three parallel approvals at once; the host's records are asserted, not pixels.
"""

from __future__ import annotations

from pathlib import Path

from tests.frontends.agents import TEAM
from tests.frontends.browser import Browser, Host, host_get, tool_log


def test_parallel_approvals_answered_at_once_through_assistant_ui(browser: Browser, tmp_path: Path) -> None:
    with Host(tmp_path, browser.origin) as host:
        browser.step("open", page="assistant", query=f"agent={host.url}&thread=aui")
        browser.step("fill", testid="say", value="team")
        browser.step("click", testid="send")
        browser.step("wait", testid="interrupt-2-cancel")
        browser.step("click", testid="interrupt-0-approve")
        browser.step("click", testid="interrupt-1-deny")
        browser.step("click", testid="interrupt-2-cancel")
        browser.step("wait", testid="transcript", text="emails:")
        browser.step("fill", testid="say", value="hello")
        browser.step("click", testid="send")
        browser.step("wait", testid="transcript", text="echo: hello")
        read = browser.step("read")
        audit = host_get(host.url, "audit/aui")

    first, resume, second = (p["body"] for p in read["posted"])
    interrupted, resumed = read["agui"]["finished"][:2]
    ids = [i["id"] for i in interrupted["outcome"]["interrupts"]]
    assert resume["resume"] == [
        {"interruptId": ids[0], "status": "resolved", "payload": {"approved": True}},
        {"interruptId": ids[1], "status": "resolved", "payload": {"approved": False}},
        {"interruptId": ids[2], "status": "cancelled"},
    ]
    # Unlike CopilotKit: a new runId, and no tool message of the client's own.
    assert len({first["runId"], resume["runId"], second["runId"]}) == 3
    assert not [m for m in resume["messages"] if m["role"] == "tool"]
    assert "resume" not in second and not read["agui"]["errors"]
    assert resumed["result"] == {"emails": {TEAM[0]: "executed", TEAM[1]: "denied", TEAM[2]: "cancelled"}}
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    assert [(e["status"], "ran" in e) for e in audit["entries"]] == [
        ("resolved", True),
        ("resolved", False),
        ("cancelled", False),
    ]
