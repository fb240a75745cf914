"""``agui demo``: the main job in one command, over a real WebSocket host and a real store.

The demo starts a WebSocket host on localhost over a SQLite file, hosting the example agents
of :mod:`agui_core.examples`, and plays three scenarios against it with the project's own
client (every event checked by a :class:`~agui_core.machine.client.ClientMachine`):

1. ``email``: an email behind the approval-gated ``sendEmail`` tool (approve, deny, edit or
   cancel; edited arguments replace the proposed ones whole);
2. ``filing``: a quarterly-filing form (``input_required`` with the seed's schema and an
   ``expiresAt`` ten minutes ahead), then a chained ``confirmation``;
3. ``parallel``: three emails proposed in one run, three approvals answered in one resume.

Each interrupt is rendered by its reason, as :meth:`ClientMachine.route` tells: an approval
shows the tool call and offers approve, deny, cancel and, when the schema offers edits, edit;
a form asks for each field of its ``responseSchema`` with type coercion; a confirmation asks
yes or no; any other reason shows its message and takes a raw JSON answer. Every answer is
checked by the client machine before anything is sent, and asked again when it is refused.
With ``auto`` the demo answers by itself (email approved with edits, form filled and
confirmed, two of the three parallel approvals approved and one cancelled).

Every event is printed on one line, ``->`` for what the client sends and ``<-`` for what it
receives. A scenario ends as expected when its thread ends with success and each decision
had its effect: a tool call approved ran once (with the edited arguments, if any), a denied
one was reported as denied, a cancelled one did not run, and no resumed run proposed its tool
calls again.
"""

from __future__ import annotations

import itertools
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TextIO

import attrs

from agui_core.app.event_lines import as_json, cut, describe_event, describe_reply
from agui_core.app.examples_host import CONSOLE_PORT, DEFAULT_STORE, exit_status, serve_examples
from agui_core.app.prompter import Check, Read, TerminalPrompter, refusal_text, stdin_reader
from agui_core.errors import LocalProtocolError
from agui_core.machine.client import (
    ClientMachine,
    Reply,
    Route,
    approve,
    approve_with_edits,
    cancel,
    read_expires_at,
    resolve,
)
from agui_core.protocol import events as ev
from agui_core.protocol.types import JSON, Interrupt, RunAgentInput, RunFinishedInterruptOutcome
from agui_core.store.base import StoreError
from agui_core.store.sqlite import SqliteThreadStore

__all__ = [
    "DEFAULT_STORE",
    "FORM_ANSWER",
    "SCENARIOS",
    "Check",
    "Read",
    "Round",
    "Scenario",
    "TerminalPrompter",
    "auto_answer",
    "describe_event",
    "run_demo",
    "serve_examples",
    "stdin_reader",
]

_MAX_ROUNDS: Final = 8  # a scenario that keeps interrupting past this is broken, not long


# --- the scenarios -----------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Scenario:
    """One thread of the demo: which example agent it goes to and what the user asks."""

    name: str
    """The example agent's scenario name (``forwardedProps.scenario``)."""
    title: str
    request: str
    """The user message that starts the thread."""


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(name="email", title="an email behind an approval-gated sendEmail", request="Email Bob to say hi."),
    Scenario(
        name="filing",
        title="a quarterly-filing form with expiresAt, then a confirmation",
        request="File my quarterly numbers.",
    ),
    Scenario(name="parallel", title="three emails, three parallel approvals", request="Email each of the team."),
)


@attrs.define
class Round:
    """One run of a scenario: its input, its events, and the answers to its interrupts."""

    run_input: RunAgentInput
    events: list[ev.Event | ev.UnknownEvent] = attrs.field(factory=list)
    answers: dict[str, Reply] = attrs.field(factory=dict)

    @property
    def finished(self) -> ev.RunFinishedEvent | None:
        last = self.events[-1] if self.events else None
        return last if isinstance(last, ev.RunFinishedEvent) else None

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """The interrupts the run ended with (none if it ended otherwise)."""
        finished = self.finished
        outcome = finished.outcome if finished is not None else None
        return tuple(outcome.interrupts) if isinstance(outcome, RunFinishedInterruptOutcome) else ()


FORM_ANSWER: Final[Mapping[str, JSON]] = {"quarter": "Q1", "year": 2026, "revenue": 4200000}
"""The seed's answer to the quarterly-filing form, which ``auto`` sends."""


def auto_answer(scenario: str, route: Route, position: int) -> tuple[Reply, str]:
    """The answer ``auto`` gives to the ``position``-th interrupt of a round, and its description."""
    call = route.tool_call
    args = call.args if call is not None and isinstance(call.args, dict) else {}
    if route.kind == "approval":
        if scenario == "email" and route.editable and args:
            edited = {**args, "body": f"{args.get('body', '')} (revised before sending)".strip()}
            return approve_with_edits(edited), "approve with edits (the body revised; editedArgs replaces the args)"
        if scenario == "parallel" and position == 2:
            return cancel(), "cancel (this call must not run)"
        return approve(), "approve"
    if route.kind == "form":
        return resolve(dict(FORM_ANSWER)), "fill in the form: " + as_json(FORM_ANSWER)
    if route.kind == "confirmation":
        return resolve(True), "yes"
    return cancel(), "cancel (the demo does not know this reason)"


async def _stream(client: Any, run_input: RunAgentInput, show: Callable[[str], None]) -> list[Any]:
    events = []
    async for event in client.run(run_input):
        show("<- " + describe_event(event))
        events.append(event)
    return events


# --- the demo ----------------------------------------------------------------------------


class _Demo:
    """The client side of the demo: plays each scenario over its own connection."""

    def __init__(
        self,
        portal: Any,
        url: str,
        store: SqliteThreadStore,
        *,
        auto: bool,
        read: Read,
        out: TextIO,
        transport: str = "ws",
    ) -> None:
        self.portal = portal
        self.url = url
        self.transport = transport
        self.store = store
        self.auto = auto
        self.out = out
        self.prompter = TerminalPrompter(read, self.say)
        self.suffix = uuid.uuid4().hex  # 122 random bits: a thread id is taken by whoever uses it first

    def say(self, line: str = "") -> None:
        self.out.write(line + "\n")
        self.out.flush()

    def play(self, number: int, scenario: Scenario) -> list[str]:
        """Play ``scenario``; returns what went wrong (empty: it ended as expected)."""
        from agui_transports.client import connect_websocket

        if self.transport == "http":
            from agui_transports.http_client import connect_http as connect
        else:
            connect = connect_websocket
        thread_id = f"demo-{scenario.name}-{self.suffix}"
        self.say()
        self.say(f"== {number}/{len(SCENARIOS)} {scenario.name}: {scenario.title}  (thread {thread_id})")
        rounds: list[Round] = []
        with self.portal.wrap_async_context_manager(connect(self.url)) as client:
            run_input = client.new_input(thread_id, scenario.request, forwarded_props={"scenario": scenario.name})
            self.say(f'-> input runId={run_input.run_id}: the user says "{scenario.request}"')
            while True:
                current = Round(run_input=run_input)
                rounds.append(current)
                try:
                    current.events = self.portal.call(_stream, client, run_input, self.say)
                except Exception as exc:  # a broken stream or protocol violation: this scenario fails
                    return [f"the stream of run {run_input.run_id} broke: {type(exc).__name__}: {exc}"]
                machine: ClientMachine = client.machine(thread_id)
                if not machine.awaiting_input or isinstance(current.events[-1], ev.RunErrorEvent):
                    break
                if len(rounds) >= _MAX_ROUNDS:
                    return [f"the agent was still interrupting after {_MAX_ROUNDS} runs"]
                while True:
                    for position, interrupt in enumerate(machine.open_interrupts):
                        current.answers[interrupt.id] = self._answer(scenario, machine, interrupt, position, client)
                    try:
                        run_input = client.resume(thread_id, current.answers)
                        break
                    except LocalProtocolError as exc:
                        # Each answer was accepted when given; time may have passed since (an
                        # interrupt expired while the person answered the next one): ask again.
                        self.say(f"   not sent: {refusal_text(exc)[0]}; the interrupts are asked again")
                        if self.auto:
                            return [f"the resume was refused: {exc.message}"]
                self.say(f"-> resume runId={run_input.run_id} (a new run on the same thread) answering:")
                for entry in run_input.resume or ():
                    self.say(f"   {entry.interrupt_id}: {describe_reply(current.answers[entry.interrupt_id])}")
            self._audit(thread_id)
        return _expectations(scenario, rounds)

    def _answer(
        self, scenario: Scenario, machine: ClientMachine, interrupt: Interrupt, position: int, client: Any
    ) -> Reply:
        route = machine.route(interrupt)
        self._render(route)

        def check(reply: Reply) -> LocalProtocolError | None:
            # The whole resume is checked with the other interrupts cancelled (always allowed),
            # so a refusal is about this answer.
            answers = {i.id: cancel() for i in machine.open_interrupts}
            answers[interrupt.id] = reply
            try:
                machine.resume(answers, now=client.clock(), run_id="check")
            except LocalProtocolError as exc:
                return exc
            return None

        if not self.auto:
            return self.prompter.answer(route, check)
        reply, said = auto_answer(scenario.name, route, position)
        error = check(reply)
        if error is not None:
            self.say(f"     auto answer refused ({refusal_text(error)[0]}): cancelled instead")
            return cancel()
        self.say(f"     auto: {said}")
        return reply

    def _render(self, route: Route) -> None:
        interrupt = route.interrupt
        self.say(f"   ! interrupt {interrupt.id} reason={interrupt.reason} -> {route.kind}")
        if route.message:
            self.say(f"     {route.message}")
        if route.kind == "approval":
            call = route.tool_call
            if call is not None:
                self.say(f"     tool call {call.id}: {call.name} {call.arguments}")
            self.say(f"     edits {'offered (editedArgs)' if route.editable else 'not offered'}")
        if interrupt.expires_at is not None:
            left = read_expires_at(interrupt.expires_at) - datetime.now(UTC)
            minutes = max(0, round(left.total_seconds() / 60))
            self.say(f"     answer before {interrupt.expires_at} (in about {minutes} min)")
        if route.kind == "fallback":
            if route.metadata:
                self.say(f"     metadata: {cut(as_json(route.metadata), 200)}")
            if route.schema:
                self.say(f"     answer schema: {cut(as_json(route.schema), 200)}")

    def _audit(self, thread_id: str) -> None:
        try:
            trail = self.portal.call(self.store.audit, thread_id)
        except StoreError as exc:
            self.say(f"   the stored audit trail cannot be read: {exc}")
            return
        for line in trail:
            self.say(
                f"   stored: {line.interrupt.id} {line.status} (raised in {line.run_id}, "
                f"answered in {line.answered_in}, outcome {line.outcome})"
            )


def _tool_results(round_: Round, call_id: str) -> int:
    return sum(1 for e in round_.events if isinstance(e, ev.ToolCallResultEvent) and e.tool_call_id == call_id)


def _expectations(scenario: Scenario, rounds: Sequence[Round]) -> list[str]:
    """What in ``rounds`` contradicts the answers given (empty: the scenario ended as expected)."""
    problems: list[str] = []
    last = rounds[-1]
    if isinstance(last.events[-1], ev.RunErrorEvent):
        error = last.events[-1]
        problems.append(f"run {last.run_input.run_id} failed: {error.code}: {error.message}")
        return problems
    finished = last.finished
    outcome = finished.outcome if finished is not None else None
    if finished is None or (outcome is not None and outcome.type != "success"):
        problems.append(f"the thread did not end with success (outcome {getattr(outcome, 'type', None)})")
        return problems
    decisions: list[tuple[Interrupt, Reply]] = []
    for asked, resumed in itertools.pairwise(rounds):
        for interrupt in asked.interrupts:
            reply = asked.answers[interrupt.id]
            if interrupt.reason != "tool_call" or interrupt.tool_call_id is None:
                continue
            decisions.append((interrupt, reply))
            call_id = interrupt.tool_call_id
            if any(isinstance(e, ev.ToolCallStartEvent) and e.tool_call_id == call_id for e in resumed.events):
                problems.append(f"the resumed run proposed tool call {call_id} again")
            results = _tool_results(resumed, call_id)
            wanted = 0 if reply.status == "cancelled" else 1
            if results != wanted:
                problems.append(f"tool call {call_id} ({describe_reply(reply)}) got {results} results, not {wanted}")
    result = finished.result if finished is not None else None
    if scenario.name in ("email", "parallel"):
        problems += _check_emails(result, decisions)
    elif scenario.name == "filing":
        problems += _check_filing(result, rounds)
    return problems


def _check_emails(result: JSON, decisions: Sequence[tuple[Interrupt, Reply]]) -> list[str]:
    reports = result.get("emails") if isinstance(result, dict) else None
    if not isinstance(reports, list) or len(reports) != len(decisions):
        return [f"the result reports {reports!r}, not one email per decision ({len(decisions)})"]
    problems = []
    for (interrupt, reply), report in zip(decisions, reports, strict=True):
        payload = reply.payload if isinstance(reply.payload, dict) else {}
        if reply.status == "cancelled":
            wanted = "cancelled"
        else:
            wanted = "executed" if payload.get("approved") is True else "denied"
        status = report.get("status") if isinstance(report, dict) else None
        if status != wanted:
            problems.append(f"{interrupt.id}: the email was {status}, not {wanted}")
            continue
        edited = payload.get("editedArgs")
        if wanted == "executed" and isinstance(edited, dict) and isinstance(report, dict):
            sent = {key: report.get(key) for key in edited}
            if report.get("edited") is not True or sent != edited:
                problems.append(f"{interrupt.id}: sent {sent}, not the edited arguments {edited}")
    return problems


def _check_filing(result: JSON, rounds: Sequence[Round]) -> list[str]:
    form: Any = None
    confirmed = False
    for round_ in rounds:
        for interrupt in round_.interrupts:
            reply = round_.answers.get(interrupt.id)
            if reply is None:
                continue
            if interrupt.reason == "input_required" and reply.status == "resolved":
                form = reply.payload
            if interrupt.reason == "confirmation":
                confirmed = reply.status == "resolved" and reply.payload is True
    wanted: JSON = {"filed": True, "filing": form} if form is not None and confirmed else {"filed": False}
    return [] if result == wanted else [f"the filing ended with {result!r}, not {wanted!r}"]


def run_demo(
    *,
    auto: bool,
    store: str | Path = DEFAULT_STORE,
    port: int = 0,
    out: TextIO | None = None,
    read: Read | None = None,
    transport: str = "ws",
) -> int:
    """Play every scenario against a freshly started host; the exit status.

    0: every scenario ended as expected (or, interactively, the person left at end of input);
    1: some did not; 2: the host could not start (the port is taken, the store cannot be
    opened: a one-line message on standard error); 130: interrupted by Ctrl-C. Prompts read ``read`` (standard input by
    default, see :func:`stdin_reader`); everything is written to ``out`` (standard output).
    ``transport`` is ``ws`` (WebSocket) or ``http`` (HTTP + Server-Sent Events).
    """
    from anyio.from_thread import start_blocking_portal

    out = out if out is not None else sys.stdout
    read = read if read is not None else stdin_reader(out)
    outcomes: dict[str, list[str]] = {}
    try:
        # The host and the client's connections live on an event loop in another thread, so
        # a prompt can block this one while the host keeps answering pings.
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(serve_examples(store, port=port, transport=transport)) as (
                url,
                thread_store,
            ),
        ):
            shown = "HTTP + SSE" if transport == "http" else "WebSocket"
            print(f"agui demo: the example agents on {url} ({shown}), threads kept in {store} (SQLite)", file=out)
            if auto:
                print("answers chosen by the demo itself (--auto)", file=out)
            else:
                print("you answer each interrupt; end of input (Ctrl-D) leaves the demo", file=out)
            demo = _Demo(portal, url, thread_store, auto=auto, read=read, out=out, transport=transport)
            for number, scenario in enumerate(SCENARIOS, start=1):
                try:
                    outcomes[scenario.name] = problems = demo.play(number, scenario)
                except EOFError:
                    print(
                        f"\nagui demo: end of input; leaving (thread demo-{scenario.name}-{demo.suffix} keeps its "
                        f"open interrupts in {store})",
                        file=out,
                    )
                    return 0
                for problem in problems:
                    print(f"== {scenario.name}: FAILED: {problem}", file=out)
                if not problems:
                    print(f"== {scenario.name}: ended as expected", file=out)
    except (KeyboardInterrupt, OSError, StoreError, BaseExceptionGroup) as exc:
        return exit_status(exc, out, ctrl_c=("\nagui demo: interrupted", 130))
    failed = [name for name, problems in outcomes.items() if problems]
    print(file=out)
    if failed:
        print(f"agui demo: {len(failed)} of {len(SCENARIOS)} scenarios failed: {', '.join(failed)}", file=out)
        return 1
    print(f"agui demo: all {len(SCENARIOS)} scenarios ended as expected", file=out)
    print(
        f"agui demo: the approval console, where you answer interrupts in a browser: `bash scripts/demo --console` "
        f"serves it at http://127.0.0.1:{CONSOLE_PORT}/console/ with a thread of each scenario waiting",
        file=out,
    )
    return 0
