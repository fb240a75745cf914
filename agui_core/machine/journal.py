"""The step journal: how a straight-line agent picks up where it stopped, sans-IO.

A straight-line agent is written as one function from the top (``answer = await
ctx.ask(...)``, ``outcome = await ctx.call_tool(...)``). The run that reaches a question ends
with its interrupt; the run that carries the answer runs the function again from the top, and
every step it already took returns at once what it returned before, so the function arrives at
the question and gets the answer. What makes that safe is this journal.

An *execution* is one pass of the agent function over a thread, from the run of a new input to
the run that finishes it, through every run that answered its questions. Its journal is the
list of the steps it took, in order: each ``ctx`` call that makes an id, proposes, asks or runs
something (a text, a streamed message, a step, a subagent, a tool call, a question, a
confirmation, a ``ctx.once``). A step keeps:

- its kind and a *key*: a short digest of what identifies the call (the text, the tool's
  name and arguments, the question and its schema), so that a replay that calls something else
  at the same place is caught (:class:`Divergence`) before anything happens;
- its id (a message id, a tool call id, an interrupt id: the author's own, or one made from
  the execution and the step's place), kept as it was used, so the same step always has the
  same id, in a retry after a crash too;
- its result, once it has one: a tool's outcome, a ``once``'s value (a question's answer is
  in the thread's audit trail, and is read from there).

While a run replays (it has not yet passed the steps of the journal it was handed), what the
agent emits was sent in an earlier run and is not sent again: the host's agent API drops it.
The journal is kept in the thread record when a run ends on questions its steps asked
(:class:`~agui_core.machine.record.ThreadRecord` ``step_journal``), handed to the run that
answers them, and dropped when the execution finishes or ends another way. A run that fails
leaves the journal as it was, so its retry replays the same steps again.

Size, as JSON in the record: a text, a streamed message, a step, a subagent or a question
about 70 bytes (its kind, a 16-character key, its id); a tool call about 210 bytes plus its
arguments and result; a ``once`` about 80 bytes plus its value. A journal is kept only while
its execution waits for a person, and holds at most :data:`MAX_STEPS` steps.
"""

from __future__ import annotations

import hashlib
from typing import Final

import attrs
import orjson

from agui_core.errors import LocalProtocolError, format_path
from agui_core.protocol.codec import json_fault
from agui_core.protocol.types import JSON

__all__ = ["MAX_STEPS", "Divergence", "Replay", "Step", "StepJournal", "execution_id", "step_key"]

MAX_STEPS: Final = 1000
"""The most steps an execution may have taken when it waits for a person (its journal is kept).

A run that asks nothing may take any number; one that would keep a longer journal fails. An
agent that talks with a person in a loop is better written as one execution per turn (each
new input starts one), since every run of an execution replays all its steps."""

_NAMES: Final = {
    "text": "ctx.text",
    "message": "ctx.message",
    "step": "ctx.step",
    "subagent": "ctx.subagent",
    "tool": "ctx.call_tool",
    "ask": "ctx.ask",
    "confirm": "ctx.confirm",
    "once": "ctx.once",
}


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def step_key(*parts: JSON, call: str = "a step") -> str:
    """The key of a step: a digest of the values that identify the call (key order ignored).

    Raises ``LocalProtocolError`` naming ``call`` (``ctx.text``, ...) when they are not JSON."""
    try:
        return _digest(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS))
    except TypeError as exc:
        fault = json_fault(parts)
        if fault is None:
            raise LocalProtocolError(f"{call} was given what is not JSON ({exc})") from None
        path, why = fault  # its first step is which of the parts
        where = f" at {format_path(path[1:])}" if len(path) > 1 else ""
        why = why.removeprefix("not JSON: ").removeprefix("not JSON ")
        raise LocalProtocolError(f"{call} was given what is not JSON{where}: {why}") from None


def execution_id(thread_id: str, run_id: str) -> str:
    """The id of the execution the run ``run_id`` starts on ``thread_id``.

    Made from the two, so that a client retrying the run (the same ``runId``) after its host
    died is the same execution, and finds what the first attempt journaled. (A resume is
    retried by its answers, under any ``runId``: see ``ThreadMachine._replay_for``.)
    """
    return _digest(f"{thread_id}\x00{run_id}".encode())


@attrs.frozen(kw_only=True)
class Step:
    """One step of an execution (see the module docstring)."""

    kind: str
    key: str
    id: str
    """The id the step used: its message, tool call, subagent or interrupt."""
    interrupt_id: str | None = None
    """The approval's id, for a tool call that needed one."""
    result: JSON = None
    """What the step returned, where the journal keeps it (a tool's outcome, a ``once``'s value)."""


@attrs.frozen(kw_only=True)
class StepJournal:
    """The steps an execution took, named by the execution's id."""

    execution: str
    steps: tuple[Step, ...] = ()


class Divergence(LocalProtocolError):
    """A replay called something else than the journal recorded at one of its steps."""

    def __init__(self, number: int, recorded: Step, kind: str, where: str | None) -> None:
        self.number = number
        self.recorded = recorded
        self.kind = kind
        here = f" (at {where})" if where else ""
        if recorded.kind != kind:
            before, now = _NAMES.get(recorded.kind, recorded.kind), _NAMES.get(kind, kind)
            what = f"the earlier run called {before} there, this one {now}{here}"
        else:
            what = f"{_NAMES.get(kind, kind)} was called with other arguments than in the earlier run{here}"
        super().__init__(
            f"the agent's replay diverged from its journal at step {number}: {what}; code between ctx calls "
            "must do the same on every run (put what may differ, such as a model's reply, in ctx.once)"
        )


class Replay:
    """The steps of the run in progress: those it replays from its journal, and its new ones."""

    __slots__ = ("_recorded", "execution", "taken")

    def __init__(self, journal: StepJournal) -> None:
        self.execution = journal.execution
        self._recorded = journal.steps
        self.taken: list[Step] = []

    @property
    def replaying(self) -> bool:
        """Whether the run has not yet passed every step of the journal it was handed."""
        return len(self.taken) < len(self._recorded)

    def take(self, kind: str, key: str, prefix: str, *, where: str | None = None) -> tuple[int, Step, bool]:
        """The next step: ``(its index, the step, whether it was recorded)``.

        A recorded step must be of ``kind`` with ``key``, else :class:`Divergence`; a new one
        gets its id from the execution and its place (``PREFIX-EXECUTION-N``).
        """
        number = len(self.taken)
        if number < len(self._recorded):
            step = self._recorded[number]
            if step.kind != kind or (step.key != key and step.key and key):
                raise Divergence(number + 1, step, kind, where)
            self.taken.append(step)
            return number, step, True
        step = Step(kind=kind, key=key, id=f"{prefix}-{self.execution}-{number + 1}")
        self.taken.append(step)
        return number, step, False

    def settle(self, index: int, result: JSON) -> None:
        """Record what step ``index`` returned."""
        self.taken[index] = attrs.evolve(self.taken[index], result=result)

    def use_ids(self, index: int, ident: str, interrupt_id: str | None = None) -> Step:
        """Record the ids step ``index`` really used (the author's own, or one made free of a clash)."""
        step = self.taken[index] = attrs.evolve(self.taken[index], id=ident, interrupt_id=interrupt_id)
        return step

    @property
    def position(self) -> tuple[int, int]:
        """How many steps the run has taken, and how many its journal recorded."""
        return len(self.taken), len(self._recorded)

    def journal(self) -> StepJournal:
        """The journal to keep for the run that answers this one's questions."""
        return StepJournal(execution=self.execution, steps=tuple(self.taken))
