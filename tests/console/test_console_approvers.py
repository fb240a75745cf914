"""The approval console for an approver (docs/approvers.md), in headless Chromium against a real
``agui serve --http --policy``: a manager signs in, finds the clerk's request in the inbox with
whose agent asks, approves it, and the audit trail names the manager."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

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


def test_the_clerk_sees_the_request_but_her_answer_is_refused(with_policy: Served, new_session: Any) -> None:
    interrupts_of(with_policy.run("clerk-2", "email", who="ann"))
    ann: Session = new_session()
    ann.sign_in(with_policy, "ann")
    ann.open("clerk-2")
    card = ann.card("Send the email to bob@example.com")
    card.get_by_label("Approve", exact=True).check()
    ann.page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("FORBIDDEN")
    assert with_policy.get("/audit/clerk-2", who="ann").json()["entries"] == []
