"""The approval console for an approver (docs/approvers.md), in headless Chromium against a real
``agui serve --http --policy``: a manager signs in, finds the clerk's request in the inbox with
whose agent asks, approves it, and the audit trail names the manager; the clerk sees that the
request waits for others. Under a two-manager quorum with signed decisions, each manager
registers a key its browser holds, signs an approval, and the email goes once both have."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from tests.console.conftest import TOKENS, Served, serve
from tests.console.test_console_page import Session, interrupts_of, new_session, shoot

__all__ = ["new_session"]  # a fixture this module uses

POLICY = """\
[tools.sendEmail]
roles = ["manager"]
owner = false
"""


@pytest.fixture(scope="module")
def with_policy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("approvers")
    tokens = folder / "tokens"
    tokens.write_text(f"ann {TOKENS['ann']} clerk\nbob {TOKENS['bob']} manager\n")
    tokens.chmod(0o600)
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    yield from serve(folder, "--auth-tokens", str(tokens), "--policy", str(policy))


def test_a_manager_approves_the_clerks_email_in_the_console(with_policy: Served, new_session: Any) -> None:
    (interrupt,) = interrupts_of(with_policy.run("clerk-1", "email", who="ann"))
    bob: Session = new_session()
    bob.sign_in(with_policy, "bob")
    item = bob.page.locator('button.thread[data-thread="clerk-1"]')
    expect(item).to_contain_text("asked by ann's agent")
    bob.open("clerk-1")
    card = bob.card("Send the email to bob@example.com")
    expect(card).to_contain_text("sendEmail")
    shoot(bob.page, "console-approver.png")
    card.get_by_label("Approve", exact=True).check()
    bob.page.get_by_role("button", name="Send answer").click()
    expect(bob.run_log).to_contain_text("The email was sent to bob@example.com")
    expect(item).to_have_count(0)  # decided: nothing left for bob there
    (sent,) = bob.posts
    assert sent["resume"] == [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    (recorded,) = with_policy.get("/audit/clerk-1", who="ann").json()["entries"]
    assert (recorded["decidedBy"], recorded["decidedRoles"]) == ("bob", ["manager"])
    assert with_policy.get("/threads/clerk-1", who="bob").status_code == 404


def test_the_clerk_sees_that_the_request_waits_for_others(with_policy: Served, new_session: Any) -> None:
    interrupts_of(with_policy.run("clerk-2", "email", who="ann"))
    ann: Session = new_session()
    ann.sign_in(with_policy, "ann")
    ann.open("clerk-2")
    # Not hers to decide (separation of duties): shown as waiting for others, with no answer to give.
    expect(ann.page.locator("#answers")).to_contain_text("Nothing here waits for your answer.")
    expect(ann.page.locator(".others")).to_contain_text("Send the email to bob@example.com")
    expect(ann.card("Send the email to bob@example.com")).to_have_count(0)
    assert with_policy.get("/audit/clerk-2", who="ann").json()["entries"] == []


QUORUM_POLICY = POLICY + "approvals = 2\nsigned = true\n"


@pytest.fixture(scope="module")
def with_quorum(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Served, Path]]:
    folder = tmp_path_factory.mktemp("quorum")
    tokens = folder / "tokens"
    tokens.write_text(f"ann {TOKENS['ann']} clerk\nbob {TOKENS['bob']} manager\ndave {TOKENS['dave']} manager\n")
    tokens.chmod(0o600)
    policy = folder / "policy.toml"
    policy.write_text(QUORUM_POLICY)
    keys = folder / "keys.json"
    keys.write_text("{}")
    options = ("--auth-tokens", str(tokens), "--policy", str(policy), "--approver-keys", str(keys))
    for served in serve(folder, *options, "--approver-key-registration"):
        yield served, keys


def register(session: Session) -> str:
    """Register the session's browser key; its id, as the page shows it."""
    signing = session.page.locator("#signing")
    signing.get_by_role("button", name="Sign my decisions from this browser").click()
    expect(signing).to_contain_text("Your decisions are signed (key console-")
    text = signing.text_content() or ""
    return text[text.index("key ") + 4 : text.rindex(")")]


def test_two_managers_sign_their_approvals_and_the_email_goes_once_both_have(
    with_quorum: tuple[Served, Path], new_session: Any
) -> None:
    served, keys_file = with_quorum
    (interrupt,) = interrupts_of(served.run("pay-1", "email", who="ann"))
    dave: Session = new_session()
    dave.sign_in(served, "dave")
    dave_entry = dave.page.locator('button.thread[data-thread="pay-1"]')
    expect(dave_entry).to_contain_text("0 of 2 approvals so far")
    bob: Session = new_session()
    bob.sign_in(served, "bob")
    bob_kid = register(bob)
    bob.open("pay-1")
    card = bob.card("Send the email to bob@example.com")
    expect(card).to_contain_text("0 of 2 approvals so far; 2 more needed.")
    card.get_by_label("Approve", exact=True).check()
    bob.page.get_by_role("button", name="Send answer").click()
    expect(bob.run_log).to_contain_text("Your answers are recorded. The agent resumes once the others have decided.")
    expect(bob.run_log).to_contain_text("1 of 2 approvals so far; 1 more needed.")
    (sent,) = [p for p in bob.posts if "resume" in p]
    (entry,) = sent["resume"]
    assert entry["payload"] == {"approved": True} and entry["metadata"]["ag-ui:signature"].count(".") == 2

    # dave's inbox heard of bob's vote by itself (the live feed tells approvers too).
    expect(dave_entry).to_contain_text("1 of 2 approvals so far")
    dave_kid = register(dave)
    dave.open("pay-1")
    card = dave.card("Send the email to bob@example.com")
    expect(card).to_contain_text("1 of 2 approvals so far; 1 more needed.")
    card.get_by_label("Approve", exact=True).check()
    shoot(dave.page, "console-quorum.png")
    dave.page.get_by_role("button", name="Send answer").click()
    expect(dave.run_log).to_contain_text("The email was sent to bob@example.com")

    (line,) = served.get("/audit/pay-1", who="ann").json()["entries"]
    assert (line["interruptId"], line["decidedBy"], line["decidedKey"]) == (interrupt["id"], "dave", dave_kid)
    assert [(v["principal"], v["key"]) for v in line["votes"]] == [("bob", bob_kid), ("dave", dave_kid)]
    registered = json.loads(keys_file.read_text())
    assert [k["kid"] for k in registered["bob"]] == [bob_kid] and "d" not in registered["bob"][0]
    # Registered once: another browser of bob's cannot register a second key, and says so.
    elsewhere: Session = new_session()
    elsewhere.sign_in(served, "bob")
    expect(elsewhere.page.locator("#signing")).to_contain_text("Your signing key is not in this browser")
    again = httpx.post(served.url + "/keys", json={**registered["dave"][0], "kid": "other"}, headers=served.auth("bob"))
    assert again.status_code == 409 and again.json()["error"] == "key_registered"


def test_an_unsigned_decision_is_refused_where_the_rule_wants_it_signed(
    with_quorum: tuple[Served, Path], new_session: Any
) -> None:
    served, _ = with_quorum
    interrupts_of(served.run("pay-2", "email", who="ann"))
    bob: Session = new_session()  # a new browser: it holds no key of bob's (registered elsewhere, or not yet)
    bob.sign_in(served, "bob")
    bob.open("pay-2")
    bob.card("Send the email to bob@example.com").get_by_label("Approve", exact=True).check()
    bob.page.get_by_role("button", name="Send answer").click()
    expect(bob.run_log).to_contain_text("need your signed decision")
    assert served.get("/audit/pay-2", who="ann").json()["entries"] == []
