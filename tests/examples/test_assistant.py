"""The demo's agent: each thread goes to one example agent, chosen once and kept in its state."""

from __future__ import annotations

import pytest

from agui_core.examples.assistant import AGENTS, pick_scenario
from agui_core.machine.client import resolve
from tests.examples.conversation import Conversation


@pytest.mark.parametrize(
    ("props", "text", "scenario"),
    [
        ({"scenario": "parallel"}, "File my numbers", "parallel"),
        (None, "File my quarterly numbers.", "filing"),
        (None, "Email each of the team.", "parallel"),
        ({"scenario": "no-such-thing"}, "Email Bob to say hi.", "email"),
        ("not an object", "", "email"),
    ],
)
def test_a_scenario_is_picked_by_forwarded_props_then_by_words(props: object, text: str, scenario: str) -> None:
    assert pick_scenario(props, text) == scenario  # type: ignore[arg-type]
    assert scenario in AGENTS


@pytest.mark.anyio
async def test_a_resume_goes_to_the_agent_the_thread_started_with() -> None:
    async with Conversation.new_host() as host:
        talk = Conversation(host, "assistant-1")
        await talk.start("File my quarterly numbers.")  # no forwardedProps: chosen by its words
        assert talk.machine.state == {"scenario": "filing"}
        (form,) = talk.machine.open_interrupts
        await talk.resume({form.id: resolve({"quarter": "Q2", "year": 2025, "revenue": 1.5})})
        (confirmation,) = talk.machine.open_interrupts
        assert confirmation.reason == "confirmation"
