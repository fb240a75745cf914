"""The approval console, driven in headless Chromium against a real ``agui serve --http``.

Each test plays what a person does on the page: a thread started by another client appears in
the inbox by itself, its interrupts are rendered by reason, answered (approve with edits, deny
by keyboard alone, a form fixed before it is sent, three parallel approvals with one
cancelled), and the host's answer streams back; expiry and the host's refusal of a late answer
are shown in plain words, and another principal sees nothing of the first one's threads.
What the page sent is read off the browser's own requests, and what the host did is read
back from its audit trail.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from tests.console.conftest import ROOT, TOKENS, Served

DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}
SCREENSHOT = ROOT / "docs" / "console.png"


class Session:
    """A page signed in as one principal, and the runs (POSTs) it sent."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.posts: list[dict[str, Any]] = []
        self.errors: list[str] = []
        page.on("request", self._sent)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _sent(self, request: Request) -> None:
        if request.method == "POST":
            self.posts.append(json.loads(request.post_data or "null"))

    def sign_in(self, served: Served, who: str) -> None:
        self.page.goto(served.console)
        self.page.get_by_label("Your access token").fill(TOKENS[who])
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.locator("#who")).to_have_text(f"Signed in as {who}")
        expect(self.page.locator("#feed")).to_have_text("Live: this list updates by itself.")

    def open(self, thread_id: str) -> None:
        item = self.page.locator(f'button.thread[data-thread="{thread_id}"]')
        expect(item).to_be_visible()
        item.click()
        expect(self.page.locator("#detail-title")).to_have_text(f"Thread {thread_id}")

    def card(self, text: str) -> Any:
        return self.page.locator(".card", has_text=text)

    @property
    def run_log(self) -> Any:
        return self.page.locator("#run")


@pytest.fixture
def new_session(browser: Any) -> Iterator[Any]:
    contexts = []
    sessions: list[Session] = []

    def make(**options: Any) -> Session:
        context = browser.new_context(viewport=DESKTOP, **options)
        contexts.append(context)
        session = Session(context.new_page())
        sessions.append(session)
        return session

    yield make
    for context in contexts:
        context.close()
    for session in sessions:
        assert session.errors == [], session.errors  # no script failed on the page


@pytest.fixture
def ann(served: Served, new_session: Any) -> Session:
    session: Session = new_session()
    session.sign_in(served, "ann")
    return session


def interrupts_of(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "interrupt", finished
    found: list[dict[str, Any]] = finished["outcome"]["interrupts"]
    return found


def tab_to(page: Page, selector: str, limit: int = 60) -> None:
    """Press Tab until the element ``selector`` names has the focus (keyboard only)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement?.matches(s) ?? false", selector):
            return
    raise AssertionError(f"{limit} presses of Tab never reached {selector}")


def test_a_thread_appears_by_itself_and_is_approved_with_edits_fixed_before_sending(
    served: Served, ann: Session
) -> None:
    page = ann.page
    (interrupt,) = interrupts_of(served.run("edit-1", "email"))  # another client starts it
    ann.open("edit-1")  # listed without a reload: the feed said the thread changed
    card = ann.card("Send the email to bob@example.com")
    expect(card).to_contain_text("sendEmail")
    expect(card.locator("dl.args")).to_contain_text("bob@example.com")

    card.get_by_label("Approve with edits").check()
    to = card.get_by_label("to (required)")
    expect(to).to_have_value("bob@example.com")  # the edit form starts from the proposal
    to.fill("carol at example.com")
    card.get_by_label("subject (required)").fill("Hello Carol")
    page.get_by_role("button", name="Send answer").click()
    expect(to).to_have_attribute("aria-invalid", "true")
    expect(card).to_contain_text("Must be an email address")
    assert ann.posts == []  # nothing invalid reached the host

    to.fill("carol@example.com")
    page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("The email was sent to carol@example.com with your edits.")
    expect(ann.run_log).to_contain_text('Result of sendEmail: {"sent":true,"to":"carol@example.com"')
    expect(page.locator('button.thread[data-thread="edit-1"]')).to_have_count(0)  # answered: gone

    (sent,) = ann.posts
    assert sent["threadId"] == "edit-1" and sent["resume"] == [
        {
            "interruptId": interrupt["id"],
            "status": "resolved",
            "payload": {
                "approved": True,
                "editedArgs": {"to": "carol@example.com", "subject": "Hello Carol", "body": "Hi Bob, just saying hi."},
            },
        }
    ]

    page.get_by_role("button", name="Audit trail").click()
    audit = page.locator("#audit")
    expect(page.locator("#audit-title")).to_be_focused()
    entry = audit.locator(f'li[data-interrupt="{interrupt["id"]}"]')
    expect(entry).to_contain_text('Proposed: sendEmail {"to":"bob@example.com"')
    expect(entry).to_contain_text("Answered by ann")
    expect(entry).to_contain_text('Ran: sendEmail {"to":"carol@example.com","subject":"Hello Carol"')
    expect(entry).to_contain_text('Result: {"sent":true,"to":"carol@example.com"')
    (recorded,) = served.get("/audit/edit-1").json()["entries"]
    assert recorded["ran"]["arguments"]["to"] == "carol@example.com" and recorded["decidedBy"] == "ann"


def test_a_denial_made_with_the_keyboard_alone(served: Served, ann: Session) -> None:
    page = ann.page
    served.run("deny-1", "email")
    expect(page.locator('button.thread[data-thread="deny-1"]')).to_be_visible()
    page.locator("body").focus()
    tab_to(page, 'button.thread[data-thread="deny-1"]')
    page.keyboard.press("Enter")
    expect(page.locator("#detail-title")).to_have_text("Thread deny-1")
    tab_to(page, 'input[type="radio"][value="approve"]')
    page.keyboard.press("ArrowRight")  # Approve with edits
    page.keyboard.press("ArrowRight")  # Deny
    expect(page.locator('input[type="radio"][value="deny"]')).to_be_checked()
    tab_to(page, 'button[type="submit"]')
    page.keyboard.press("Enter")
    expect(ann.run_log).to_contain_text("The email was not sent to bob@example.com: you denied it.")
    assert [entry["payload"] for entry in ann.posts[0]["resume"]] == [{"approved": False}]
    (recorded,) = served.get("/audit/deny-1").json()["entries"]
    assert recorded["payload"] == {"approved": False} and "ran" not in recorded


def test_the_quarterly_form_refuses_a_wrong_year_until_it_is_fixed_then_confirms(served: Served, ann: Session) -> None:
    page = ann.page
    served.run("form-1", "filing")
    ann.open("form-1")
    card = ann.card("Please provide the quarterly filing details.")
    expect(card.locator(".expiry")).to_contain_text(re.compile(r"expires in (9|10):\d\d"))
    card.get_by_label("quarter (required)").select_option(label="Q1")
    year = card.get_by_label("year (required)")
    year.fill("1999")
    page.get_by_role("button", name="Send answer").click()
    expect(card).to_contain_text("Must be at least 2000")
    expect(card).to_contain_text("Is required")  # revenue, left empty
    expect(year).to_have_attribute("aria-invalid", "true")
    assert ann.posts == []

    year.fill("2026")
    card.get_by_label("revenue (required)").fill("125000.5")
    page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("Ready to file Q1 2026, revenue 125,000.5.")
    assert ann.posts[0]["resume"][0]["payload"] == {"quarter": "Q1", "year": 2026, "revenue": 125000.5}

    confirm = ann.card("File Q1 2026, revenue 125,000.5 now?")  # the chained confirmation
    confirm.get_by_label("Yes").check()
    page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("Filed Q1 2026, revenue 125,000.5.")
    expect(page.locator("#answers")).to_contain_text("Nothing on this thread waits for an answer.")
    assert ann.posts[1]["resume"][0]["payload"] is True


def test_three_parallel_approvals_go_in_one_resume_with_one_cancelled(served: Served, ann: Session) -> None:
    page = ann.page
    served.run("shot-filing", "filing")
    served.run("shot-email", "email")
    interrupts = interrupts_of(served.run("parallel-1", "parallel"))
    ann.open("parallel-1")
    expect(page.locator(".card")).to_have_count(3)
    ann.card("a@example.com").get_by_label("Approve", exact=True).check()
    ann.card("b@example.com").get_by_label("Approve", exact=True).check()
    page.get_by_role("button", name="Send all answers").click()
    expect(ann.card("c@example.com")).to_contain_text("Choose what to do with this request.")
    assert ann.posts == []
    ann.card("c@example.com").get_by_label("Cancel").check()

    expect(page.locator("button.thread").first).to_have_attribute("data-thread", "parallel-1")  # newest first
    page.mouse.move(0, 0)
    SCREENSHOT.parent.mkdir(exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert SCREENSHOT.stat().st_size > 10_000

    page.set_viewport_size(PHONE)  # readable on a phone: nothing wider than the screen
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    expect(page.get_by_role("button", name="Send all answers")).to_be_visible()
    page.get_by_role("button", name="Send all answers").click()
    expect(ann.run_log).to_contain_text(
        "Emails: sent to a@example.com; sent to b@example.com; not sent to c@example.com: cancelled."
    )
    expect(ann.run_log.get_by_text("Result of sendEmail")).to_have_count(2)

    (sent,) = ann.posts
    assert [(e["interruptId"], e["status"], e.get("payload")) for e in sent["resume"]] == [
        (interrupts[0]["id"], "resolved", {"approved": True}),
        (interrupts[1]["id"], "resolved", {"approved": True}),
        (interrupts[2]["id"], "cancelled", None),
    ]
    trail = served.get("/audit/parallel-1").json()["entries"]
    assert [(e["status"], "ran" in e) for e in trail] == [("resolved", True), ("resolved", True), ("cancelled", False)]


def test_an_expired_request_is_dismissed_and_a_late_answer_is_refused_in_plain_words(
    served: Served, ann: Session, new_session: Any
) -> None:
    page = ann.page
    served.run("expiring-1", "expiring")
    ann.open("expiring-1")
    card = ann.card("Quick: the quarterly numbers, please.")
    expect(card).to_have_class(re.compile(r"\bexpired\b"), timeout=15_000)  # counted down on the page
    expect(card).to_contain_text("it can no longer be answered")
    expect(card.get_by_label("year (required)")).to_be_disabled()
    dismissed = card.get_attribute("data-interrupt")  # read now: the card goes once the thread waits no more
    page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("Nothing is waiting any more.")
    assert ann.posts[0]["resume"] == [{"interruptId": dismissed, "status": "cancelled"}]
    expect(page.locator('button.thread[data-thread="expiring-1"]')).to_have_count(0)

    # A page whose clock is behind the host's still offers the form; the host refuses the answer.
    late = new_session()
    late.page.clock.set_fixed_time(datetime.now(UTC))
    late.sign_in(served, "ann")
    (interrupt,) = interrupts_of(served.run("expiring-2", "expiring"))
    late.open("expiring-2")
    form = late.card("Quick: the quarterly numbers, please.")
    form.get_by_label("quarter (required)").select_option(label="Q2")
    form.get_by_label("year (required)").fill("2026")
    form.get_by_label("revenue (required)").fill("10")
    expires = datetime.fromisoformat(interrupt["expiresAt"])
    time.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.3)
    late.page.get_by_role("button", name="Send answer").click()
    refusal = late.run_log.locator('[data-code="INTERRUPT_EXPIRED"]')
    expect(refusal).to_contain_text("Too late: a request expired before your answer reached the agent.")
    expect(form).to_be_visible()  # nothing changed on the host, so the page keeps what was typed
    assert [e["status"] for e in late.posts[0]["resume"]] == ["resolved"]


def test_another_principal_sees_nothing_of_the_first_ones_threads(served: Served, new_session: Any) -> None:
    served.run("private-1", "email")
    bob = new_session()
    page = bob.page
    page.goto(served.console)
    page.get_by_label("Your access token").fill("not-a-token-of-anyone")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signin-error")).to_have_text("That token was not accepted. Check it and try again.")

    bob.sign_in(served, "bob")
    expect(page.locator("#empty")).to_be_visible()
    expect(page.locator("button.thread")).to_have_count(0)
    page.goto(served.console + "#thread=private-1")  # a link to ann's thread
    page.reload()
    expect(page.locator("#who")).to_have_text("Signed in as bob")  # the token stayed in the tab
    expect(page.locator("#answers")).to_have_text("There is no such thread, or it is not yours to open.")
    expect(page.locator(".card")).to_have_count(0)
    expect(page.locator(".conversation")).to_have_text("")  # not a word of ann's conversation

    assert served.get("/inbox", who="bob").json() == {"principal": "bob", "threads": []}
    assert served.get("/audit/private-1", who="bob").status_code == 404
    assert served.get("/threads/private-1", who="bob").status_code == 404
    assert any(t["threadId"] == "private-1" for t in served.get("/inbox").json()["threads"])


def test_reasons_the_console_does_not_know_are_shown_from_message_schema_and_metadata(
    served: Served, ann: Session
) -> None:
    page = ann.page
    review, note = interrupts_of(served.run("review-1", "review"))
    ann.open("review-1")
    card = ann.card("Review the draft contract.")
    expect(card.locator(".reason")).to_have_text("acme:review")
    expect(card).to_contain_text('"document": "contract-7.pdf"')  # its metadata
    card.get_by_text("The answer it expects (responseSchema)").click()
    expect(card.locator("details pre")).to_contain_text('"format": "email"')
    card.get_by_label("verdict (required)").select_option(label="sign")
    expect(card.locator("fieldset.group legend")).to_have_text("Reviewer")  # the nested object
    card.get_by_label("name (required)").fill("Ann")
    email = card.get_by_label("email (required)")
    email.fill("ann")
    free = ann.card("Anything to add?")
    answer = free.get_by_label("Your answer (JSON)")
    answer.fill("Looks fine")  # text must be quoted to be JSON
    page.get_by_role("button", name="Send all answers").click()
    expect(card).to_contain_text("Must be an email address")
    expect(free).to_contain_text("Is not JSON")
    assert ann.posts == []

    email.fill("ann@example.com")
    answer.fill('"Looks fine"')
    page.get_by_role("button", name="Send all answers").click()
    expect(ann.run_log).to_contain_text(
        "Noted: acme:review resolved {'verdict': 'sign', 'reviewer': {'name': 'Ann', 'email': 'ann@example.com'}};"
        " acme:note resolved 'Looks fine'."
    )
    assert ann.posts[0]["resume"] == [
        {
            "interruptId": review["id"],
            "status": "resolved",
            "payload": {"verdict": "sign", "reviewer": {"name": "Ann", "email": "ann@example.com"}},
        },
        {"interruptId": note["id"], "status": "resolved", "payload": "Looks fine"},
    ]


def test_a_tool_call_that_asks_its_own_question_gets_a_form_not_approve_or_deny(served: Served, ann: Session) -> None:
    page = ann.page
    (asked,) = interrupts_of(served.run("scheduled-1", "scheduled"))
    ann.open("scheduled-1")
    card = ann.card("When should the minutes go out?")
    expect(card).to_contain_text("dan@example.com")  # the proposed call is shown
    expect(card.get_by_label("Approve", exact=True)).to_have_count(0)  # {approved} is not its answer
    card.get_by_label("send (required)").select_option(label="tonight")
    page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("Scheduled: resolved {'send': 'tonight'}.")
    assert ann.posts[0]["resume"] == [
        {"interruptId": asked["id"], "status": "resolved", "payload": {"send": "tonight"}}
    ]


def test_a_second_window_that_answers_differently_is_told_so_in_plain_words(
    served: Served, ann: Session, new_session: Any
) -> None:
    served.run("twice-1", "email")
    ann.open("twice-1")
    other = new_session()
    other.sign_in(served, "ann")
    other.open("twice-1")
    ann.card("Send the email").get_by_label("Approve", exact=True).check()
    ann.page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("The email was sent to bob@example.com.")
    expect(other.page.locator('button.thread[data-thread="twice-1"]')).to_have_count(0)  # its inbox follows
    expect(other.page.locator("#stale")).to_contain_text("These requests were answered or changed elsewhere")
    expect(ann.page.locator("#stale")).to_have_count(0)  # the window that answered is not told so

    other.card("Send the email").get_by_label("Deny").check()
    other.page.get_by_role("button", name="Send answer").click()
    refusal = other.run_log.locator('[data-code="INTERRUPT_ALREADY_RESOLVED"]')
    expect(refusal).to_contain_text("These requests were already answered differently")
    (entry,) = served.get("/audit/twice-1").json()["entries"]
    assert entry["payload"] == {"approved": True} and entry["ran"]["name"] == "sendEmail"
    other.page.get_by_role("button", name="Show what is open now").click()
    expect(other.page.locator("#answers")).to_have_text("Nothing on this thread waits for an answer.")


# --- the console's words match what happened (issue 25) -----------------------------------------

DOCS = ROOT / "docs"


def shoot(page: Page, name: str) -> None:
    """A screenshot of the page for the docs, taken as the test sees it."""
    page.mouse.move(0, 0)
    path = DOCS / name
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000


def test_inbox_entries_name_the_tool_its_main_argument_and_the_agents_message_never_json(
    served: Served, ann: Session
) -> None:
    page = ann.page
    served.run("words-email", "email")
    served.run("words-delete", "failing")
    served.run("words-filing", "filing")
    entry = page.locator('button.thread[data-thread="words-email"]')
    expect(entry.locator(".title")).to_have_text("Approve sendEmail: bob@example.com")
    expect(entry.locator(".said")).to_contain_text("bob@example.com")  # the agent's own message
    expect(page.locator('button.thread[data-thread="words-delete"] .title')).to_have_text("Approve deleteFile: c.txt")
    expect(page.locator('button.thread[data-thread="words-filing"] .title')).not_to_be_empty()
    for text in page.locator("button.thread").all_inner_texts():
        assert "{" not in text and '":' not in text, text  # never the arguments' JSON
    ann.open("words-delete")
    card = ann.card("deleteFile")
    expect(card.locator("legend").first).to_contain_text('Run deleteFile on "c.txt"?')
    expect(card.locator("legend").first).not_to_contain_text("{")
    shoot(page, "console-inbox.png")


def test_an_approval_of_a_tool_declared_by_its_signature_is_edited_in_a_form(served: Served, ann: Session) -> None:
    page = ann.page
    (interrupt,) = interrupts_of(served.run("book-1", "booking"))
    published = interrupt["responseSchema"]["properties"]["editedArgs"]
    assert published["properties"]["room"]["properties"] == {
        "building": {"type": "string"},
        "floor": {"type": "integer"},
    }  # read from the signature's dataclass: what the host enforces
    ann.open("book-1")
    card = ann.card("Book a room for the planning meeting?")
    card.get_by_label("Approve with edits").check()
    expect(card.locator("textarea")).to_have_count(0)  # a form, not a JSON box
    building = card.get_by_label("building (required)")
    floor = card.get_by_label("floor (required)")
    expect(building).to_have_value("A")
    expect(floor).to_have_value("2")
    building.fill("B")
    shoot(page, "console-approval-edits.png")

    floor.fill("second")
    page.get_by_role("button", name="Send answer").click()
    expect(floor).to_have_attribute("aria-invalid", "true")
    expect(card).to_contain_text("whole number")
    assert ann.posts == []  # the form refused what the host would refuse
    shoot(page, "console-form-error.png")

    floor.fill("3")
    page.get_by_role("button", name="Send answer").click()
    expect(ann.run_log).to_contain_text("Booking: executed.")
    (sent,) = ann.posts
    assert sent["resume"][0]["payload"] == {
        "approved": True,
        "editedArgs": {"title": "Planning", "room": {"building": "B", "floor": 3}, "hours": 1.5},
    }


def test_a_tool_that_failed_is_shown_as_a_failure_in_its_own_words(served: Served, ann: Session) -> None:
    page = ann.page
    served.run("fail-1", "failing")
    ann.open("fail-1")
    ann.card("deleteFile").get_by_label("Approve", exact=True).check()
    page.get_by_role("button", name="Send answer").click()
    failure = ann.run_log.locator(".failed")
    expect(failure).to_have_text("deleteFile failed: PermissionError: c.txt is on a read-only disk")
    expect(ann.run_log).to_contain_text("Finished, but deleteFile failed (see above).")
    expect(ann.run_log.locator(".ok")).to_have_count(0)  # no green "Done."
    expect(ann.run_log).not_to_contain_text("Done.")
    shoot(page, "console-failed-tool.png")


def test_a_new_request_after_an_answer_is_pointed_at_where_it_is(served: Served, ann: Session) -> None:
    page = ann.page
    served.run("next-1", "filing")
    ann.open("next-1")
    expect(page.locator(".card")).to_have_count(1)
    answers = page.locator("#answers")
    run = ann.run_log
    card = page.locator(".card").first
    card.get_by_label("quarter (required)").select_option(label="Q1")
    card.get_by_label("year (required)").fill("2026")
    card.get_by_label("revenue (required)").fill("100")
    page.get_by_role("button", name="Send answer").click()
    expect(run).to_contain_text("The agent has a new request for you (above).")
    above = page.evaluate(
        "([a, r]) => !!(document.querySelector(a).compareDocumentPosition(document.querySelector(r)) & 4)",
        ["#answers", "#run"],
    )
    assert above  # the requests come before the log in the page: "above" is where they are
    expect(answers.locator(".card")).to_have_count(1)


def test_a_host_without_an_authenticator_shows_no_sign_in_machinery(anonymous: Served, new_session: Any) -> None:
    body = {
        "threadId": "anon-1",
        "runId": "anon-1-start",
        "messages": [{"id": "anon-1-ask", "role": "user", "content": "Please help."}],
        "tools": [],
        "context": [],
        "forwardedProps": {"scenario": "email"},
    }
    import httpx

    httpx.post(anonymous.url + "/", json=body, timeout=30).raise_for_status()
    page = new_session().page
    page.goto(anonymous.console)
    expect(page.locator('button.thread[data-thread="anon-1"]')).to_be_visible()
    expect(page.locator("#who")).to_be_hidden()
    expect(page.locator("#sign-out")).to_be_hidden()
    expect(page.locator("#signin")).to_be_hidden()
    expect(page.get_by_text("anonymous")).to_have_count(0)


def test_an_empty_token_is_refused_on_the_page(served: Served, new_session: Any) -> None:
    session: Session = new_session()
    page = session.page
    page.goto(served.console)
    page.get_by_label("Your access token").fill("   ")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#signin-error")).to_have_text("Enter the access token your host's operator gave you.")
    expect(page.locator("#workspace")).to_be_hidden()
