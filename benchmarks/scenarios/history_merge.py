"""history_merge: an input that carries the whole conversation again, taken by its thread.

AG-UI clients (the reference ``HttpAgent`` among them) send every message of the thread
with every run. The thread here holds the 100 messages of ``decode_input``'s larger
case (every role a client sends, tool calls and their results); the input carries all of
them again and one new user message. One operation is what a host does with that input:

- ours, decoded and taken: :func:`decode_input`, then :meth:`ThreadMachine.from_record` of
  the thread's record (as a host loads it) and :meth:`ThreadMachine.receive_input`, which
  compares each message with the thread's copy (``HISTORY_CONFLICT`` for one rewritten),
  keeps the new one and starts the run;
- ours, decoded alone: :func:`decode_input` of the same bytes: the bound the thread's rules
  are measured against;
- ag_ui pydantic: ``RunAgentInput.model_validate_json`` of the same bytes, which is all the
  reference SDK does with an input (it keeps no thread).

Target: the thread's rules (loading the record included) at most 40% of taking the input,
the share the ``machine_cycle`` scenario asks of the machine: ours within 1 / 0.6 of decoding
alone. The check proves the thread took exactly the new message.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from benchmarks.harness import Case, Comparison, Contender, Scenario
from benchmarks.scenarios.decode_input import run_input

__all__ = ["SCENARIO"]

NOW = datetime(2026, 4, 20, 12, 0, tzinfo=UTC)
_TAKEN = "ours, decoded and taken"
_ALONE = "ours, decoded alone"


def _build() -> Sequence[Case]:
    from ag_ui.core import RunAgentInput as ReferenceInput

    from agui_core.machine.effects import StartAgent
    from agui_core.machine.thread import ThreadMachine
    from agui_core.protocol.codec import decode_input

    held = run_input(100)["messages"]
    shell = {"threadId": "thread-h", "tools": [], "context": [], "forwardedProps": {}}
    machine = ThreadMachine("thread-h")
    machine.receive_input(decode_input(orjson.dumps({**shell, "runId": "run-1", "messages": held})), now=NOW)
    machine.finish()
    record = machine.record()
    new = {"id": "u-new", "role": "user", "content": "And the overdue ones?"}
    data = orjson.dumps({**shell, "runId": "run-2", "messages": [*held, new]})

    def taken() -> Any:
        thread = ThreadMachine.from_record(record)
        return thread, thread.receive_input(decode_input(data), now=NOW)

    def alone() -> Any:
        return decode_input(data)

    def reference() -> Any:
        return ReferenceInput.model_validate_json(data)

    def check() -> None:
        thread, effects = taken()
        if not any(isinstance(e, StartAgent) for e in effects):
            raise AssertionError(f"the thread did not take the input: {effects}")
        if [m.id for m in thread.messages] != [m["id"] for m in held] + ["u-new"]:
            raise AssertionError("the thread did not keep exactly its messages and the new one")
        if not len(alone().messages) == len(reference().messages) == len(held) + 1:
            raise AssertionError("the decoders read different inputs")

    return [
        Case(
            name=f"{len(held)} messages held, all sent again with 1 new, {len(data) / 1024:.1f} KiB",
            contenders=(
                Contender(_TAKEN, taken),
                Contender(_ALONE, alone),
                Contender("ag_ui pydantic", reference),
            ),
            comparisons=(
                Comparison(ours=_TAKEN, theirs=_ALONE, target=0.6),
                Comparison(ours=_ALONE, theirs="ag_ui pydantic", target=1.0),
            ),
            check=check,
            notes="one op = one input decoded and taken by a thread loaded from its record",
        )
    ]


SCENARIO = Scenario(
    name="history_merge",
    description="an input resending a 100-message conversation, taken by its thread",
    build=_build,
)
