"""assistant-ui (``@assistant-ui/react-ag-ui``) in Chromium answering ``agui serve --http``'s interrupts.

assistant-ui's AG-UI runtime has interrupt support of its own: ``useAgUiInterrupts`` lists the
pending interrupts and ``useAgUiSubmitInterruptResponses`` sends one resume for them, in a run
with a new ``runId``, with no message of its own added. The page (``pages/assistant.jsx``)
answers approvals, a form and a confirmation; the host's records are asserted, not pixels.
What react-ag-ui 0.0.57 does that a server must survive is pinned here (docs/frontends.md):
it checks ``expiresAt`` itself and then refuses every message until reloaded, and after a
reload it forgets the open interrupts and sends new input as if none were open (the page
finds them in ``GET /threads/{id}`` and answers them through its ``HttpAgent``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
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


def _say(browser: Browser, text: str) -> None:
    browser.step("fill", testid="say", value=text)
    browser.step("click", testid="send")


def test_an_input_required_form_is_answered_through_assistant_ui(browser: Browser, tmp_path: Path) -> None:
    with Host(tmp_path, browser.origin) as host:
        browser.step("open", page="assistant", query=f"agent={host.url}&thread=aui-form")
        _say(browser, "form")
        browser.step("wait", testid="interrupt-0-submit")
        browser.step("fill", testid="interrupt-0-name", value="Ann")
        browser.step("fill", testid="interrupt-0-guests", value="3")
        browser.step("click", testid="interrupt-0-submit")
        browser.step("wait", testid="transcript", text="form:")
        read = browser.step("read")
        audit = host_get(host.url, "audit/aui-form")

    _first, resume = (p["body"] for p in read["posted"])
    interrupted, answered = read["agui"]["finished"]
    (question,) = interrupted["outcome"]["interrupts"]
    assert question["reason"] == "input_required" and "responseSchema" in question
    assert resume["resume"] == [
        {"interruptId": question["id"], "status": "resolved", "payload": {"name": "Ann", "guests": 3}}
    ]
    assert answered["result"] == {"form": {"name": "Ann", "guests": 3}}
    (entry,) = audit["entries"]
    assert entry["status"] == "resolved" and entry["payload"] == {"name": "Ann", "guests": 3}


def test_the_host_killed_between_the_interrupt_and_the_answer_is_answered_from_the_open_page(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        browser.step("open", page="assistant", query=f"agent={host.url}&thread=aui-killed")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        host.kill()
        host.start()  # the same port, the same SQLite file: the page does not know
        browser.step("click", testid="interrupt-0-approve")
        browser.step("click", testid="interrupt-1-deny")
        browser.step("click", testid="interrupt-2-cancel")
        browser.step("wait", testid="transcript", text="emails:")
        read = browser.step("read")
        audit = host_get(host.url, "audit/aui-killed")

    _first, resume = (p["body"] for p in read["posted"])
    assert host.starts == 2
    assert [e["status"] for e in resume["resume"]] == ["resolved", "resolved", "cancelled"]
    assert read["agui"]["finished"][-1]["result"] == {
        "emails": {TEAM[0]: "executed", TEAM[1]: "denied", TEAM[2]: "cancelled"}
    }
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    assert audit["entries"][0]["ran"]["arguments"] == {"to": TEAM[0], "subject": "Hi"}


def test_an_expired_interrupt_is_refused_by_assistant_ui_and_the_host_closes_it_on_the_next_message(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        browser.step("open", page="assistant", query=f"agent={host.url}&thread=aui-expiring")
        _say(browser, "expiring")
        browser.step("wait", testid="interrupt-0-cancel")
        (interrupted,) = browser.step("read")["agui"]["finished"]
        (question,) = interrupted["outcome"]["interrupts"]
        expires = datetime.fromisoformat(question["expiresAt"])
        time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.5)
        # assistant-ui checks expiresAt itself and sends nothing, not even the cancel.
        browser.step("click", testid="interrupt-0-cancel")
        # It still counts the interrupt as pending and refuses a new message itself: this page
        # is stuck. A reloaded page (a fresh runtime) reaches the host, which closes the
        # expired interrupt and takes the message.
        _say(browser, "stuck")
        refused = browser.step("read")["agui"]["errors"]
        browser.step("reload")
        _say(browser, "hello")
        browser.step("wait", testid="transcript", text="echo: hello")
        read = browser.step("read")
        audit = host_get(host.url, "audit/aui-expiring")

    (refusal,) = refused
    assert "submitInterruptResponses" in refusal["message"] and "expired" in refusal["message"]
    assert any("cannot start a new run while interrupts are pending" in line for line in read["console"])
    posted = [p["body"] for p in read["posted"]]
    assert [p["messages"][-1]["content"] for p in posted] == ["expiring", "hello"]
    assert not any("resume" in p for p in posted)
    (entry,) = audit["entries"]
    assert entry["interruptId"] == question["id"] and entry["status"] == "expired"
    assert read["agui"]["finished"][-1]["result"] == {"echo": "hello"}


def test_after_a_reload_assistant_ui_forgets_the_pending_approvals_and_the_host_refuses_new_input(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        browser.step("open", page="assistant", query=f"agent={host.url}&thread=aui-reload")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        browser.step("reload")
        # Its runtime learns interrupts from run events only, so it sends the new message
        # as if nothing were pending; the host refuses it and keeps the approvals open.
        _say(browser, "hello")
        read = browser.step("read")
        for _ in range(150):  # 30 s at most for the refusal to reach the page
            if read["agui"]["errors"]:
                break
            time.sleep(0.2)
            read = browser.step("read")
        view = host.view("aui-reload")

    posted = [p["body"] for p in read["posted"]]
    assert [p["messages"][-1]["content"] for p in posted] == ["team", "hello"]
    assert not any("resume" in p for p in posted)
    refusal = read["agui"]["errors"][0]  # the RUN_ERROR event (the runtime then reports it again)
    assert refusal["code"] == "PENDING_INTERRUPTS"
    assert all(i["id"] in refusal["message"] for i in view["interrupts"])
    assert len(view["interrupts"]) == 3
    assert tool_log(host.tools) == []


def test_after_a_reload_the_page_finds_the_pending_approvals_on_the_host_and_answers_them(
    browser: Browser, tmp_path: Path
) -> None:
    with Host(tmp_path, browser.origin) as host:
        browser.step("open", page="assistant", query=f"agent={host.url}&thread=aui-recover")
        _say(browser, "team")
        browser.step("wait", testid="interrupt-2-cancel")
        browser.step("reload")
        browser.step("wait", testid="recovered-2-cancel")  # read from GET /threads/{id}
        browser.step("click", testid="recovered-0-approve")
        browser.step("click", testid="recovered-1-deny")
        browser.step("click", testid="recovered-2-cancel")
        browser.step("wait", testid="recovered-done")
        read = browser.step("read")
        audit = host_get(host.url, "audit/aui-recover")

    first, resume = (p["body"] for p in read["posted"])
    assert [e["status"] for e in resume["resume"]] == ["resolved", "resolved", "cancelled"]
    assert resume["runId"] != first["runId"] and not read["agui"]["errors"]
    (resumed,) = read["agui"]["finished"]  # the page after the reload saw the resumed run only
    assert resumed["result"] == {"emails": {TEAM[0]: "executed", TEAM[1]: "denied", TEAM[2]: "cancelled"}}
    assert tool_log(host.tools) == [{"tool": "sendEmail", "to": TEAM[0], "subject": "Hi"}]
    assert [e["status"] for e in audit["entries"]] == ["resolved", "resolved", "cancelled"]
