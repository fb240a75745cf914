"""The filing example: a form with the seed's schema and an expiry, then a chained confirmation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agui_core.examples.filing import FORM_TTL, QUARTERLY_FILING_SCHEMA
from agui_core.machine.client import cancel, read_expires_at, resolve
from tests.examples.conversation import Conversation

pytestmark = pytest.mark.anyio

FILING = {"quarter": "Q1", "year": 2026, "revenue": 4200000}


async def test_the_form_has_the_seeds_schema_and_expires_a_form_ttl_after_it_was_asked() -> None:
    async with Conversation.new_host() as host:
        talk = Conversation(host, "filing-1")
        before = datetime.now(UTC).replace(microsecond=0)
        await talk.start("hi", scenario="filing")
        after = datetime.now(UTC)
        (form,) = talk.machine.open_interrupts
        assert form.reason == "input_required" and form.response_schema == QUARTERLY_FILING_SCHEMA
        assert form.expires_at is not None and form.expires_at.endswith("Z")
        assert before + FORM_TTL <= read_expires_at(form.expires_at) <= after + FORM_TTL


async def test_a_filled_form_is_confirmed_then_filed() -> None:
    async with Conversation.new_host() as host:
        talk = Conversation(host, "filing-2")
        await talk.start("hi", scenario="filing")
        (form,) = talk.machine.open_interrupts
        await talk.resume({form.id: resolve(FILING)})
        (confirmation,) = talk.machine.open_interrupts
        assert confirmation.reason == "confirmation" and confirmation.metadata == {"filing": FILING}
        await talk.resume({confirmation.id: resolve(True)})
        assert talk.result == {"filed": True, "filing": FILING}


@pytest.mark.parametrize("at", ["form", "confirmation"])
async def test_cancelling_either_interrupt_files_nothing(at: str) -> None:
    async with Conversation.new_host() as host:
        talk = Conversation(host, f"filing-{at}")
        await talk.start("hi", scenario="filing")
        (form,) = talk.machine.open_interrupts
        if at == "confirmation":
            await talk.resume({form.id: resolve(FILING)})
            (form,) = talk.machine.open_interrupts
        await talk.resume({form.id: cancel()})
        assert talk.result == {"filed": False}
        assert not talk.machine.awaiting_input
