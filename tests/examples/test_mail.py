"""The email examples: a gated sendEmail proposed, and each decision carried out as given."""

from __future__ import annotations

import orjson
import pytest

from agui_core.examples.mail import DRAFT, SEND_EMAIL_ARGS_SCHEMA, TEAM
from agui_core.machine.client import approve, approve_with_edits, cancel, deny, offers_edits
from agui_core.protocol import events as ev
from tests.examples.conversation import Conversation

pytestmark = pytest.mark.anyio


def results(events: list[ev.Event]) -> dict[str, str]:
    return {e.tool_call_id: e.content for e in events if isinstance(e, ev.ToolCallResultEvent)}


async def test_the_email_is_proposed_behind_an_approval_that_offers_edits() -> None:
    async with Conversation.new_host() as host:
        talk = Conversation(host, "mail-1")
        await talk.start("hi", scenario="email")
        (approval,) = talk.machine.open_interrupts
        assert approval.reason == "tool_call" and offers_edits(approval.response_schema)
        assert approval.response_schema is not None
        assert approval.response_schema["properties"]["editedArgs"] == SEND_EMAIL_ARGS_SCHEMA  # type: ignore[index]
        call = talk.machine.proposed_tool_call(approval.tool_call_id or "")
        assert call is not None and call.name == "sendEmail" and call.args == DRAFT


async def test_edited_arguments_replace_the_proposed_ones_whole() -> None:
    edited = {"to": "ann@example.com", "subject": "Hello", "body": "Rewritten."}
    async with Conversation.new_host() as host:
        talk = Conversation(host, "mail-2")
        await talk.start("hi", scenario="email")
        (approval,) = talk.machine.open_interrupts
        events = await talk.resume({approval.id: approve_with_edits(edited)})
        sent = orjson.loads(results(events)[approval.tool_call_id or ""])
        assert sent == {"sent": True, **edited}
        assert talk.result == {"emails": [{"status": "executed", "edited": True, **edited}]}
        assert not any(isinstance(e, ev.ToolCallStartEvent) for e in events)


async def test_a_denied_email_is_reported_and_a_cancelled_one_gets_no_result() -> None:
    async with Conversation.new_host() as host:
        denied, cancelled = Conversation(host, "mail-3"), Conversation(host, "mail-4")
        for talk, reply in ((denied, deny()), (cancelled, cancel())):
            await talk.start("hi", scenario="email")
            (approval,) = talk.machine.open_interrupts
            events = await talk.resume({approval.id: reply})
            assert len(results(events)) == (0 if reply.status == "cancelled" else 1)
        assert denied.result == {"emails": [{"to": DRAFT["to"], "status": "denied"}]}
        assert cancelled.result == {"emails": [{"to": DRAFT["to"], "status": "cancelled"}]}


async def test_the_team_email_raises_three_parallel_approvals_answered_in_one_resume() -> None:
    async with Conversation.new_host() as host:
        talk = Conversation(host, "mail-5")
        await talk.start("hi", scenario="parallel")
        first, second, third = talk.machine.open_interrupts
        events = await talk.resume({first.id: approve(), second.id: deny(), third.id: cancel()})
        assert set(results(events)) == {first.tool_call_id, second.tool_call_id}
        statuses = [(report["to"], report["status"]) for report in talk.result["emails"]]
        assert statuses == list(zip(TEAM, ["executed", "denied", "cancelled"], strict=True))
