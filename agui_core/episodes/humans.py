"""Scripted humans: who answers an episode's interrupts, and how, deterministically from a seed.

A human is asked about one open interrupt at a time (a :class:`Situation`) and returns a
:class:`Decision`: the answer, how long to wait before sending it, and how many times to send
the resume it goes into (twice exercises the server's replay rule), or ``None`` for no answer
at all (the episode then stops with the interrupt open). Every answering human fills forms
(``input_required``) from the task's ``forms``, in order, and cancels a form past their end;
says yes to a ``confirmation``; and cancels any other reason, which a script cannot read.

By name (what ``agui episodes --humans`` takes, see :func:`parse_human`):

``approve``            approve every tool call
``deny:TOOL``          deny the calls of ``TOOL``, approve the rest
``edit:MODULE:FUNC``   approve with edits: ``FUNC(name, args)`` returns the replacement arguments
                       (``None``: approve as proposed); only where the interrupt offers edits
``cancel``             cancel every interrupt
``never``              answer nothing (an interrupt with ``expiresAt`` is left to expire)
``late:SECONDS``       approve, but only after ``SECONDS`` (past an ``expiresAt``, the server
                       must refuse with ``INTERRUPT_EXPIRED``)
``twice``              approve, and send the same resume a second time (the server must replay
                       it: nothing runs again)
``hook:MODULE:FUNC``   ``FUNC(situation)`` returns a :class:`Decision`, a ``Reply`` or ``None``
``mix:A=W,B=W,...``    per episode, one of the named humans picked with weight ``W``

Randomness (only ``mix`` uses it, and any hook that wants it) comes from
:attr:`Situation.rng`, seeded by the run's seed, the task and the trial: the same seed gives the
same decisions, whatever the order the episodes run in.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs

from agui_core.episodes.tasks import Task
from agui_core.machine.client import (
    ProposedToolCall,
    Reply,
    Route,
    approve,
    approve_with_edits,
    cancel,
    deny,
    resolve,
)
from agui_core.protocol.types import JSON, Interrupt

__all__ = [
    "AnswerLate",
    "AnswerTwice",
    "ApproveAll",
    "CancelAll",
    "Decision",
    "DenyTool",
    "EditArgs",
    "Hook",
    "Human",
    "Mixed",
    "NeverAnswer",
    "Situation",
    "episode_rng",
    "parse_human",
    "parse_humans",
]


@attrs.frozen(kw_only=True)
class Decision:
    """What a human does about one interrupt: ``reply`` after ``delay`` seconds, sent ``times`` times."""

    reply: Reply
    delay: float = 0.0
    times: int = 1


@attrs.frozen(kw_only=True)
class Situation:
    """One open interrupt put to a human, with what it needs to decide.

    ``route`` is the UI the interrupt needs (:meth:`ClientMachine.route`); ``tool_call`` the
    proposal of a ``tool_call`` interrupt, when the client saw it; ``form_index`` how many forms
    this episode answered before; ``rng`` this episode's random source.
    """

    interrupt: Interrupt
    route: Route
    task: Task
    trial: int
    form_index: int
    rng: random.Random

    @property
    def tool_call(self) -> ProposedToolCall | None:
        return self.route.tool_call


class Human(Protocol):
    """A scripted human: its ``name`` (what the task file's ``expectBy`` names) and its decisions."""

    @property
    def name(self) -> str:
        """What the task file's ``expectBy`` calls this human."""

    def for_episode(self, rng: random.Random) -> Human:
        """The human that answers one episode (itself, or the one :class:`Mixed` picks)."""

    def decide(self, situation: Situation) -> Decision | None:
        """The decision about ``situation``'s interrupt; ``None`` to leave it unanswered."""


def episode_rng(seed: int, task_id: str, trial: int) -> random.Random:
    """The random source of one episode: the same for the same seed, task and trial."""
    return random.Random(f"{seed}\x00{task_id}\x00{trial}")


def _confirmation_yes(route: Route) -> Reply:
    schema = route.schema or {}
    if schema.get("type") == "object" and isinstance(schema.get("properties"), Mapping):
        if "approved" in schema["properties"]:
            return approve()
        if "confirmed" in schema["properties"]:
            return resolve({"confirmed": True})
    return resolve(True)


def _default_reply(situation: Situation, approval: Callable[[Situation], Reply]) -> Reply:
    route = situation.route
    if route.kind == "approval":
        return approval(situation)
    if route.kind == "confirmation":
        return _confirmation_yes(route)
    if route.kind == "form" and situation.form_index < len(situation.task.forms):
        return resolve(situation.task.forms[situation.form_index])
    return cancel()


@attrs.frozen
class _Answering:
    """The base of the humans that answer: forms, confirmations, and approvals their way."""

    name: str

    def for_episode(self, rng: random.Random) -> Human:
        return self

    def approval(self, situation: Situation) -> Reply:
        return approve()

    def decide(self, situation: Situation) -> Decision | None:
        return Decision(reply=_default_reply(situation, self.approval))


@attrs.frozen
class ApproveAll(_Answering):
    """Approves every tool call."""

    name: str = "approve"


@attrs.frozen
class DenyTool(_Answering):
    """Denies the calls of ``tool``; approves every other."""

    tool: str = ""
    name: str = attrs.field(default="")

    def __attrs_post_init__(self) -> None:
        if not self.tool:
            raise ValueError("deny names the tool it denies: deny:TOOL")
        if not self.name:
            object.__setattr__(self, "name", f"deny:{self.tool}")

    def approval(self, situation: Situation) -> Reply:
        call = situation.tool_call
        return deny() if call is not None and call.name == self.tool else approve()


@attrs.frozen
class EditArgs(_Answering):
    """Approves with the arguments ``edit(name, args)`` returns, where the interrupt offers edits."""

    edit: Callable[[str | None, JSON], Mapping[str, JSON] | None] = attrs.field(default=None)
    name: str = "edit"

    def approval(self, situation: Situation) -> Reply:
        call = situation.tool_call
        if call is None or not situation.route.editable:
            return approve()
        edited = self.edit(call.name, call.args)
        return approve() if edited is None else approve_with_edits(edited)


@attrs.frozen
class CancelAll:
    """Cancels every interrupt."""

    name: str = "cancel"

    def for_episode(self, rng: random.Random) -> Human:
        return self

    def decide(self, situation: Situation) -> Decision | None:
        return Decision(reply=cancel())


@attrs.frozen
class NeverAnswer:
    """Answers nothing."""

    name: str = "never"

    def for_episode(self, rng: random.Random) -> Human:
        return self

    def decide(self, situation: Situation) -> Decision | None:
        return None


@attrs.frozen
class AnswerLate(_Answering):
    """Approves (and fills forms) after ``seconds``."""

    seconds: float = 0.0
    name: str = attrs.field(default="")

    def __attrs_post_init__(self) -> None:
        if not self.seconds >= 0:
            raise ValueError(f"late takes a number of seconds, not {self.seconds!r}")
        if not self.name:
            object.__setattr__(self, "name", f"late:{self.seconds:g}")

    def decide(self, situation: Situation) -> Decision | None:
        return Decision(reply=_default_reply(situation, self.approval), delay=self.seconds)


@attrs.frozen
class AnswerTwice(_Answering):
    """Approves (and fills forms), and sends each resume twice."""

    name: str = "twice"

    def decide(self, situation: Situation) -> Decision | None:
        return Decision(reply=_default_reply(situation, self.approval), times=2)


@attrs.frozen
class Hook:
    """Leaves each decision to ``function(situation)``: a :class:`Decision`, a ``Reply``, or ``None``."""

    function: Callable[[Situation], Decision | Reply | None]
    name: str = "hook"

    def for_episode(self, rng: random.Random) -> Human:
        return self

    def decide(self, situation: Situation) -> Decision | None:
        answer = self.function(situation)
        if answer is None or isinstance(answer, Decision):
            return answer
        if isinstance(answer, Reply):
            return Decision(reply=answer)
        raise TypeError(f"the hook {self.name} returned {answer!r}, not a Decision, a Reply or None")


@attrs.frozen
class Mixed:
    """Per episode, one of ``humans`` picked by weight (from the episode's random source)."""

    humans: tuple[tuple[Human, float], ...]
    name: str = "mix"

    def __attrs_post_init__(self) -> None:
        if not self.humans or any(w <= 0 for _, w in self.humans):
            raise ValueError("mix takes one or more humans, each with a positive weight")

    def for_episode(self, rng: random.Random) -> Human:
        population = [h for h, _ in self.humans]
        return rng.choices(population, weights=[w for _, w in self.humans])[0].for_episode(rng)

    def decide(self, situation: Situation) -> Decision | None:
        return self.for_episode(situation.rng).decide(situation)


def _load(target: str) -> Any:
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"{target!r} is not MODULE:FUNCTION")
    found: Any = importlib.import_module(module)
    for part in attribute.split("."):
        found = getattr(found, part)
    if not callable(found):
        raise ValueError(f"{target} is not callable")
    return found


def _mix(spec: str) -> Mixed:
    parts: list[tuple[Human, float]] = []
    for item in spec.split(","):
        name, sep, weight = item.rpartition("=")
        if not sep:
            raise ValueError(f"mix entry {item!r} is not HUMAN=WEIGHT")
        try:
            parts.append((parse_human(name), float(weight)))
        except ValueError as exc:
            raise ValueError(f"mix entry {item!r}: {exc}") from None
    return Mixed(tuple(parts), name=f"mix:{spec}")


def parse_human(spec: str) -> Human:
    """The human ``spec`` names (see the module docstring); ``ValueError`` for a spec that names none."""
    kind, _, rest = spec.partition(":")
    simple: dict[str, Callable[[], Human]] = {
        "approve": ApproveAll,
        "cancel": CancelAll,
        "never": NeverAnswer,
        "twice": AnswerTwice,
    }
    if kind in simple:
        if rest:
            raise ValueError(f"{kind} takes no argument, got {spec!r}")
        return simple[kind]()
    if kind == "deny":
        return DenyTool(tool=rest)
    if kind == "late":
        try:
            seconds = float(rest)
        except ValueError:
            raise ValueError(f"late takes a number of seconds: late:SECONDS, got {spec!r}") from None
        return AnswerLate(seconds=seconds)
    if kind == "edit":
        return EditArgs(edit=_load(rest), name=spec)
    if kind == "hook":
        return Hook(function=_load(rest), name=spec)
    if kind == "mix":
        return _mix(rest)
    raise ValueError(
        f"no human is called {spec!r}: approve, deny:TOOL, edit:MODULE:FUNC, cancel, never, "
        "late:SECONDS, twice, hook:MODULE:FUNC, mix:HUMAN=WEIGHT,..."
    )


def parse_humans(specs: Sequence[str]) -> list[Human]:
    """The humans ``specs`` name, in order."""
    return [parse_human(s) for s in specs]
