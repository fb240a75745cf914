"""CopilotKit v2 (``useInterrupt``) in Chromium answering ``agui serve --http``'s interrupts.

The page (``pages/copilotkit.jsx``) talks to the host straight through CopilotKit's
``HttpAgent``. What is asserted is what the host received and did (the inputs the page posted,
the audit trail, the tool log), never pixels. What CopilotKit 1.74 does that a strict server
must survive is pinned here too (docs/frontends.md has the table):

- the resume carries the **interrupted run's** ``runId`` again; the host takes it (the run id
  names the attempt, the resume's answers are what the machine checks);
- for each ``tool_call`` interrupt it appends a ``tool`` message of its own (the answer as
  text) to the history it sends; the host records its own tool results and keeps none of these.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.frontends.agents import TEAM
from tests.frontends.browser import Browser, Host, host_get, tool_log


def _open(browser: Browser, host: Host, thread: str) -> None:
    browser.step("open", page="copilotkit", query=f"agent={host.url}&thread={thread}")


def _say(browser: Browser, text: str) -> None:
    browser.step("fill", testid="say", value=text)
    browser.step("click", testid="send")


def _finished(browser: Browser) -> list[dict[str, Any]]:
    read = browser.step("read")
    finished: list[dict[str, Any]] = read["agui"]["finished"]
    return finished


def test_parallel_approvals_answered_at_once_run_the_approved_tool_once(browser: Browser, tmp_path: Path) -> None:
    with Host(tmp_path, browser.origin) as host:
        _open(browser, host, "team")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        browser.step("click", testid="interrupt-0-approve")
        browser.step("click", testid="interrupt-1-deny")
        browser.step("click", testid="interrupt-2-cancel")
        browser.step("wait", testid="transcript", text="emails:")
        _say(browser, "hello")
        browser.step("wait", testid="transcript", text="echo: hello")

        first, resume, second = browser.posted()
        interrupted, resumed, chatted = _finished(browser)
        audit = host_get(host.url, "audit/team")
        view = host.view("team")

    # One resume answered all three, as the person clicked them.
    assert "resume" not in first
    ids = [i["id"] for i in interrupted["outcome"]["interrupts"]]
    assert resume["resume"] == [
        {"interruptId": ids[0], "status": "resolved", "payload": {"approved": True}},
        {"interruptId": ids[1], "status": "resolved", "payload": {"approved": False}},
        {"interruptId": ids[2], "status": "cancelled"},
    ]
    # CopilotKit's quirks, taken: the interrupted run's id again, and a tool message per answer.
    assert resume["runId"] == first["runId"] == interrupted["runId"]
    calls = [i["toolCallId"] for i in interrupted["outcome"]["interrupts"]]
    fabricated = {m["toolCallId"]: m["content"] for m in resume["messages"] if m["role"] == "tool"}
    assert fabricated.keys() == set(calls)
    assert json.loads(fabricated[calls[0]]) == {"approved": True}

    assert resumed["outcome"] == {"type": "success"}
    assert resumed["result"] == {"emails": {TEAM[0]: "executed", TEAM[1]: "denied", TEAM[2]: "cancelled"}}
    assert chatted["outcome"] == {"type": "success"} and chatted["result"] == {"echo": "hello"}
    assert "resume" not in second

    # The host ran the approved email once, and nothing else.
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    entries = audit["entries"]
    assert [(e["interruptId"], e["status"]) for e in entries] == [
        (ids[0], "resolved"),
        (ids[1], "resolved"),
        (ids[2], "cancelled"),
    ]
    assert entries[0]["ran"] == {"name": "sendEmail", "arguments": {"to": TEAM[0], "subject": "Hi"}}
    assert entries[0]["ranBy"] == "host"
    assert "ran" not in entries[1] and "ran" not in entries[2]
    # The thread keeps the host's results, not the page's fabricated tool messages.
    kept = {m["toolCallId"]: m["content"] for m in view["messages"] if m["role"] == "tool"}
    assert json.loads(kept[calls[0]]) == {"sent": True, "to": TEAM[0]}
    assert calls[2] not in kept or json.loads(kept[calls[2]]) != {"status": "cancelled"}
