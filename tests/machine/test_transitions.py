"""Tests for agui_core.machine.transitions: the table, its errors, and the generated diagram.

Run this module to rewrite the diagram in ``docs/thread-machine.md`` from the table::

    .venv/bin/python -m tests.machine.test_transitions
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from agui_core.errors import LocalProtocolError
from agui_core.machine.effects import Effect, Reject
from agui_core.machine.policy import DecisionPolicy, Rule
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transitions import (
    TRANSITIONS,
    MachineInput,
    ThreadState,
    mermaid_diagram,
    next_state,
)
from agui_core.protocol import events as ev
from agui_core.protocol.types import Interrupt
from tests.machine.driver import NOW, drive, finish, interrupt, make_input, receive

DOCS = Path(__file__).resolve().parents[2] / "docs" / "thread-machine.md"
_BLOCK = re.compile(r"```mermaid\n(.*?)```", re.DOTALL)
REGENERATE = "rewrite it with `.venv/bin/python -m tests.machine.test_transitions` (from the repository root)"

ALL_PAIRS = list(itertools.product(ThreadState, MachineInput))
MISSING_PAIRS = [pair for pair in ALL_PAIRS if pair not in TRANSITIONS]


@pytest.mark.parametrize(("state", "event"), list(TRANSITIONS))
def test_table_pairs_give_their_target(state: ThreadState, event: MachineInput) -> None:
    assert next_state(state, event) is TRANSITIONS[state, event]


@pytest.mark.parametrize(("state", "event"), MISSING_PAIRS)
def test_every_missing_pair_is_an_error_naming_both(state: ThreadState, event: MachineInput) -> None:
    with pytest.raises(LocalProtocolError) as info:
        next_state(state, event)
    assert state.name in info.value.message
    assert event.name in info.value.message
    assert info.value.state is state
    assert info.value.event is event


def test_the_table_is_closed_and_connected() -> None:
    # Every state is reachable from IDLE, and no state is a dead end.
    reached = {ThreadState.IDLE}
    while True:
        more = {target for (state, _), target in TRANSITIONS.items() if state in reached} - reached
        if not more:
            break
        reached |= more
    assert reached == set(ThreadState)
    assert {state for state, _ in TRANSITIONS} == set(ThreadState)
    # The agent acts exist exactly while a run is in progress.
    agent_acts = {
        MachineInput.EMIT,
        MachineInput.INTERRUPT,
        MachineInput.FINISH,
        MachineInput.FAIL,
        MachineInput.CANCEL,
    }
    for state in ThreadState:
        with_run = state in (ThreadState.RUNNING, ThreadState.RESUMED)
        assert all(((state, act) in TRANSITIONS) == with_run for act in agent_acts)


def diagram_block(text: str) -> str:
    match = _BLOCK.search(text)
    assert match is not None, f"{DOCS} has no ```mermaid block; {REGENERATE}"
    return match.group(1)


def test_the_docs_diagram_is_current() -> None:
    assert DOCS.exists(), f"{DOCS} is missing; {REGENERATE}"
    assert diagram_block(DOCS.read_text(encoding="utf-8")) == mermaid_diagram(), (
        f"the state diagram in {DOCS} is stale: {REGENERATE}"
    )


def test_the_diagram_has_one_line_per_transition() -> None:
    lines = mermaid_diagram().splitlines()
    assert lines[:2] == ["stateDiagram-v2", "    [*] --> IDLE"]
    assert lines[2:] == [f"    {s.name} --> {t.name}: {e.value}" for (s, e), t in TRANSITIONS.items()]


def rewrite_docs(path: Path = DOCS) -> None:
    """Replace the diagram block of ``path`` with the one the table gives now."""
    text = path.read_text(encoding="utf-8")
    diagram_block(text)
    path.write_text(_BLOCK.sub(lambda _: f"```mermaid\n{mermaid_diagram()}```", text, count=1), encoding="utf-8")


# --- The machine asks the table: each (state, input) pair, done for real. -------------------
#
# Each state is reached from the same history (run-1 raised "a", run-2 answered it and
# finished), so a replay of that answer is possible in every state.

ANSWER_A = [{"interruptId": "a", "status": "resolved", "payload": True}]
LATER = NOW + timedelta(hours=2)


def in_state(state: ThreadState) -> ThreadMachine:
    machine = ThreadMachine("t")
    acts = [
        receive(make_input("t", "run-1")),
        interrupt({"id": "a", "reason": "confirmation"}),
        receive(make_input("t", "run-2", resume=ANSWER_A)),
        finish(),
    ]
    if state is not ThreadState.IDLE:
        acts.append(receive(make_input("t", "run-3")))
    if state in (ThreadState.INTERRUPTED, ThreadState.RESUMED):
        acts.append(
            interrupt(
                {
                    "id": "b",
                    "reason": "confirmation",
                    "expiresAt": (NOW + timedelta(hours=1)).isoformat(),
                }
            )
        )
    if state is ThreadState.RESUMED:
        acts.append(
            receive(
                make_input(
                    "t",
                    "run-4",
                    resume=[{"interruptId": "b", "status": "resolved", "payload": False}],
                )
            )
        )
    drive(machine, acts)
    assert machine.state is state
    return machine


Operation = Callable[[ThreadMachine], list[Effect]]

OPERATIONS: dict[MachineInput, Operation] = {
    MachineInput.START_RUN: lambda m: m.receive_input(make_input("t", "run-9"), now=NOW),
    MachineInput.RESUME: lambda m: m.receive_input(
        make_input("t", "run-9", resume=[{"interruptId": "b", "status": "cancelled"}]), now=NOW
    ),
    MachineInput.REPLAY: lambda m: m.receive_input(make_input("t", "run-9", resume=ANSWER_A), now=NOW),
    # "b" needs two deciders: the first one's answer is a vote, and "b" stays open.
    MachineInput.VOTE: lambda m: m.receive_input(
        make_input("t", "run-9", resume=[{"interruptId": "b", "status": "resolved", "payload": True}]),
        now=NOW,
        policy=DecisionPolicy(reasons={"confirmation": Rule(approvals=2)}),
    ),
    # After "b" expired, any input closes it first, then starts its own run.
    MachineInput.EXPIRE: lambda m: m.receive_input(make_input("t", "run-9"), now=LATER),
    MachineInput.EMIT: lambda m: m.emit(ev.CustomEvent(name="tick", value=1)),
    MachineInput.INTERRUPT: lambda m: m.interrupt([Interrupt(id="z", reason="confirmation")], now=NOW),
    MachineInput.FINISH: lambda m: m.finish(),
    MachineInput.FAIL: lambda m: m.fail("boom"),
    MachineInput.CANCEL: lambda m: m.cancel(),
}
CLIENT_INPUTS = {
    MachineInput.START_RUN,
    MachineInput.RESUME,
    MachineInput.REPLAY,
    MachineInput.VOTE,
    MachineInput.EXPIRE,
}


def rejected(effects: list[Effect]) -> bool:
    return len(effects) == 1 and isinstance(effects[0], Reject) and isinstance(effects[0].event, ev.RunErrorEvent)


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS)
def test_the_machine_follows_the_table(state: ThreadState, event: MachineInput) -> None:
    machine = in_state(state)
    before = machine.record()
    allowed = (state, event) in TRANSITIONS
    if event in CLIENT_INPUTS:
        # A client input the table has no pair for is answered with RUN_ERROR, not raised.
        effects = OPERATIONS[event](machine)
        if event is MachineInput.EXPIRE and allowed:
            assert machine.state is next_state(TRANSITIONS[state, event], MachineInput.START_RUN)
        elif allowed:
            assert not rejected(effects)
            assert machine.state is TRANSITIONS[state, event]
        elif event is MachineInput.EXPIRE and state is ThreadState.IDLE:
            # With nothing open, a late input is just a new run.
            assert machine.state is ThreadState.RUNNING
        else:
            assert rejected(effects)
            assert machine.record() == before
        return
    if allowed:
        OPERATIONS[event](machine)
        assert machine.state is TRANSITIONS[state, event]
    else:
        with pytest.raises(LocalProtocolError) as info:
            OPERATIONS[event](machine)
        assert state.name in info.value.message
        assert event.name in info.value.message
        assert machine.record() == before


if __name__ == "__main__":
    rewrite_docs()
    print(f"wrote the diagram of {DOCS}")
