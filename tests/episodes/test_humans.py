"""The scripted humans: what each decides, by name, and the same again from the same seed."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from agui_core.episodes.humans import (
    AnswerLate,
    Decision,
    Human,
    Mixed,
    Situation,
    episode_rng,
    parse_human,
)
from agui_core.episodes.tasks import Task
from agui_core.machine.client import ProposedToolCall, Reply, Route, approve, cancel, deny, resolve
from agui_core.protocol.types import JSON, Interrupt

TASK = Task(id="t", prompt="p", forms=({"reason": "late"},))


def situation(kind: str, *, tool: str = "refund", form_index: int = 0, editable: bool = True) -> Situation:
    interrupt = Interrupt(id="i1", reason={"approval": "tool_call", "form": "input_required"}.get(kind, kind))
    call = ProposedToolCall(id="c1", name=tool, arguments='{"amount": 10}', args={"amount": 10})
    schema: Mapping[str, JSON] | None = {"type": "boolean"} if kind == "confirmation" else None
    route = Route(
        kind=kind,  # type: ignore[arg-type]
        interrupt=interrupt,
        schema=schema,
        editable=editable,
        tool_call=call if kind == "approval" else None,
    )
    return Situation(
        interrupt=interrupt, route=route, task=TASK, trial=0, form_index=form_index, rng=episode_rng(0, "t", 0)
    )


def reply(human: Human, s: Situation) -> Reply | None:
    decision = human.decide(s)
    return None if decision is None else decision.reply


def halve(name: str | None, args: JSON) -> dict[str, JSON] | None:
    assert isinstance(args, dict)
    return {**args, "amount": args["amount"] / 2}


def test_approve_approves_fills_forms_from_the_task_and_says_yes() -> None:
    human = parse_human("approve")
    assert human.name == "approve"
    assert reply(human, situation("approval")) == approve()
    assert reply(human, situation("form")) == resolve({"reason": "late"})
    assert reply(human, situation("form", form_index=1)) == cancel()  # past the task's forms
    assert reply(human, situation("confirmation")) == resolve(True)
    assert reply(human, situation("fallback")) == cancel()


def test_deny_denies_only_the_tool_it_names() -> None:
    human = parse_human("deny:refund")
    assert human.name == "deny:refund"
    assert reply(human, situation("approval")) == deny()
    assert reply(human, situation("approval", tool="cancel")) == approve()


def test_edit_approves_with_the_functions_arguments_where_edits_are_offered() -> None:
    human = parse_human(f"edit:{__name__}:halve")
    assert reply(human, situation("approval")) == Reply(
        status="resolved", payload={"approved": True, "editedArgs": {"amount": 5.0}}
    )
    assert reply(human, situation("approval", editable=False)) == approve()


def test_cancel_never_late_twice_and_hook() -> None:
    assert reply(parse_human("cancel"), situation("approval")) == cancel()
    assert parse_human("never").decide(situation("approval")) is None
    late = parse_human("late:2.5")
    assert isinstance(late, AnswerLate) and late.name == "late:2.5"
    assert late.decide(situation("approval")) == Decision(reply=approve(), delay=2.5)
    assert parse_human("twice").decide(situation("approval")) == Decision(reply=approve(), times=2)
    hook = parse_human(f"hook:{__name__}:deny_everything")
    assert hook.decide(situation("form")) == Decision(reply=deny())


def deny_everything(s: Situation) -> Reply:
    return deny()


def test_a_mix_picks_the_same_human_for_the_same_seed_task_and_trial() -> None:
    mix = parse_human("mix:approve=1,deny:refund=1,cancel=2")
    assert isinstance(mix, Mixed)
    picks = [mix.for_episode(episode_rng(7, "t", trial)).name for trial in range(40)]
    assert picks == [mix.for_episode(episode_rng(7, "t", trial)).name for trial in range(40)]
    assert set(picks) == {"approve", "deny:refund", "cancel"}
    assert picks != [mix.for_episode(episode_rng(8, "t", trial)).name for trial in range(40)]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("maybe", "no human is called 'maybe'"),
        ("deny", "deny names the tool it denies"),
        ("late:soon", "late takes a number of seconds"),
        ("approve:x", "approve takes no argument"),
        ("edit:nowhere", "is not MODULE:FUNCTION"),
        ("mix:approve", "mix entry 'approve' is not HUMAN=WEIGHT"),
        ("mix:approve=0", "positive weight"),
    ],
)
def test_a_spec_that_names_no_human_is_refused(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_human(spec)
