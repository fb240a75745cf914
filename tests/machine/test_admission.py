"""Resume admission on its own: pure functions of what a thread holds, no machine needed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agui_core.errors import RemoteProtocolError, RunErrorCode
from agui_core.machine.admission import (
    bind_answers,
    check_entries,
    find_replay,
    find_retry,
    fingerprint,
    partition_open,
    raised_elsewhere,
)
from agui_core.machine.facts import InterruptHome
from agui_core.machine.record import CompletedResume, OpenInterrupt
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import Interrupt, ResumeEntry, RunFinishedSuccessOutcome
from tests.machine.driver import NOW


def _open(iid: str, **rest: object) -> OpenInterrupt:
    return OpenInterrupt(interrupt=Interrupt(id=iid, reason="confirmation", **rest), run_id="run-1")  # type: ignore[arg-type]


def _yes(iid: str) -> ResumeEntry:
    return ResumeEntry(interrupt_id=iid, status="resolved", payload=True)


def test_the_expiry_instant_itself_counts_as_expired() -> None:
    at = NOW.isoformat()
    live, expired = partition_open([_open("a"), _open("b", expires_at=at)], NOW)
    assert [o.interrupt.id for o in live] == ["a"] and [o.interrupt.id for o in expired] == ["b"]
    live, expired = partition_open([_open("b", expires_at=at)], NOW - timedelta(seconds=1))
    assert [o.interrupt.id for o in live] == ["b"] and expired == []


def test_binding_follows_the_order_the_interrupts_were_raised() -> None:
    live = [_open("a"), _open("b")]
    bound = bind_answers(
        [_yes("b"), _yes("a")], thread_id="t", live=live, expired=[], resolved=[], validators=PayloadValidators()
    )
    assert [(a.interrupt.id, a.raised_in) for a in bound] == [("a", "run-1"), ("b", "run-1")]


@pytest.mark.parametrize(
    ("entries", "code"),
    [
        ([_yes("a"), _yes("zz")], RunErrorCode.UNKNOWN_INTERRUPT_ID),
        ([_yes("a")], RunErrorCode.PARTIAL_RESUME),
        ([_yes("a"), ResumeEntry(interrupt_id="b", status="resolved", payload="no")], RunErrorCode.INVALID_PAYLOAD),
    ],
)
def test_binding_refuses_with_the_rules_code(entries: list[ResumeEntry], code: RunErrorCode) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        live = [_open("a"), _open("b")]
        bind_answers(entries, thread_id="t", live=live, expired=[], resolved=[], validators=PayloadValidators())
    assert info.value.code is code


def test_malformed_and_duplicate_entries() -> None:
    with pytest.raises(RemoteProtocolError) as info:
        check_entries([_yes("a"), _yes("a")])
    assert info.value.code is RunErrorCode.DUPLICATE_RESUME_ENTRY
    with pytest.raises(RemoteProtocolError) as info:
        check_entries([ResumeEntry(interrupt_id="a", status="cancelled", payload=1)])
    assert info.value.code is RunErrorCode.INVALID_RESUME


def test_a_resume_is_recognised_whatever_the_order_of_its_entries() -> None:
    done = CompletedResume(
        run_id="run-2", answers=fingerprint([_yes("a"), _yes("b")]), outcome=RunFinishedSuccessOutcome()
    )
    assert find_replay([_yes("b"), _yes("a")], [], [done]) is done
    assert find_replay([_yes("a")], [], [done]) is None
    assert find_retry("run-2", [done]) is None  # it answered something: a replay, not a retry


def test_raised_elsewhere_needs_the_same_principal_and_an_unknown_id() -> None:
    homes = {"x": InterruptHome(thread_id="other", owner="ann")}
    assert raised_elsewhere("x", thread_id="t", homes=homes, principal="ann", known=lambda i: False)
    assert not raised_elsewhere("x", thread_id="t", homes=homes, principal="bob", known=lambda i: False)
    assert not raised_elsewhere("x", thread_id="t", homes=homes, principal="ann", known=lambda i: True)
    assert not raised_elsewhere("y", thread_id="t", homes=homes, principal="ann", known=lambda i: False)
