"""The conformance suite: drives a live AG-UI server through the interrupt contract.

Theory of operation
-------------------
The kit knows one thing about the server's agent: an input that makes it interrupt (a user
message, ``--prompt``, or a whole ``RunAgentInput``, ``--input``). It sends that input on a
fresh thread and checks the run it gets (the *main* run): a structured interrupt outcome, the
reference client's ordering rules, the snapshots before the interrupt ``RUN_FINISHED``, the
reasons, the schemas, the expiry instants. From each interrupt's ``responseSchema`` it makes
a valid answer (or takes it from ``--answers``) and answers the main run with it: that
resume must start a new run, send the tool results on the original tool call ids and not
propose those calls again; the same resume sent again must replay, not execute again.

Each probe that could change a thread (a plain input while interrupts are pending, an unknown
id, a partial resume, a resume on another thread, malformed entries, payloads that violate
the schema, a cancelled tool call, two identical resumes at once, a late resume) gets a
thread of its own, interrupted afresh with the same input, so no probe disturbs another. A
probe that expects a refusal passes on a ``RUN_ERROR`` (any code: the codes are agui-core's
table, and a different one is noted, not failed); after a refusal the valid resume is sent
on that thread and must still be carried out (a rejected input changes nothing).

Throughout, every response is checked: each frame a valid event, each stream in order, every
``RUN_ERROR`` with a ``code``, no stream cut before its terminal event, nothing after it.

Nothing by surprise: without :attr:`Options.approve` the kit never says yes to a gate (a
``tool_call`` or ``confirmation``, an interrupt bound to a tool call, an approval schema, an
interrupt of unknown reason without a schema: :func:`is_gate`). It resolves a gate with a
denial its schema accepts (``{"approved": false}``, ``false``) or cancels it, answers only
forms with a real payload, makes the R6 violations of an approval falsy ones, and skips, as
"needs --approve", the checks that judge a tool's execution. At its end, also when a check
raised or the suite was cancelled, it cancels every interrupt still open on every thread it
opened (:meth:`_Suite.close_threads`); the report lists what it did and anything it could not
close.

Fresh threads are assumed to interrupt alike: the kit answers interrupts by position, so a
thread whose interrupts differ in number from the main run's makes its probe not applicable.
Time: expiry is reckoned on this machine's wall clock (a server whose clock is ahead by more
than :attr:`Options.expiry_margin` may see late a resume the kit sent in time); overlaps of
runs are measured on the monotonic clock, as the frames arrive.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import anyio
import attrs
import orjson

from agui_core.conformance.checks import CATALOGUE, CheckResult, Force, Report, Status, check_spec
from agui_core.conformance.exchange import Exchange, ProbeError, ProbeTransport, exchange
from agui_core.conformance.payloads import PayloadGenerationError, valid_payload, violating_payloads
from agui_core.errors import OrderingError, PayloadError, ResponseSchemaError
from agui_core.machine.expiry import read_expires_at
from agui_core.machine.ordering import StreamVerifier
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON

__all__ = ["DEFAULT_PROMPT", "Options", "run_conformance"]

DEFAULT_PROMPT: Final = "Please do the task that needs my approval."
"""The user message sent when neither a prompt nor an input is given."""

_CORE_REASONS: Final = frozenset({"tool_call", "input_required", "confirmation"})
_TOOL_EVENTS: Final = ("TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_CHUNK")


@attrs.frozen(kw_only=True)
class Options:
    """How to drive the server.

    ``prompt`` is the user message that makes the agent interrupt, unless ``input`` (a whole
    ``RunAgentInput`` as JSON; its ``threadId`` and ``runId`` are replaced) is given.
    ``answers`` maps an interrupt (its id, its position as ``"0"``, ``"1"``..., its reason, or
    ``"*"``) to the payload to resolve it with, where the kit should not make one from the
    schema. ``expiry_wait`` bounds how long the kit waits for an ``expiresAt`` to pass (R7);
    ``timeout`` bounds one response; ``drain`` is how long the kit listens after a terminal
    event for frames that should not come; ``violations`` caps the invalid payloads tried per
    distinct ``responseSchema``.

    ``approve`` lets the kit say yes to an approval (a tool call's, a confirmation): off by
    default, the kit denies or cancels every interrupt that gates an action and skips the
    checks that need a tool to run (see the module docstring). ``cleanup_timeout`` bounds the
    cancelling of the interrupts the kit leaves open at its end.
    """

    prompt: str = DEFAULT_PROMPT
    input: Mapping[str, Any] | None = None
    answers: Mapping[str, JSON] | None = None
    expiry_wait: float = 30.0
    expiry_margin: float = 0.25
    timeout: float = 30.0
    drain: float = 0.05
    violations: int = 4
    thread_prefix: str = "conformance"
    approve: bool = False
    cleanup_timeout: float = 30.0


class _NotApplicable(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@attrs.frozen(kw_only=True)
class _Interrupted:
    """A thread whose first run ended with interrupts: what answering it needs."""

    thread_id: str
    exchange: Exchange
    interrupts: tuple[Mapping[str, Any], ...]
    messages: Any
    state: Any


@attrs.frozen(kw_only=True)
class _Refusal:
    exchange: Exchange
    status: Status
    detail: str
    notes: tuple[str, ...]


def _now() -> datetime:
    return datetime.now(UTC)


def _expires(interrupt: Mapping[str, Any]) -> datetime | None:
    value = interrupt.get("expiresAt")
    if not isinstance(value, str):
        return None
    try:
        return read_expires_at(value)
    except ValueError:
        return None


def is_gate(interrupt: Mapping[str, Any]) -> bool:
    """Whether a yes to ``interrupt`` may let the agent act: anything but a form.

    A form is an ``input_required`` interrupt, or one whose ``responseSchema`` asks for
    something other than an approval (no ``approved`` property, not a bare boolean). A
    ``tool_call`` or ``confirmation``, an interrupt bound to a tool call, an approval schema
    and an interrupt of an unknown reason without a schema are gates: the kit cannot tell what
    a yes would set off.
    """
    schema = interrupt.get("responseSchema")
    if interrupt.get("reason") in ("tool_call", "confirmation") or isinstance(interrupt.get("toolCallId"), str):
        return True
    if isinstance(schema, Mapping):
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and "approved" in properties:
            return True
        return schema.get("type") == "boolean"
    return interrupt.get("reason") != "input_required"


def could_consent(payload: JSON) -> bool:
    """Whether a careless reader could take ``payload`` for a yes: a truthy ``approved``, a
    ``true`` among its top-level values, or a truthy value that is not an object."""
    if isinstance(payload, Mapping):
        return bool(payload.get("approved")) or any(value is True for value in payload.values())
    return bool(payload)


class _Cancel:
    """The answer "cancelled": the kit abandons the interrupt instead of resolving it."""

    def __repr__(self) -> str:
        return "cancelled"


CANCEL: Final = _Cancel()
"""The answer the kit gives a gate it may not approve and cannot deny within its schema."""

_NEEDS_APPROVE: Final = "needs --approve"


def _results_of(ex: Exchange) -> list[tuple[Any, Any]]:
    return [(e.get("toolCallId"), e.get("content")) for e in ex.of_type("TOOL_CALL_RESULT")]


def _code(ex: Exchange) -> str | None:
    terminal = ex.terminal
    code = terminal.get("code") if terminal is not None else None
    return code if isinstance(code, str) else None


def _admitted_after_close(ex: Exchange) -> bool:
    """Whether what followed ``ex``'s terminal event is what the 1.1 lifecycle admits after a
    closed run: a RUN_ERROR straight after RUN_FINISHED, or a RUN_STARTED opening a new run."""
    first = ex.after_terminal[0].type if ex.after_terminal else None
    if first == "RUN_STARTED":
        return True
    return first == "RUN_ERROR" and ex.frames[-1].type == "RUN_FINISHED" and len(ex.after_terminal) == 1


def ran_at_once(early: Exchange, late: Exchange) -> bool:
    """Whether two runs of one resume were under way together, as far as arrival times show.

    The two responses come over two connections, and which of two sockets that are both
    readable the client reads first is the scheduler's choice: a server that answers the
    second request only once the first run ended (a replay) can still have the second
    ``RUN_STARTED`` read before the first run's last events. So the end of the first run is
    no evidence; what is, is the second run starting before the first had sent anything past
    its own ``RUN_STARTED``: a server that waits for the first run never does that, a server
    that starts both at once nearly always does.
    """
    if late.started_at is None:
        return False
    started = next((i for i, f in enumerate(early.frames) if f.type == "RUN_STARTED"), None)
    if started is None or started + 1 >= len(early.frames):
        return False
    return late.started_at < early.frames[started + 1].at


class _Suite:
    def __init__(self, transport: ProbeTransport, options: Options) -> None:
        self.transport = transport
        self.options = options
        self.validators = PayloadValidators()
        self.exchanges: list[Exchange] = []
        self.results: dict[str, CheckResult] = {}
        self.followups: list[tuple[str, Exchange]] = []
        self._prefix = f"{options.thread_prefix}-{uuid.uuid4().hex}"  # unguessable: nobody takes our threads first
        self._serial = 0
        self._payloads: list[JSON] = []
        self._given: list[bool] = []
        self._answer_error: str | None = None
        self.answers: list[str] = []
        """How the kit answered each interrupt of the main run, for the report."""
        self.withheld = False
        """Whether, without ``approve``, the kit denies or cancels an interrupt of the main run."""
        self.skipped: list[str] = []
        """The checks not run for want of ``approve``."""
        self.open: dict[str, tuple[Mapping[str, Any], ...]] = {}
        """Threads the kit opened that have interrupts open, as far as it saw."""
        self.latest: dict[str, tuple[Mapping[str, Any], ...]] = {}
        self.history: dict[str, tuple[Any, Any]] = {}
        """The messages and state of each thread's last interrupting run (its snapshots), if sent."""
        """The interrupts each thread's last interrupting response announced."""
        self.unread: dict[str, Mapping[str, Any]] = {}
        """Threads whose last response the kit did not read to its end: what it sent."""
        self.cleanup: list[dict[str, Any]] = []
        """What the kit did at its end to leave no interrupt open, thread by thread."""

    # -- plumbing ----------------------------------------------------------------------------

    def _new_id(self, kind: str) -> str:
        self._serial += 1
        return f"{self._prefix}-{kind}-{self._serial}"

    def _set(
        self,
        check_id: str,
        status: Status,
        detail: str,
        *,
        notes: Sequence[str] = (),
        evidence: Sequence[Exchange] = (),
        force: Force | None = None,
    ) -> None:
        self.results[check_id] = CheckResult(
            spec=check_spec(check_id),
            status=status,
            detail=detail,
            notes=tuple(notes),
            evidence=tuple(e.evidence() for e in evidence),
            force=force if force is not None and force is not check_spec(check_id).force else None,
        )

    def _na(self, check_id: str, why: str) -> None:
        self._set(check_id, Status.NOT_APPLICABLE, why)

    def _needs_approve(self, check_id: str, why: str) -> None:
        self.skipped.append(check_id)
        self._na(check_id, f"{_NEEDS_APPROVE}: {why}")

    def _track(self, thread_id: Any, sent: Mapping[str, Any], ex: Exchange) -> None:
        """What ``ex`` says of the interrupts open on ``thread_id``.

        An interrupt counts as closed only once a resume that answers it was carried out: a
        server that calls a plain input a success while its interrupts stay open (breaking the
        spec) does not make the kit forget them. A refusal changes nothing.
        """
        if not isinstance(thread_id, str):
            return
        if ex.finished:
            self.unread.pop(thread_id, None)
            answered = {e.get("interruptId") for e in sent.get("resume") or () if isinstance(e, Mapping)}
            kept = [i for i in self.open.get(thread_id, ()) if i.get("id") not in answered]
            kept += [i for i in ex.interrupts if i.get("id") not in {k.get("id") for k in kept}]
            if kept:
                self.open[thread_id] = tuple(kept)
            else:
                self.open.pop(thread_id, None)
            if ex.interrupts:
                self.latest[thread_id] = tuple(ex.interrupts)
                messages, state = ex.last("MESSAGES_SNAPSHOT"), ex.last("STATE_SNAPSHOT")
                self.history[thread_id] = (
                    messages.get("messages") if messages is not None else None,
                    state.get("snapshot") if state is not None else None,
                )
        elif ex.ending in ("closed", "timeout"):
            self.unread[thread_id] = sent
        else:
            self.unread.pop(thread_id, None)

    async def _exchange(self, connection: Any, probe: str, sent: Mapping[str, Any]) -> Exchange:
        """One exchange on ``connection``, its thread marked unread until the response is read."""
        thread_id = sent.get("threadId")
        if isinstance(thread_id, str):
            self.unread[thread_id] = sent
        result = await exchange(connection, probe, sent, timeout=self.options.timeout, drain=self.options.drain)
        self._track(thread_id, sent, result)
        return result

    async def _send(self, probe: str, sent: Mapping[str, Any]) -> Exchange:
        try:
            connection = await self.transport.connect()
        except ProbeError as exc:
            now = time.monotonic()
            result = Exchange(
                probe=probe,
                sent=sent,
                frames=(),
                after_terminal=(),
                ending="http-error" if exc.status is not None else "connect-error",
                detail=exc.message,
                sent_at=now,
                ended_at=now,
                status=exc.status,
            )
        else:
            result = await self._exchange(connection, probe, sent)
        self.exchanges.append(result)
        return result

    def _template(self) -> dict[str, Any]:
        if self.options.input is not None:
            base = copy.deepcopy(dict(self.options.input))
        else:
            base = {"messages": [{"id": "conformance-user-1", "role": "user", "content": self.options.prompt}]}
        base.setdefault("state", {})
        base.setdefault("messages", [])
        base.setdefault("tools", [])
        base.setdefault("context", [])
        base.setdefault("forwardedProps", {})
        base.pop("resume", None)
        return base

    def _first_input(self, thread_id: str) -> dict[str, Any]:
        sent = self._template()
        sent["threadId"], sent["runId"] = thread_id, self._new_id("run")
        return sent

    def _next_input(self, thread: _Interrupted, resume: Sequence[Mapping[str, Any]] | None) -> dict[str, Any]:
        """An input continuing ``thread``: its snapshots' messages and state, and ``resume``."""
        sent = self._template()
        sent["threadId"], sent["runId"] = thread.thread_id, self._new_id("run")
        if thread.messages is not None:
            sent["messages"] = copy.deepcopy(thread.messages)
        if thread.state is not None:
            sent["state"] = copy.deepcopy(thread.state)
        if resume is not None:
            sent["resume"] = [dict(entry) for entry in resume]
        return sent

    async def _interrupting(self, label: str) -> _Interrupted | None:
        thread_id = self._new_id(label)
        ex = await self._send(f"{label}: interrupting run", self._first_input(thread_id))
        if not ex.interrupts:
            return None
        snapshot = ex.last("MESSAGES_SNAPSHOT")
        state = ex.last("STATE_SNAPSHOT")
        return _Interrupted(
            thread_id=thread_id,
            exchange=ex,
            interrupts=tuple(ex.interrupts),
            messages=snapshot.get("messages") if snapshot is not None else None,
            state=state.get("snapshot") if state is not None else None,
        )

    async def _fresh(self, label: str, like: _Interrupted) -> _Interrupted:
        thread = await self._interrupting(label)
        if thread is None:
            raise _NotApplicable(f"the interrupting input did not interrupt on the fresh thread of {label!r}")
        if len(thread.interrupts) != len(like.interrupts):
            raise _NotApplicable(
                f"the fresh thread of {label!r} raised {len(thread.interrupts)} interrupts, the main run "
                f"{len(like.interrupts)}; the kit answers interrupts by position"
            )
        return thread

    # -- answers -----------------------------------------------------------------------------

    def _schema(self, interrupt: Mapping[str, Any]) -> Mapping[str, Any] | None:
        schema = interrupt.get("responseSchema")
        return schema if isinstance(schema, Mapping) else None

    def _make_payloads(self, interrupts: Sequence[Mapping[str, Any]]) -> None:
        given = self.options.answers or {}
        payloads: list[JSON] = []
        for position, interrupt in enumerate(interrupts):
            keys = [interrupt.get("id"), str(position), interrupt.get("reason"), "*"]
            key = next((k for k in keys if isinstance(k, str) and k in given), None)
            schema = self._schema(interrupt)
            self._given.append(key is not None)
            if key is not None:
                payloads.append(copy.deepcopy(given[key]))
                continue
            if schema is not None:
                try:
                    payloads.append(valid_payload(schema, validators=self.validators))
                except (PayloadGenerationError, ResponseSchemaError) as exc:
                    self._answer_error = (
                        f"no valid payload could be made for interrupt #{position} "
                        f"({interrupt.get('reason')}): {exc}; give one with --answers"
                    )
                    return
            elif interrupt.get("reason") == "tool_call":
                payloads.append({"approved": True})
            elif interrupt.get("reason") == "confirmation":
                payloads.append(True)
            else:
                payloads.append({})
        self._payloads = payloads
        for position, interrupt in enumerate(interrupts):
            answer = self._answer(interrupt, position)
            what = f"#{position} {interrupt.get('reason')}"
            if isinstance(answer, _Cancel):
                self.withheld = True
                self.answers.append(f"{what}: cancelled")
            elif answer is not payloads[position]:
                self.withheld = True
                self.answers.append(f"{what}: denied with {orjson.dumps(answer).decode()}")
            elif is_gate(interrupt) and could_consent(answer):
                self.answers.append(f"{what}: approved with {orjson.dumps(answer).decode()} (--approve)")
            else:
                self.answers.append(f"{what}: answered with {orjson.dumps(answer).decode()}")

    def _answer(self, interrupt: Mapping[str, Any], position: int) -> JSON | _Cancel:
        """The answer to ``interrupt`` (at ``position``): its payload, or without ``approve``
        a denial or :data:`CANCEL` where the payload could be read as a yes to a gate."""
        payload = self._payloads[position]
        if self.options.approve or not is_gate(interrupt):
            return payload
        if self._given[position] and not could_consent(payload):
            return payload  # the person running the kit gave this answer, and it says no
        return self._denial(interrupt, payload)

    def _denial(self, interrupt: Mapping[str, Any], payload: JSON) -> JSON | _Cancel:
        """``payload`` turned into a no that ``interrupt``'s schema accepts; :data:`CANCEL` if none is."""
        schema = self._schema(interrupt)
        candidates: list[JSON] = []
        if isinstance(payload, Mapping):
            candidates.append({k: False if v is True else v for k, v in payload.items()} | {"approved": False})
            candidates.append({k: False if v is True else v for k, v in payload.items()})
        elif payload is True:
            candidates.append(False)
        if schema is None and interrupt.get("reason") == "tool_call":
            candidates.append({"approved": False})
        elif schema is None and interrupt.get("reason") == "confirmation":
            candidates.append(False)
        for candidate in candidates:
            if could_consent(candidate):
                continue
            if schema is not None and self._accepts(schema, candidate):
                return candidate
            if schema is None and interrupt.get("reason") in ("tool_call", "confirmation"):
                return candidate
        return CANCEL

    def _entries(self, thread: _Interrupted) -> list[dict[str, Any]]:
        """The valid resume of ``thread``: every interrupt resolved with its payload."""
        if self._answer_error is not None:
            raise _NotApplicable(self._answer_error)
        soon = _now().timestamp() + self.options.expiry_margin
        for interrupt in thread.interrupts:
            expires = _expires(interrupt)
            if expires is not None and expires.timestamp() <= soon:
                raise _NotApplicable(
                    f"interrupt {interrupt.get('id')!r} expired ({interrupt.get('expiresAt')}) before the kit "
                    "could answer it; the server's expiresAt leaves too little time"
                )
        return self._answers_of(thread)

    def _answers_of(self, thread: _Interrupted) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = []
        for position, interrupt in enumerate(thread.interrupts):
            answer = self._answer(interrupt, position)
            if isinstance(answer, _Cancel):
                entries.append({"interruptId": interrupt.get("id"), "status": "cancelled"})
            else:
                entries.append(
                    {"interruptId": interrupt.get("id"), "status": "resolved", "payload": copy.deepcopy(answer)}
                )
        return entries

    # -- judging -----------------------------------------------------------------------------

    def _judge_refusal(self, ex: Exchange, expected: Sequence[str]) -> _Refusal:
        """Whether ``ex`` refused its input with ``RUN_ERROR`` without executing anything."""
        if ex.ending == "http-error":
            return _Refusal(
                exchange=ex, status=Status.FAIL, detail=f"answered {ex.detail} instead of a RUN_ERROR", notes=()
            )
        if ex.finished:
            return _Refusal(exchange=ex, status=Status.FAIL, detail=f"accepted: {ex.summary()}", notes=())
        if not ex.refused:
            return _Refusal(exchange=ex, status=Status.FAIL, detail=f"no RUN_ERROR: {ex.summary()}", notes=())
        results = _results_of(ex)
        if results:
            calls = ", ".join(str(call) for call, _ in results)
            return _Refusal(
                exchange=ex,
                status=Status.FAIL,
                detail=f"refused only after executing tool calls {calls}: {ex.summary()}",
                notes=(),
            )
        code = _code(ex)
        notes: tuple[str, ...] = ()
        if code is not None and expected and code not in expected:
            notes = (f"{ex.probe}: code {code} (agui-core answers {' or '.join(expected)})",)
        return _Refusal(
            exchange=ex, status=Status.PASS, detail=f"refused with RUN_ERROR {code or '(no code)'}", notes=notes
        )

    async def _followup(self, thread: _Interrupted, label: str) -> None:
        """After a refusal on ``thread``, its valid resume must still be carried out."""
        try:
            entries = self._entries(thread)
        except _NotApplicable:
            return
        ex = await self._send(f"{label}: the valid resume after the refusal", self._next_input(thread, entries))
        self.followups.append((label, ex))

    async def _refusal_probe(
        self,
        check_id: str,
        label: str,
        main: _Interrupted,
        expected: Sequence[str],
        build: Callable[[_Interrupted, list[dict[str, Any]]], dict[str, Any]],
        *,
        followup: bool = True,
    ) -> None:
        try:
            thread = await self._fresh(label, main)
            sent = build(thread, self._entries(thread))
        except _NotApplicable as exc:
            self._na(check_id, exc.why)
            return
        ex = await self._send(label, sent)
        verdict = self._judge_refusal(ex, expected)
        if ex.refused and followup:
            await self._followup(thread, label)
        self._set(
            check_id,
            verdict.status,
            verdict.detail,
            notes=verdict.notes,
            evidence=[thread.exchange, ex],
            force=self._uncovered_force(check_id, thread, sent, ex) if verdict.status is Status.FAIL else None,
        )

    @staticmethod
    def _uncovered_force(check_id: str, thread: _Interrupted, sent: Mapping[str, Any], ex: Exchange) -> Force | None:
        """The spec's MUST where an input left a tool approval unanswered and the run still ended
        as success: the input's messages carry the gated call with neither a result nor an entry,
        so the producer could tell the approval was open (interrupt-resume, Resuming)."""
        if check_id not in ("r4.plain-input", "r3.partial-resume") or not ex.finished or ex.interrupts:
            return None
        answered = {e.get("interruptId") for e in sent.get("resume") or () if isinstance(e, Mapping)}
        uncovered = [i for i in thread.interrupts if i.get("id") not in answered]
        return Force.SPEC_MUST if any(isinstance(i.get("toolCallId"), str) for i in uncovered) else None

    @staticmethod
    def _run_id(ex: Exchange) -> Any:
        started = ex.last("RUN_STARTED")
        return started.get("runId") if started is not None else None

    @staticmethod
    def _difference(first: Exchange, second: Exchange) -> str | None:
        """Why ``second`` is not a replay of ``first`` (``None``: it is one, as far as the stream shows)."""
        if not second.finished:
            return f"it did not end with RUN_FINISHED: {second.summary()}"
        one, two = first.outcome or {}, second.outcome or {}
        if one.get("type") != two.get("type"):
            return f"its outcome is {two.get('type')!r}, the first run's {one.get('type')!r}"
        ids_one = sorted(str(i.get("id")) for i in first.interrupts)
        ids_two = sorted(str(i.get("id")) for i in second.interrupts)
        if ids_one != ids_two:
            return f"it raised interrupts {ids_two}, the first run {ids_one}: the agent ran again"
        result_one = (first.terminal or {}).get("result")
        result_two = (second.terminal or {}).get("result")
        if result_one != result_two:
            return f"its result {orjson.dumps(result_two).decode()} differs from the first run's"
        earlier = _results_of(first)
        for call, content in _results_of(second):
            if (call, content) not in earlier:
                return f"TOOL_CALL_RESULT for {call!r} with new content {content!r}: the tool ran again"
        started_before = {e.get("toolCallId") for e in first.of_type("TOOL_CALL_START")}
        for event in second.of_type("TOOL_CALL_START"):
            if event.get("toolCallId") not in started_before:
                return f"a new tool call {event.get('toolCallId')!r} started"
        return None

    # -- the interrupting run ----------------------------------------------------------------

    def _check_main(self, ex: Exchange, thread_id: str) -> None:
        evidence = [ex]
        terminal = ex.terminal
        undecodable = [f for f in ex.frames if f.event is None]
        if terminal is None:
            self._set("run.outcome", Status.FAIL, f"the run did not end: {ex.summary()}", evidence=evidence)
        elif terminal.get("type") == "RUN_ERROR":
            self._set("run.outcome", Status.FAIL, f"the run failed: {ex.summary()}", evidence=evidence)
        else:
            problems = self._outcome_problems(terminal, thread_id)
            if ex.frames[-1].event is None:
                problems.append(f"RUN_FINISHED is not a valid event: {ex.frames[-1].error}")
            if problems:
                self._set("run.outcome", Status.FAIL, "; ".join(problems), evidence=evidence)
            else:
                self._set("run.outcome", Status.PASS, f"{len(ex.interrupts)} interrupt(s): {ex.summary()}")
        ordering = self._ordering(ex)
        if ordering or undecodable:
            why = ordering + [f"frame {ex.frames.index(f)} is not an event: {f.error}" for f in undecodable]
            self._set("run.ordering", Status.FAIL, "; ".join(why), evidence=evidence)
        else:
            self._set("run.ordering", Status.PASS, f"{len(ex.frames)} events in order")
        interrupts = ex.interrupts
        if not interrupts:
            for check_id in ("run.snapshots", "run.reasons", "run.response-schema", "run.expires-at"):
                self._na(check_id, "the run raised no interrupt")
            return
        self._check_snapshots(ex)
        self._check_reasons(ex)
        self._check_schemas(ex)
        self._check_expiry(ex)

    def _outcome_problems(self, terminal: Mapping[str, Any], thread_id: str) -> list[str]:
        problems = []
        if terminal.get("threadId") != thread_id:
            problems.append(f"RUN_FINISHED names thread {terminal.get('threadId')!r}, not {thread_id!r}")
        outcome = terminal.get("outcome")
        if not isinstance(outcome, Mapping):
            problems.append("RUN_FINISHED has no outcome (a legacy producer: read as success, not as an interrupt)")
            return problems
        if outcome.get("type") != "interrupt":
            problems.append(f"the outcome is {outcome.get('type')!r}, not 'interrupt'")
            return problems
        found = outcome.get("interrupts")
        if not isinstance(found, list) or not found:
            problems.append("the interrupt outcome has no interrupts (the list is never empty)")
            return problems
        ids = [i.get("id") if isinstance(i, Mapping) else None for i in found]
        if any(not isinstance(i, str) or not i for i in ids):
            problems.append(f"an interrupt without a usable id: {ids}")
        elif len(set(ids)) != len(ids):
            problems.append(f"an interrupt id appears twice: {ids}")
        return problems

    @staticmethod
    def _ordering(ex: Exchange) -> list[str]:
        verifier = StreamVerifier()
        problems = []
        for position, frame in enumerate(ex.frames):
            if frame.event is None:
                continue
            try:
                verifier.check(frame.event)
            except OrderingError as exc:
                problems.append(f"event {position} ({frame.type}): {exc.message.split(': ', 1)[-1]}")
        return problems

    def _check_snapshots(self, ex: Exchange) -> None:
        kinds = ex.types
        start = kinds.index("RUN_STARTED") if "RUN_STARTED" in kinds else 0
        before = kinds[start:-1]
        missing = [k for k in ("STATE_SNAPSHOT", "MESSAGES_SNAPSHOT") if k not in before]
        if missing:
            self._set(
                "run.snapshots",
                Status.FAIL,
                f"no {' and no '.join(missing)} before the interrupt RUN_FINISHED: {ex.summary()}",
                evidence=[ex],
            )
        else:
            self._set("run.snapshots", Status.PASS, "STATE_SNAPSHOT and MESSAGES_SNAPSHOT precede RUN_FINISHED")

    def _check_reasons(self, ex: Exchange) -> None:
        calls = {e.get("toolCallId") for e in ex.of_type("TOOL_CALL_START")}
        calls |= {e.get("toolCallId") for e in ex.of_type("TOOL_CALL_CHUNK")}
        for snapshot in ex.of_type("MESSAGES_SNAPSHOT"):
            for message in snapshot.get("messages") or ():
                for call in (message.get("toolCalls") or ()) if isinstance(message, Mapping) else ():
                    if isinstance(call, Mapping):
                        calls.add(call.get("id"))
        problems, reasons = [], []
        for interrupt in ex.interrupts:
            iid, reason = interrupt.get("id"), interrupt.get("reason")
            reasons.append(str(reason))
            if not isinstance(reason, str) or not reason:
                problems.append(f"interrupt {iid!r} has no reason (reason is required)")
                continue
            if reason.startswith("core:") and reason not in _CORE_REASONS:
                problems.append(f"interrupt {iid!r} has reason {reason!r}: the prefix core: is reserved")
            call = interrupt.get("toolCallId")
            if reason == "tool_call" and not isinstance(call, str):
                problems.append(f"interrupt {iid!r} has reason tool_call but no toolCallId")
            elif call is not None and call not in calls:
                problems.append(f"interrupt {iid!r} names tool call {call!r}, which the run never showed")
        if problems:
            # Only a missing reason breaks the spec (the schema requires one); the rest is the seed's.
            spec_broken = any("has no reason" in problem for problem in problems)
            force = Force.SPEC_MUST if spec_broken else Force.SEED
            self._set("run.reasons", Status.FAIL, "; ".join(problems), evidence=[ex], force=force)
        else:
            self._set("run.reasons", Status.PASS, f"reasons {', '.join(reasons)}")

    def _check_schemas(self, ex: Exchange) -> None:
        problems, count = [], 0
        for interrupt in ex.interrupts:
            schema = interrupt.get("responseSchema")
            if schema is None:
                continue
            count += 1
            if not isinstance(schema, Mapping):
                problems.append(f"interrupt {interrupt.get('id')!r}: responseSchema is not an object")
                continue
            try:
                self.validators.check_schema(str(interrupt.get("id")), schema)
            except ResponseSchemaError as exc:
                problems.append(exc.message)
        if problems:
            self._set("run.response-schema", Status.FAIL, "; ".join(problems), evidence=[ex])
        elif count:
            self._set("run.response-schema", Status.PASS, f"{count} responseSchema(s) compile")
        else:
            self._na("run.response-schema", "no interrupt declares a responseSchema")

    def _check_expiry(self, ex: Exchange) -> None:
        problems, seen = [], []
        for interrupt in ex.interrupts:
            value = interrupt.get("expiresAt")
            if value is None:
                continue
            seen.append(str(value))
            try:
                read_expires_at(value)
            except ValueError as exc:
                problems.append(f"interrupt {interrupt.get('id')!r}: {exc}")
        if problems:
            self._set("run.expires-at", Status.FAIL, "; ".join(problems), evidence=[ex])
        elif seen:
            self._set("run.expires-at", Status.PASS, f"expiresAt {', '.join(seen)}")
        else:
            self._na("run.expires-at", "no interrupt sets expiresAt")

    # -- the resume --------------------------------------------------------------------------

    async def _resume(self, main: _Interrupted) -> Exchange | None:
        try:
            entries = self._entries(main)
        except _NotApplicable as exc:
            for check_id in ("resume.accepted", "resume.tool-results", "resume.no-tool-restart", "r5.replay"):
                self._na(check_id, exc.why)
            return None
        sent = self._next_input(main, entries)
        ex = await self._send("resume", sent)
        started = ex.frames[0].data if ex.frames and ex.frames[0].type == "RUN_STARTED" else None
        ordering = self._ordering(ex)
        if not ex.finished or started is None:
            # A run may fail (RUN_ERROR is the producer reporting its own failure, and a cut
            # stream is r8.streams-complete's): the spec does not promise the resume succeeds,
            # the seed does. A resumed run that is not a new run of the thread breaks the spec.
            self._set(
                "resume.accepted",
                Status.FAIL,
                f"the valid resume was not carried out: {ex.summary()}",
                evidence=[ex],
                force=Force.SEED,
            )
        elif started.get("threadId") != main.thread_id or started.get("runId") == self._run_id(main.exchange):
            self._set(
                "resume.accepted", Status.FAIL, "the resumed run is not a new run on the same thread", evidence=[ex]
            )
        elif ordering:
            self._set("resume.accepted", Status.FAIL, "; ".join(ordering), evidence=[ex])
        else:
            self._set("resume.accepted", Status.PASS, ex.summary())
        self._check_tool_results(main, entries, ex)
        replay = await self._send("replay: the same resume again", {**sent, "runId": self._new_id("run")})
        if not ex.finished:
            self._na("r5.replay", "the resume itself was not carried out, so there is nothing to replay")
        else:
            why = self._difference(ex, replay)
            if why is None:
                self._set("r5.replay", Status.PASS, f"replayed: {replay.summary()}")
            else:
                self._set("r5.replay", Status.FAIL, f"the replay {why}", evidence=[ex, replay])
        return ex

    def _check_tool_results(self, main: _Interrupted, entries: Sequence[Mapping[str, Any]], ex: Exchange) -> None:
        bound = [i for i in main.interrupts if isinstance(i.get("toolCallId"), str)]
        if not bound:
            self._na("resume.tool-results", "no interrupt is bound to a tool call")
            self._na("resume.no-tool-restart", "no interrupt is bound to a tool call")
            return
        results = {call for call, _ in _results_of(ex)}
        if self.withheld:
            self._needs_approve(
                "resume.tool-results", "the kit denied or cancelled every approval, so no approved tool call ran"
            )
        missing = [
            str(i.get("toolCallId"))
            for i, entry in zip(main.interrupts, entries, strict=True)
            if i.get("reason") == "tool_call"
            and entry.get("status") == "resolved"
            and i.get("toolCallId") not in results
        ]
        if self.withheld:
            pass
        elif not ex.finished:
            self._na("resume.tool-results", "the resume was not carried out")
        elif missing:
            self._set(
                "resume.tool-results",
                Status.FAIL,
                f"no TOOL_CALL_RESULT for the original tool call(s) {', '.join(missing)}: {ex.summary()}",
                evidence=[ex],
            )
        else:
            self._set("resume.tool-results", Status.PASS, f"results for {', '.join(sorted(map(str, results)))}")
        original = {i.get("toolCallId") for i in bound}
        again = [
            f"{e.get('type')} {e.get('toolCallId')}"
            for kind in _TOOL_EVENTS
            for e in ex.of_type(kind)
            if e.get("toolCallId") in original
        ]
        if again:
            self._set("resume.no-tool-restart", Status.FAIL, f"re-emitted {', '.join(again)}", evidence=[ex])
        else:
            self._set("resume.no-tool-restart", Status.PASS, "no interrupted tool call proposed again")

    async def _cancel_probe(self, main: _Interrupted) -> None:
        check_id = "resume.cancelled-not-executed"
        positions = [n for n, i in enumerate(main.interrupts) if i.get("reason") == "tool_call"]
        if not positions:
            self._na(check_id, "no tool_call interrupt to cancel")
            return
        try:
            thread = await self._fresh("cancel", main)
            entries = self._entries(thread)
        except _NotApplicable as exc:
            self._na(check_id, exc.why)
            return
        target = thread.interrupts[positions[-1]]
        call = target.get("toolCallId")
        entries[positions[-1]] = {"interruptId": target.get("id"), "status": "cancelled"}
        ex = await self._send("cancel: a tool call cancelled", self._next_input(thread, entries))
        evidence = [thread.exchange, ex]
        shown = [
            e.get("type")
            for kind in (*_TOOL_EVENTS, "TOOL_CALL_RESULT")
            for e in ex.of_type(kind)
            if e.get("toolCallId") == call
        ]
        if not ex.finished:
            self._set(
                check_id,
                Status.FAIL,
                f"the resume cancelling {call!r} was not carried out: {ex.summary()}",
                evidence=evidence,
            )
        elif shown:
            self._set(
                check_id,
                Status.FAIL,
                f"cancelled tool call {call!r} shows {', '.join(map(str, shown))}",
                evidence=evidence,
            )
        else:
            self._set(check_id, Status.PASS, f"nothing of cancelled tool call {call!r} in the resumed run")

    # -- refusal probes ----------------------------------------------------------------------

    async def _probe_refusals(self, main: _Interrupted) -> None:
        def plain(thread: _Interrupted, entries: list[dict[str, Any]]) -> dict[str, Any]:
            sent = self._next_input(thread, None)
            sent["messages"] = [
                *sent["messages"],
                {
                    "id": f"conformance-user-{uuid.uuid4().hex[:8]}",
                    "role": "user",
                    "content": "Something else, please.",
                },
            ]
            return sent

        await self._refusal_probe("r4.plain-input", "r4", main, ["PENDING_INTERRUPTS"], plain)

        def unknown(thread: _Interrupted, entries: list[dict[str, Any]]) -> dict[str, Any]:
            stranger = {**entries[0], "interruptId": f"conformance-unknown-{uuid.uuid4().hex[:8]}"}
            return self._next_input(thread, [*entries, stranger])

        await self._refusal_probe("r2.unknown-id", "r2", main, ["UNKNOWN_INTERRUPT_ID"], unknown)

        if len(main.interrupts) < 2:
            self._na("r3.partial-resume", "the run raised one interrupt; a partial resume needs two or more")
        else:
            await self._refusal_probe(
                "r3.partial-resume", "r3", main, ["PARTIAL_RESUME"], lambda t, e: self._next_input(t, e[:-1])
            )

        def elsewhere(thread: _Interrupted, entries: list[dict[str, Any]]) -> dict[str, Any]:
            return {**self._next_input(thread, entries), "threadId": self._new_id("r1-other")}

        await self._refusal_probe("r1.other-thread", "r1", main, ["THREAD_MISMATCH", "UNKNOWN_INTERRUPT_ID"], elsewhere)

        def cancelled(thread: _Interrupted, entries: list[dict[str, Any]]) -> dict[str, Any]:
            entries[0] = {**entries[0], "status": "cancelled", "payload": entries[0].get("payload", {})}
            return self._next_input(thread, entries)

        await self._refusal_probe("r8.cancelled-with-payload", "cancelled-payload", main, ["INVALID_RESUME"], cancelled)

        def null_metadata(thread: _Interrupted, entries: list[dict[str, Any]]) -> dict[str, Any]:
            entries[0] = {**entries[0], "metadata": None}
            return self._next_input(thread, entries)

        await self._refusal_probe("r8.metadata-null", "metadata-null", main, ["INVALID_RESUME"], null_metadata)

        candidates = [
            n
            for n, i in enumerate(main.interrupts)
            if (s := self._schema(i)) is not None and not self._accepts(s, None)
        ]
        # A resolved entry with no payload is a yes to a server that reads the status alone.
        required = next(
            (n for n in candidates if self.options.approve or not is_gate(main.interrupts[n])),
            None,
        )
        if required is None and candidates:
            self._needs_approve(
                "r8.missing-payload",
                "only approvals declare a responseSchema that a missing payload fails, and a server that reads "
                "a resolved entry as a yes would run the tool",
            )
        elif required is None:
            self._na("r8.missing-payload", "no interrupt declares a responseSchema that a missing payload fails")
        else:

            def missing(thread: _Interrupted, entries: list[dict[str, Any]]) -> dict[str, Any]:
                entries[required].pop("payload", None)
                return self._next_input(thread, entries)

            await self._refusal_probe("r8.missing-payload", "missing-payload", main, ["INVALID_PAYLOAD"], missing)
        await self._probe_payloads(main)

    def _accepts(self, schema: Mapping[str, Any], value: JSON) -> bool:
        try:
            self.validators.validate("conformance", schema, value)
        except (PayloadError, ResponseSchemaError):
            return False
        return True

    async def _probe_payloads(self, main: _Interrupted) -> None:
        check_id = "r6.invalid-payload"
        if self._answer_error is not None:
            self._na(check_id, self._answer_error)
            return
        tried: set[bytes] = set()
        lines: list[str] = []
        notes: list[str] = []
        failed: list[Exchange] = []
        for position, interrupt in enumerate(main.interrupts):
            schema = self._schema(interrupt)
            if schema is None:
                continue
            key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
            if key in tried:
                continue
            tried.add(key)
            base = self._answer(interrupt, position)
            if isinstance(base, _Cancel):
                lines.append(
                    f"#{position}: not tried (the kit cancels this approval: it has no denial its schema accepts)"
                )
                continue
            gate = is_gate(interrupt) and not self.options.approve
            try:
                violations = violating_payloads(
                    schema,
                    base=base,
                    limit=None if gate else self.options.violations,
                    validators=self.validators,
                    falsy=gate,
                )
            except (PayloadGenerationError, ResponseSchemaError) as exc:
                lines.append(f"#{position}: no violation made ({exc})")
                continue
            if gate:  # never a value a careless server could read as a yes
                violations = [v for v in violations if not could_consent(v.value)][: self.options.violations]
            for violation in violations:
                label = f"r6 #{position} {violation.describe()}"
                try:
                    thread = await self._fresh("r6", main)
                    entries = self._entries(thread)
                except _NotApplicable as exc:
                    lines.append(f"{label}: not tried ({exc.why})")
                    continue
                entries[position] = {**entries[position], "payload": violation.value}
                ex = await self._send(label, self._next_input(thread, entries))
                verdict = self._judge_refusal(ex, ["INVALID_PAYLOAD"])
                notes.extend(verdict.notes)
                if verdict.status is Status.PASS:
                    await self._followup(thread, label)
                    lines.append(f"{label}: refused")
                else:
                    failed += [thread.exchange, ex]
                    lines.append(f"{label}: {verdict.detail}")
        if failed:
            self._set(
                check_id,
                Status.FAIL,
                "; ".join(line for line in lines if not line.endswith(": refused")),
                notes=notes,
                evidence=failed,
            )
        elif any(line.endswith(": refused") for line in lines):
            self._set(check_id, Status.PASS, "; ".join(lines), notes=notes)
        else:
            self._na(check_id, "; ".join(lines) or "no interrupt declares a responseSchema")

    # -- concurrency -------------------------------------------------------------------------

    async def _concurrent_probe(self, main: _Interrupted) -> None:
        check_id = "r5.concurrent"
        if self.withheld:
            self._needs_approve(check_id, "executing at most once is judged on an approved tool call")
            return
        try:
            thread = await self._fresh("concurrent", main)
            sent = self._next_input(thread, self._entries(thread))
        except _NotApplicable as exc:
            self._na(check_id, exc.why)
            return
        pair: list[Exchange | None] = [None, None]
        try:
            connections = [await self.transport.connect(), await self.transport.connect()]
        except ProbeError as exc:
            self._set(check_id, Status.FAIL, f"cannot open two connections: {exc.message}")
            return
        release = anyio.Event()

        async def one(slot: int) -> None:
            await release.wait()
            pair[slot] = await self._exchange(connections[slot], f"concurrent #{slot + 1}", sent)

        async with anyio.create_task_group() as group:
            group.start_soon(one, 0)
            group.start_soon(one, 1)
            await anyio.sleep(0)
            release.set()
        first, second = (p for p in pair if p is not None)
        self.exchanges += [first, second]
        evidence = [thread.exchange, first, second]
        runs = [e for e in (first, second) if e.finished]
        broken = [e for e in (first, second) if not e.finished and not e.refused]
        if broken:
            self._set(check_id, Status.FAIL, f"{broken[0].probe}: {broken[0].summary()}", evidence=evidence)
            return
        if not runs:
            self._set(
                check_id,
                Status.FAIL,
                f"both were refused, so the valid resume was lost: {first.summary()} / {second.summary()}",
                evidence=evidence,
            )
            return
        if len(runs) == 1:
            refused = second if runs[0] is first else first
            verdict = self._judge_refusal(refused, ["THREAD_BUSY"])
            self._set(
                check_id,
                verdict.status,
                f"one ran; the other {verdict.detail}",
                notes=verdict.notes,
                evidence=evidence if verdict.status is Status.FAIL else (),
            )
            return
        early, late = sorted(runs, key=lambda e: e.started_at or 0.0)
        if ran_at_once(early, late):
            self._set(
                check_id,
                Status.FAIL,
                "both resumes ran at once: the second RUN_STARTED came before the first run sent anything "
                "past its own RUN_STARTED",
                evidence=evidence,
            )
            return
        why = self._difference(early, late)
        if why is None:
            self._set(check_id, Status.PASS, "one ran, the other replayed it")
        else:
            self._set(check_id, Status.FAIL, f"both executed: the second {why}", evidence=evidence)

    # -- expiry ------------------------------------------------------------------------------

    async def _expiry_setup(self, main: _Interrupted) -> tuple[_Interrupted, float] | None:
        if not any(_expires(i) is not None for i in main.interrupts):
            self._na("r7.expired", "no interrupt sets expiresAt")
            return None
        try:
            thread = await self._fresh("r7", main)
        except _NotApplicable as exc:
            self._na("r7.expired", exc.why)
            return None
        instants = [e for e in (_expires(i) for i in thread.interrupts) if e is not None]
        if not instants:
            self._na("r7.expired", "the fresh thread's interrupts set no expiresAt")
            return None
        wait = (min(instants) - _now()).total_seconds() + self.options.expiry_margin
        if wait > self.options.expiry_wait:
            self._na(
                "r7.expired",
                f"the earliest expiresAt is {wait:.1f} s away, beyond the wait of {self.options.expiry_wait:g} s "
                "(--expiry-wait)",
            )
            return None
        return thread, time.monotonic() + max(wait, 0.0)

    async def _expiry_probe(self, thread: _Interrupted, due: float) -> None:
        if self._answer_error is not None:
            self._na("r7.expired", self._answer_error)
            return
        await anyio.sleep(max(due - time.monotonic(), 0.0))
        entries = self._answers_of(thread)
        ex = await self._send("r7: a resume after expiresAt", self._next_input(thread, entries))
        verdict = self._judge_refusal(ex, ["INTERRUPT_EXPIRED"])
        self._set("r7.expired", verdict.status, verdict.detail, notes=verdict.notes, evidence=[thread.exchange, ex])

    # -- throughout --------------------------------------------------------------------------

    def _check_throughout(self) -> None:
        errors = [e for e in self.exchanges if e.refused]
        codeless = [e for e in errors if not _code(e)]
        if codeless:
            self._set(
                "r8.error-codes",
                Status.FAIL,
                f"{len(codeless)} of {len(errors)} RUN_ERROR(s) carry no code: "
                + "; ".join(f"{e.probe}: {e.summary()}" for e in codeless[:5]),
                evidence=codeless[:5],
            )
        elif errors:
            codes = sorted({str(_code(e)) for e in errors})
            self._set("r8.error-codes", Status.PASS, f"{len(errors)} RUN_ERROR(s), codes {', '.join(codes)}")
        else:
            self._na("r8.error-codes", "the server sent no RUN_ERROR")
        if self.followups:
            lost = [(label, e) for label, e in self.followups if not e.finished]
            if lost:
                self._set(
                    "r8.refusal-keeps-interrupts",
                    Status.FAIL,
                    "after a refusal the valid resume was not carried out: "
                    + "; ".join(f"{label}: {e.summary()}" for label, e in lost[:5]),
                    evidence=[e for _, e in lost[:5]],
                )
            else:
                self._set(
                    "r8.refusal-keeps-interrupts",
                    Status.PASS,
                    f"after each of {len(self.followups)} refusals the valid resume was carried out",
                )
        else:
            self._na("r8.refusal-keeps-interrupts", "no refusal to follow up")
        cut = [e for e in self.exchanges if e.ending in ("closed", "timeout")]
        if cut:
            self._set(
                "r8.streams-complete",
                Status.FAIL,
                "; ".join(f"{e.probe}: {e.summary()}" for e in cut[:5]),
                evidence=cut[:5],
            )
        else:
            self._set(
                "r8.streams-complete", Status.PASS, f"{len(self.exchanges)} responses, each ended by its terminal event"
            )
        trailing = [e for e in self.exchanges if e.after_terminal]
        if trailing:
            # The spec admits a new RUN_STARTED after a closed run, and a RUN_ERROR right after
            # RUN_FINISHED; the seed (verifyEvents) admits neither in the same response.
            admitted = all(_admitted_after_close(e) for e in trailing)
            self._set(
                "r8.nothing-after-terminal",
                Status.FAIL,
                "; ".join(
                    f"{e.probe}: {', '.join(str(f.type) for f in e.after_terminal)} after {e.frames[-1].type}"
                    for e in trailing[:5]
                ),
                evidence=trailing[:5],
                force=Force.SEED if admitted else Force.SPEC_MUST,
            )
        else:
            self._set("r8.nothing-after-terminal", Status.PASS, "no frame after a terminal event")
        wrong: list[tuple[Exchange, str]] = []
        for e in self.exchanges:
            for position, frame in enumerate(e.frames):
                if frame.event is None:
                    wrong.append((e, f"frame {position} is not an event: {frame.error}"))
            wrong += [(e, problem) for problem in self._ordering(e)]
        if wrong:
            self._set(
                "wire.events",
                Status.FAIL,
                "; ".join(f"{e.probe}: {problem}" for e, problem in wrong[:5]),
                evidence=list({id(e): e for e, _ in wrong[:5]}.values()),
            )
        else:
            count = sum(len(e.frames) for e in self.exchanges)
            self._set("wire.events", Status.PASS, f"{count} events, all valid and in order")

    # -- leaving nothing open ----------------------------------------------------------------

    async def close_threads(self) -> None:
        """Cancel every interrupt the kit left open, on every thread it opened.

        Runs at the end of the suite, also when a check raised or the suite was cancelled
        (shielded, bounded by :attr:`Options.cleanup_timeout`). A thread whose last response
        was cut is asked again with the same input (same ``runId``) to learn how that run
        ended; an approving resume is never sent again. Each open interrupt is answered with
        a ``cancelled`` entry, round after round while the resumed run interrupts anew; an
        interrupt past its ``expiresAt`` is left out of the entries (the thread closes it on
        the next input) unless nothing else is open. What could not be closed is reported.
        """
        with anyio.CancelScope(shield=True), anyio.move_on_after(self.options.cleanup_timeout) as bounded:
            for thread_id, sent in list(self.unread.items()):
                if self.options.approve and sent.get("resume"):
                    continue  # the run it started may have run a tool; asking again might run it again
                ex = await self._cleanup_send(f"cleanup {thread_id}: the cut response asked again", sent)
                self._note_cleanup(thread_id, "asked again", ex)
            for thread_id in list(self.open):
                await self._cancel_thread(thread_id)
        if bounded.cancelled_caught:
            self.cleanup.append({"threadId": None, "did": "stopped", "result": "cleanup_timeout reached"})

    async def _cleanup_send(self, probe: str, sent: Mapping[str, Any]) -> Exchange:
        try:
            connection = await self.transport.connect()
        except ProbeError as exc:
            now = time.monotonic()
            return Exchange(
                probe=probe,
                sent=sent,
                frames=(),
                after_terminal=(),
                ending="connect-error",
                detail=exc.message,
                sent_at=now,
                ended_at=now,
                status=exc.status,
            )
        return await self._exchange(connection, probe, sent)

    def _note_cleanup(self, thread_id: str, did: str, ex: Exchange) -> None:
        self.cleanup.append({"threadId": thread_id, "did": did, "result": ex.summary()})

    async def _cancel_thread(self, thread_id: str) -> None:
        narrowed = False
        for _ in range(4):  # a cancelled resume may interrupt again (a chained interrupt)
            interrupts = self.open.get(thread_id)
            if not interrupts:
                return
            now = _now()
            live = [i for i in interrupts if (e := _expires(i)) is None or e > now]
            entries = [{"interruptId": i.get("id"), "status": "cancelled"} for i in (live or interrupts)]
            sent = {**self._template(), "threadId": thread_id, "runId": self._new_id("cleanup"), "resume": entries}
            messages, state = self.history.get(thread_id, (None, None))
            if messages is not None:
                sent["messages"] = copy.deepcopy(messages)
            if state is not None:
                sent["state"] = copy.deepcopy(state)
            ex = await self._cleanup_send(f"cleanup {thread_id}: cancel {len(entries)} interrupt(s)", sent)
            ids = ", ".join(str(e["interruptId"]) for e in entries)
            self._note_cleanup(thread_id, f"cancelled {ids}", ex)
            if not live and ex.refused:
                # Every interrupt was past its expiresAt: the refusal was the thread's first input
                # since, and closes them as expired (agui-core); no other input closes them.
                self.open.pop(thread_id, None)
                return
            latest = self.latest.get(thread_id, ())
            if ex.refused and not narrowed and latest and len(latest) < len(interrupts):
                # Some of those the kit kept may have been closed after all: the last ones announced.
                narrowed = True
                self.open[thread_id] = latest
                continue
            if not ex.finished:
                return
        self.cleanup.append({"threadId": thread_id, "did": "gave up", "result": "still interrupting after 4 cancels"})

    @property
    def left_open(self) -> dict[str, list[Any]]:
        """The threads that still have interrupts open (as far as the kit saw), with their ids."""
        found = {t: [i.get("id") for i in interrupts] for t, interrupts in self.open.items()}
        for thread_id in self.unread:
            found.setdefault(thread_id, ["(unknown: the response was cut)"])
        return found

    # -- the whole suite ---------------------------------------------------------------------

    async def run(self) -> None:
        try:
            await self._run()
        finally:
            await self.close_threads()

    async def _run(self) -> None:
        thread_id = self._new_id("main")
        ex = await self._send("main: interrupting run", self._first_input(thread_id))
        if ex.ending == "connect-error":
            raise ProbeError(f"cannot test {self.transport.url}: {ex.detail}")
        self._check_main(ex, thread_id)
        if not ex.interrupts:
            why = "the interrupting input did not end in an interrupt (see run.outcome)"
            for spec in CATALOGUE:
                if spec.id not in self.results and not spec.id.startswith(("r8.", "wire.")):
                    self._na(spec.id, why)
            self._check_throughout()
            return
        main = _Interrupted(
            thread_id=thread_id,
            exchange=ex,
            interrupts=tuple(ex.interrupts),
            messages=(ex.last("MESSAGES_SNAPSHOT") or {}).get("messages"),
            state=(ex.last("STATE_SNAPSHOT") or {}).get("snapshot"),
        )
        self._make_payloads(main.interrupts)
        await self._resume(main)
        expiry = await self._expiry_setup(main)
        await self._cancel_probe(main)
        await self._probe_refusals(main)
        await self._concurrent_probe(main)
        if expiry is not None:
            await self._expiry_probe(*expiry)
        self._check_throughout()


async def run_conformance(
    transport: ProbeTransport,
    options: Options | None = None,
    *,
    server: Mapping[str, Any] | None = None,
) -> Report:
    """Drive the server behind ``transport`` through the contract; the report of every check.

    Raises :class:`~agui_core.conformance.exchange.ProbeError` when the server cannot be
    reached at all (nothing could be tested).

    ``server`` is added to the report as what is known of the server (its capabilities, a
    version); by default the kit asks for ``capabilities`` beside the endpoint.
    """
    suite = _Suite(transport, options if options is not None else Options())
    started = _now()
    clock = time.monotonic()
    known: dict[str, Any] = dict(server or {})
    if "capabilities" not in known:
        capabilities = await transport.get_json("capabilities")
        if capabilities is not None:
            known["capabilities"] = capabilities
    await suite.run()
    results = tuple(suite.results[spec.id] for spec in CATALOGUE if spec.id in suite.results)
    return Report(
        target=transport.url,
        transport=transport.name,
        results=results,
        started_at=started.isoformat(timespec="seconds").replace("+00:00", "Z"),
        seconds=time.monotonic() - clock,
        server=known,
        approve=suite.options.approve,
        answers=tuple(suite.answers),
        skipped=tuple(suite.skipped),
        cleanup=tuple(suite.cleanup),
        left_open=suite.left_open,
    )
