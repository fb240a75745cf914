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
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.frontends.agents import TEAM
from tests.frontends.browser import Browser, Host, Runtime, host_get, tool_log


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


def test_an_input_required_form_is_answered_with_its_payload(browser: Browser, tmp_path: Path) -> None:
    with Host(tmp_path, browser.origin) as host:
        _open(browser, host, "form")
        _say(browser, "form")
        browser.step("wait", testid="interrupt-0-submit")
        browser.step("fill", testid="interrupt-0-name", value="Ann")
        browser.step("fill", testid="interrupt-0-guests", value="3")
        browser.step("click", testid="interrupt-0-submit")
        browser.step("wait", testid="transcript", text="form:")
        _first, resume = browser.posted()
        interrupted, answered = _finished(browser)
        audit = host_get(host.url, "audit/form")

    (question,) = interrupted["outcome"]["interrupts"]
    assert question["reason"] == "input_required" and "responseSchema" in question
    assert resume["resume"] == [
        {"interruptId": question["id"], "status": "resolved", "payload": {"name": "Ann", "guests": 3}}
    ]
    assert answered["result"] == {"form": {"name": "Ann", "guests": 3}}
    (entry,) = audit["entries"]
    assert entry["status"] == "resolved" and entry["payload"] == {"name": "Ann", "guests": 3}
    assert tool_log(host.tools) == []


def test_a_reloaded_page_finds_the_pending_approvals_on_the_host_and_answers_them(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        _open(browser, host, "reload")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        browser.step("reload")
        # useInterrupt forgot them (it learns interrupts from run events); the host has them.
        browser.step("wait", testid="recovered-2-cancel")
        browser.step("click", testid="recovered-0-approve")
        browser.step("click", testid="recovered-1-deny")
        browser.step("click", testid="recovered-2-cancel")
        browser.step("wait", testid="transcript", text="emails:")
        first, resume = browser.posted()
        (resumed,) = _finished(browser)  # the page after the reload saw the resumed run only
        audit = host_get(host.url, "audit/reload")

    assert [e["status"] for e in resume["resume"]] == ["resolved", "resolved", "cancelled"]
    assert resume["runId"] != first["runId"]
    assert resumed["result"] == {"emails": {TEAM[0]: "executed", TEAM[1]: "denied", TEAM[2]: "cancelled"}}
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    assert [e["status"] for e in audit["entries"]] == ["resolved", "resolved", "cancelled"]


def test_the_host_killed_between_the_interrupt_and_the_answer_comes_back_from_its_sqlite_file(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        _open(browser, host, "killed")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        host.kill()
        host.start()  # the same port, the same SQLite file: the page does not know
        browser.step("click", testid="interrupt-0-approve")
        browser.step("click", testid="interrupt-1-deny")
        browser.step("click", testid="interrupt-2-cancel")
        browser.step("wait", testid="transcript", text="emails:")
        _first, resume = browser.posted()
        _interrupted, resumed = _finished(browser)
        audit = host_get(host.url, "audit/killed")

    assert host.starts == 2
    assert [e["status"] for e in resume["resume"]] == ["resolved", "resolved", "cancelled"]
    assert resumed["result"] == {"emails": {TEAM[0]: "executed", TEAM[1]: "denied", TEAM[2]: "cancelled"}}
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    assert audit["entries"][0]["ran"]["arguments"] == {"to": TEAM[0], "subject": "Hi"}


def test_an_expired_interrupt_cannot_be_cancelled_from_copilotkit_and_the_host_closes_it_on_the_next_turn(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        _open(browser, host, "expiring")
        _say(browser, "expiring")
        browser.step("wait", testid="interrupt-0-cancel")
        (interrupted,) = _finished(browser)
        (question,) = interrupted["outcome"]["interrupts"]
        expires = datetime.fromisoformat(question["expiresAt"])
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.5)
        # @ag-ui/client 0.0.59's expiry check: CopilotKit sends nothing, not even the cancel.
        browser.step("click", testid="interrupt-0-cancel")
        browser.step("wait", testid="interrupt-0-cancel", gone=True)
        # Its HttpAgent still counts the interrupt as pending and refuses a new message itself:
        # this page is stuck. A reloaded page (a fresh agent) reaches the host, which closes
        # the expired interrupt and takes the message.
        _say(browser, "stuck")
        browser.step("reload")
        _say(browser, "hello")
        browser.step("wait", testid="transcript", text="echo: hello")
        read = browser.step("read")
        audit = host_get(host.url, "audit/expiring")

    posted = [p["body"] for p in read["posted"]]
    assert len(posted) == 2 and not any("resume" in p for p in posted)
    assert any("expired" in line and "not resuming" in line for line in read["console"])
    assert any("pending interrupt(s) not addressed by resume" in line for line in read["console"])
    assert [p["messages"][-1]["content"] for p in posted] == ["expiring", "hello"]
    (entry,) = audit["entries"]
    assert entry["interruptId"] == question["id"] and entry["status"] == "expired"
    assert read["agui"]["finished"][-1]["result"] == {"echo": "hello"}


def test_through_a_copilot_runtime_the_parallel_approvals_reach_the_host_as_one_resume(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host, Runtime(host.url, browser.origin) as runtime:
        browser.step("open", page="copilotkit", query=f"runtime={runtime.url}&thread=proxied")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        browser.step("click", testid="interrupt-0-approve")
        browser.step("click", testid="interrupt-1-deny")
        browser.step("click", testid="interrupt-2-cancel")
        browser.step("wait", testid="transcript", text="emails:")
        read = browser.step("read")
        audit = host_get(host.url, "audit/proxied")

    assert [e["status"] for e in audit["entries"]] == ["resolved", "resolved", "cancelled"]
    assert [e.get("payload") for e in audit["entries"]] == [{"approved": True}, {"approved": False}, None]
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    assert not read["agui"]["errors"]
