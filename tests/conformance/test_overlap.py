"""R5's concurrency judgement: what arrival times prove two runs of one resume overlapped."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from agui_core.conformance.exchange import Exchange, read_frame
from agui_core.conformance.suite import ran_at_once

RUN = {"threadId": "t", "runId": "r"}


def _exchange(frames: Sequence[tuple[float, dict[str, object]]]) -> Exchange:
    return Exchange(
        probe="concurrent",
        sent={},
        frames=tuple(read_frame(orjson.dumps(data), at) for at, data in frames),
        after_terminal=(),
        ending="terminal",
        detail=None,
        sent_at=0.0,
        ended_at=frames[-1][0],
    )


def _run(start: float, step: float, *, replay: bool = False) -> Exchange:
    content = [{"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": "ok"}]
    if not replay:
        content += [
            {"type": "TEXT_MESSAGE_START", "messageId": "x", "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": "x", "delta": "done"},
            {"type": "TEXT_MESSAGE_END", "messageId": "x"},
        ]
    events = [{"type": "RUN_STARTED", **RUN}, *content, {"type": "RUN_FINISHED", **RUN}]
    return _exchange([(start + i * step, e) for i, e in enumerate(events)])


def test_a_replay_read_before_the_first_runs_last_events_is_not_an_overlap() -> None:
    # The server wrote the replay after the first run's RUN_FINISHED, but the client happened to
    # read the second socket first: its RUN_STARTED (at 1.035) precedes the first run's last
    # events (1.04, 1.05). What the CI run of 2026-12-03 saw.
    early = _run(1.0, 0.01)
    late = _run(1.035, 0.001, replay=True)
    assert late.started_at is not None and late.started_at < early.frames[-1].at
    assert not ran_at_once(early, late)


def test_a_second_run_that_starts_before_the_first_sends_anything_is_an_overlap() -> None:
    early = _run(1.0, 0.01)
    late = _run(1.002, 0.01)
    assert ran_at_once(early, late)


def test_runs_one_after_the_other_do_not_overlap() -> None:
    early = _run(1.0, 0.01)
    late = _run(2.0, 0.01)
    assert not ran_at_once(early, late)


def test_a_first_run_with_nothing_past_run_started_gives_no_evidence() -> None:
    early = _exchange([(1.0, {"type": "RUN_STARTED", **RUN})])
    late = _run(0.5, 0.01)
    assert not ran_at_once(early, late)
