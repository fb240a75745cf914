"""A Hypothesis state machine that walks a ThreadMachine through random lives.

Client inputs (new runs; resumes, valid and broken in every way; replays of past resumes and
past interrupts answered differently), agent acts (text, tool calls and results, state deltas
and snapshots, subagents, interrupts with 1-3 interrupts and optional ``expiresAt``, finish,
fail, cancel, and the agent's own mistakes) and clock jumps. After every step:

- at most one run: a run is in progress exactly in ``RUNNING`` and ``RESUMED``;
- open interrupts exist exactly in ``INTERRUPTED``;
- a rejected input has one effect, its ``RUN_ERROR``, and leaves the record unchanged; an act
  the agent gets wrong raises ``LocalProtocolError`` and leaves the record unchanged;
- the thread's stream (the events of every accepted input and act, concatenated) passes the
  ordering rules, and every emitted event its wire schema;
- a machine restored from ``record()`` (through JSON) behaves the same: before each step a
  twin is restored from the record and given the same step; its effects and record must match;
- the thread's size, kept as messages join and change, is the size of its messages measured
  afresh.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import orjson
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from agui_core.errors import LocalProtocolError, RunErrorCode
from agui_core.machine.effects import Effect, Emit, Persist, Reject, StartAgent
from agui_core.machine.ordering import StreamVerifier
from agui_core.machine.record import record_from_dict, record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.machine.transcript import message_size
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.codec import event_to_dict
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput
from tests.machine.driver import NOW, Act, make_input, trace
from tests.seed import APPROVE_SCHEMA

THREAD = "t"
START = datetime(2026, 4, 20, 12, 0, 0, tzinfo=UTC)
KINDS = ("tool_call", "input_required", "confirmation", "acme:review")
ANY_PAYLOADS: list[Any] = [None, 0, "text", [1, None], {"nested": {"k": True}}]

Entry = dict[str, Any]
STREAM_ACTS = (
    "text", "open-text", "tool", "open-tool", "close", "result", "reopen-bound",
    "delta", "bad-delta", "state-snapshot", "messages-snapshot", "subagent",
)  # fmt: skip
BROKEN = (
    "partial",
    "empty",
    "unknown",
    "duplicate",
    "payload",
    "cancelled-with-payload",
    "thread",
    "answered-before",
)


class ThreadLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.machine = ThreadMachine(THREAD)
        self.now = START
        self.counter = 0
        self.stream: list[ev.Event] = []
        self.verifier = StreamVerifier()
        self.persisted = 0
        self.interrupt_ids: list[str] = []
        # Resumes carried out to the end of their run: entries as sent, the ids they bound,
        # the RUN_FINISHED they ended with (as JSON) and the tool results of their run.
        self.completed: list[tuple[list[Entry], set[str], dict[str, Any], list[dict[str, Any]]]] = []
        self._reset_run()

    def _reset_run(self) -> None:
        self.resume_entries: list[Entry] | None = None
        self.bound: dict[str, str] = {}  # tool call id -> the status of its answer
        self.bound_ids: set[str] = set()
        self.results: list[dict[str, Any]] = []
        self.open_text: list[str] = []
        self.open_tools: list[str] = []
        self.closed_tools: list[str] = []
        self.open_subagents: list[str] = []

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}-{self.counter}"

    # --- carrying out one step, on the machine and on a twin restored from its record ------

    def step(self, act: Act) -> list[Effect] | LocalProtocolError:
        data = orjson.loads(orjson.dumps(record_to_dict(self.machine.record())))
        twin = ThreadMachine.from_record(record_from_dict(data))
        before = self.machine.record()
        try:
            effects = act(self.machine)
        except LocalProtocolError as error:
            assert self.machine.record() == before
            try:
                act(twin)
            except LocalProtocolError as twin_error:
                assert twin_error.message == error.message
            else:
                raise AssertionError("the restored twin accepted what the machine refused") from None
            return error
        assert act(twin) == effects
        assert twin.record() == self.machine.record()
        for effect in effects:
            if isinstance(effect, Persist):
                self.persisted += 1
                assert effect.record.version == self.persisted
        return effects

    def client(self, run_input: RunAgentInput) -> list[Effect]:
        before = self.machine.record()
        result = self.step(lambda m: m.receive_input(run_input, now=self.now))
        assert not isinstance(result, LocalProtocolError), result
        if self.rejection(result) is not None:
            assert self.machine.record() == before
            # A rejection is sent on its own response stream, as a lone RUN_ERROR.
            StreamVerifier().check(result[0].event)  # type: ignore[union-attr]
        else:
            self.take(result)
        return result

    def agent(self, act: Act, *, refused: bool = False) -> list[Effect]:
        result = self.step(act)
        if refused:
            assert isinstance(result, LocalProtocolError), trace(result)  # type: ignore[arg-type]
            return []
        assert not isinstance(result, LocalProtocolError), result.message
        self.take(result)
        return result

    def take(self, effects: list[Effect]) -> None:
        for effect in effects:
            if isinstance(effect, Emit | Reject):
                event_to_dict(effect.event, validate=True)
                self.verifier.check(effect.event)
                self.stream.append(effect.event)

    @staticmethod
    def rejection(effects: list[Effect]) -> str | None:
        if len(effects) == 1 and isinstance(effects[0], Reject) and isinstance(effects[0].event, ev.RunErrorEvent):
            return effects[0].event.code
        return None

    # --- what the walk knows about the thread ---------------------------------------------

    @property
    def busy(self) -> bool:
        return self.machine.run_id is not None

    def expired(self, interrupt: Interrupt) -> bool:
        return interrupt.expires_at is not None and datetime.fromisoformat(interrupt.expires_at) <= self.now

    def live_only(self) -> bool:
        return self.machine.state is ThreadState.INTERRUPTED and not any(
            self.expired(i) for i in self.machine.open_interrupts
        )

    def answer(self, interrupt: Interrupt, data: st.DataObject, *, cancel: bool | None = None) -> Entry:
        if cancel is None:
            cancel = data.draw(st.booleans())
        if cancel:
            return {"interruptId": interrupt.id, "status": "cancelled"}
        payload: Any
        if interrupt.reason == "tool_call":
            payload = {"approved": data.draw(st.booleans())}
        elif interrupt.reason == "input_required":
            payload = data.draw(st.integers(-5, 5))
        elif interrupt.reason == "confirmation":
            payload = data.draw(st.booleans())
        else:
            payload = data.draw(st.sampled_from(ANY_PAYLOADS))
        entry: Entry = {"interruptId": interrupt.id, "status": "resolved"}
        if payload is not None:
            entry["payload"] = payload
        return entry

    def started(self, effects: list[Effect], entries: list[Entry] | None) -> None:
        assert trace(effects) == ["Persist", "RUN_STARTED", "StartAgent"]
        agent = effects[-1]
        assert isinstance(agent, StartAgent)
        self._reset_run()
        self.resume_entries = entries
        for answer in agent.answers:
            self.bound_ids.add(answer.interrupt.id)
            if answer.interrupt.tool_call_id is not None:
                self.bound[answer.interrupt.tool_call_id] = answer.entry.status

    def ended(self, effects: list[Effect], *, failed: bool = False) -> None:
        if self.resume_entries is not None and self.bound_ids and not failed:
            finished = effects[-1]
            assert isinstance(finished, Emit)
            self.completed.append((self.resume_entries, self.bound_ids, event_to_dict(finished.event), self.results))
        self._reset_run()

    # --- client inputs ----------------------------------------------------------------------

    @rule(with_state=st.booleans())
    def new_run(self, with_state: bool) -> None:
        live = [i for i in self.machine.open_interrupts if not self.expired(i)]
        expired = [i.id for i in self.machine.open_interrupts if self.expired(i)]
        effects = self.client(make_input(THREAD, self.fresh("run"), state={"n": self.counter} if with_state else None))
        if self.busy and self.rejection(effects):
            assert self.rejection(effects) == RunErrorCode.THREAD_BUSY
        elif live:
            assert self.rejection(effects) == RunErrorCode.PENDING_INTERRUPTS
        else:
            self.started(effects, None)
            assert self.machine.state is ThreadState.RUNNING
            assert self.machine.open_interrupts == ()
            assert {r.interrupt.id for r in self.machine.resolved if r.status == "expired"} >= set(expired)

    @precondition(lambda self: self.machine.state is ThreadState.INTERRUPTED)
    @rule(data=st.data())
    def valid_resume(self, data: st.DataObject) -> None:
        opened = list(self.machine.open_interrupts)
        entries = [self.answer(i, data) for i in opened]
        entries = data.draw(st.permutations(entries))
        by_id = {i.id: i for i in opened}
        late = [
            e["interruptId"] for e in entries if e["status"] == "resolved" and self.expired(by_id[e["interruptId"]])
        ]
        effects = self.client(make_input(THREAD, self.fresh("run"), resume=entries))
        if late:
            assert self.rejection(effects) == RunErrorCode.INTERRUPT_EXPIRED
            return
        self.started(effects, entries)
        agent = effects[-1]
        assert isinstance(agent, StartAgent)
        assert {a.interrupt.id for a in agent.answers} == {i.id for i in opened if not self.expired(i)}
        expected = ThreadState.RESUMED if agent.answers else ThreadState.RUNNING
        assert self.machine.state is expected

    @precondition(lambda self: self.live_only())
    @rule(data=st.data())
    def broken_resumes(self, data: st.DataObject) -> None:
        # Every way to get a resume wrong, one after the other: each is rejected with its own
        # code and changes nothing, so the next one meets the same thread.
        for variant in BROKEN:
            self.broken_resume(data, variant)

    def broken_resume(self, data: st.DataObject, variant: str) -> None:
        opened = list(self.machine.open_interrupts)
        entries = [self.answer(i, data, cancel=False) for i in opened]
        thread = THREAD
        code: RunErrorCode
        if variant == "partial":
            if len(entries) < 2:
                return
            entries.pop(data.draw(st.integers(0, len(entries) - 1)))
            code = RunErrorCode.PARTIAL_RESUME
        elif variant == "empty":
            entries, code = [], RunErrorCode.PENDING_INTERRUPTS
        elif variant == "unknown":
            entries.append({"interruptId": self.fresh("nope"), "status": "cancelled"})
            code = RunErrorCode.UNKNOWN_INTERRUPT_ID
        elif variant == "duplicate":
            entries.append(dict(data.draw(st.sampled_from(entries))))
            code = RunErrorCode.DUPLICATE_RESUME_ENTRY
        elif variant == "payload":
            checked = [n for n, i in enumerate(opened) if i.reason != "acme:review"]
            if not checked:
                return
            entries[data.draw(st.sampled_from(checked))]["payload"] = "not what the schema asks"
            code = RunErrorCode.INVALID_PAYLOAD
        elif variant == "thread":
            thread, code = "another-thread", RunErrorCode.THREAD_MISMATCH
        elif variant == "answered-before":
            answered = [r for r in self.machine.resolved if r.status != "expired"]
            if not answered:
                return
            old = data.draw(st.sampled_from(answered))
            entries.append(
                {
                    "interruptId": old.interrupt.id,
                    "status": "resolved",
                    "payload": ["never", "sent"],
                }
            )
            code = RunErrorCode.INTERRUPT_ALREADY_RESOLVED
        if variant == "cancelled-with-payload":
            # The codec refuses this on the wire; an in-process client can still build it.
            hand = tuple(
                ResumeEntry(interrupt_id=e["interruptId"], status="cancelled", payload={"x": 1}) if n == 0
                else ResumeEntry(interrupt_id=e["interruptId"], status=e["status"], payload=e.get("payload"))
                for n, e in enumerate(entries)
            )  # fmt: skip
            run_input = RunAgentInput(thread_id=THREAD, run_id=self.fresh("run"), resume=hand)
            code = RunErrorCode.INVALID_RESUME
        else:
            run_input = make_input(thread, self.fresh("run"), resume=entries)
        effects = self.client(run_input)
        assert self.rejection(effects) == code, (variant, trace(effects))

    @precondition(lambda self: bool(self.completed))
    @rule(data=st.data())
    def repeat_a_past_resume(self, data: st.DataObject) -> None:
        entries, bound_ids, finished, results = data.draw(st.sampled_from(self.completed))
        # The same resume again (in any order): a replay, unless a run is in progress.
        run_id = self.fresh("run")
        before = self.machine.record()
        effects = self.client(make_input(THREAD, run_id, resume=data.draw(st.permutations(entries))))
        if self.busy:
            assert self.rejection(effects) == RunErrorCode.THREAD_BUSY
        else:
            # Nothing runs again; the recorded tool results and outcome are sent again.
            assert all(isinstance(e, Emit) for e in effects), trace(effects)
            assert self.machine.record() == before
            out = [event_to_dict(e.event) for e in effects if isinstance(e, Emit)]
            assert out[0] == {"type": "RUN_STARTED", "threadId": THREAD, "runId": run_id, "protocolVersion": "1.0"}
            assert [e for e in out if e["type"] == "TOOL_CALL_RESULT"] == results
            assert out[-1] == {**finished, "runId": run_id}
        # One of its interrupts answered differently: refused.
        changed = [dict(e) for e in entries]
        target = data.draw(st.sampled_from([n for n, e in enumerate(changed) if e["interruptId"] in bound_ids]))
        changed[target] = {
            "interruptId": changed[target]["interruptId"],
            "status": "resolved",
            "payload": {"other": self.counter},
        }
        effects = self.client(make_input(THREAD, self.fresh("run"), resume=changed))
        expected = RunErrorCode.THREAD_BUSY if self.busy else RunErrorCode.INTERRUPT_ALREADY_RESOLVED
        assert self.rejection(effects) == expected

    @rule(seconds=st.sampled_from([0, 1, 59, 600, 3600, 86400]))
    def clock(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    # --- the agent ----------------------------------------------------------------------------

    @precondition(lambda self: self.busy)
    @rule(what=st.sampled_from(STREAM_ACTS), data=st.data())
    def stream(self, what: str, data: st.DataObject) -> None:
        """One thing the agent streams (or gets refused for)."""
        events: list[ev.Event] = []
        refused = False
        if what in ("text", "open-text"):
            message_id = self.fresh("msg")
            events += [
                ev.TextMessageStartEvent(message_id=message_id, role="assistant"),
                ev.TextMessageContentEvent(message_id=message_id, delta=f"hello {self.counter}"),
            ]
            if what == "text":
                events.append(ev.TextMessageEndEvent(message_id=message_id))
            else:
                self.open_text.append(message_id)
        elif what in ("tool", "open-tool"):
            call_id = self.fresh("tc")
            owner = self.open_subagents[-1] if self.open_subagents and data.draw(st.booleans()) else None
            events += [
                ev.ToolCallStartEvent(tool_call_id=call_id, tool_call_name="act", subagent_run_id=owner),
                ev.ToolCallArgsEvent(tool_call_id=call_id, delta='{"n":1}'),
            ]
            if what == "tool":
                events.append(ev.ToolCallEndEvent(tool_call_id=call_id))
                self.closed_tools.append(call_id)
            else:
                self.open_tools.append(call_id)
        elif what == "close":
            if self.open_text:
                events.append(ev.TextMessageEndEvent(message_id=self.open_text.pop(0)))
            if self.open_tools:
                call_id = self.open_tools.pop(0)
                events.append(ev.ToolCallEndEvent(tool_call_id=call_id))
                self.closed_tools.append(call_id)
        elif what == "result":
            if not (self.closed_tools or self.bound):
                return
            call_id = data.draw(st.sampled_from(self.closed_tools + sorted(self.bound)))
            result = ev.ToolCallResultEvent(
                message_id=self.fresh("res"), tool_call_id=call_id, content=f"done {self.counter}"
            )
            # A cancelled tool-bound interrupt: its tool call is not executed.
            refused = self.bound.get(call_id) == "cancelled"
            if not refused:
                self.results.append(event_to_dict(result))
            events.append(result)
        elif what == "reopen-bound":
            if not self.bound:
                return
            call_id = data.draw(st.sampled_from(sorted(self.bound)))
            events.append(ev.ToolCallStartEvent(tool_call_id=call_id, tool_call_name="again"))
            refused = True
        elif what in ("delta", "bad-delta"):
            state = self.machine.agent_state
            op: dict[str, Any]
            if what == "bad-delta":
                op, refused = {"op": "remove", "path": "/never-there"}, True
            elif isinstance(state, dict):
                op = {"op": "add", "path": f"/k{self.counter}", "value": [self.counter, None]}
            else:
                op = {"op": "replace", "path": "", "value": {"n": self.counter}}
            events.append(ev.StateDeltaEvent(delta=(op,)))
        elif what == "state-snapshot":
            events.append(ev.StateSnapshotEvent(snapshot={"snap": self.counter}))
        elif what == "messages-snapshot":
            events.append(ev.MessagesSnapshotEvent(messages=self.machine.messages))
        elif what == "subagent":
            sub = self.fresh("sub")
            self.open_subagents.append(sub)
            events.append(ev.SubagentStartedEvent(subagent_run_id=sub, name="helper"))
        if refused:
            (event,) = events
            self.agent(lambda m: m.emit(event), refused=True)
        elif events:
            self.agent(lambda m: [e for event in events for e in m.emit(event)])

    @precondition(lambda self: self.busy)
    @rule()
    def agent_mistakes(self) -> None:
        # Each mistake raises at once and changes nothing, so all of them fit in one step.
        mistakes: list[Act] = [
            lambda m: m.emit(ev.TextMessageContentEvent(message_id="never-opened", delta="?")),
            lambda m: m.emit(ev.TextMessageChunkEvent(message_id="c", delta="x")),
            lambda m: m.emit(ev.RunFinishedEvent(thread_id=THREAD, run_id="x")),
            lambda m: m.interrupt([Interrupt(id="int-core", reason="core:future")], now=NOW),
            lambda m: m.interrupt([Interrupt(id="int-unbound", reason="tool_call")], now=NOW),
            lambda m: m.interrupt(
                [Interrupt(id="int-naive", reason="confirmation", expires_at="2026-04-20T17:00:00")], now=NOW
            ),
        ]
        if self.interrupt_ids:
            reused = Interrupt(id=self.interrupt_ids[0], reason="confirmation")
            mistakes.append(lambda m: m.interrupt([reused], now=NOW))
        for act in mistakes:
            self.agent(act, refused=True)

    @precondition(lambda self: self.busy)
    @rule(data=st.data(), count=st.integers(1, 3))
    def interrupt(self, data: st.DataObject, count: int) -> None:
        calls = list(self.closed_tools)
        interrupts: list[Interrupt] = []
        for _ in range(count):
            kind = data.draw(st.sampled_from(KINDS if calls else KINDS[1:]))
            iid = self.fresh("int")
            fields: dict[str, Any] = {"id": iid, "reason": kind, "message": f"question {iid}"}
            if kind == "tool_call":
                fields["tool_call_id"] = calls.pop(data.draw(st.integers(0, len(calls) - 1)))
                fields["response_schema"] = APPROVE_SCHEMA
            elif kind == "input_required":
                fields["response_schema"] = {"type": "integer"}
            if data.draw(st.integers(0, 2)) == 0:
                at = self.now + timedelta(seconds=data.draw(st.sampled_from([1, 30, 600, 7200])))
                zone = data.draw(st.sampled_from([UTC, timezone(timedelta(hours=9))]))
                fields["expires_at"] = at.astimezone(zone).isoformat().replace("+00:00", "Z")
            if self.open_subagents and data.draw(st.booleans()):
                fields["subagent_run_id"] = data.draw(st.sampled_from(self.open_subagents))
            interrupts.append(Interrupt(**fields))
        blocked = bool(self.open_text or self.open_tools)
        effects = self.agent(lambda m: m.interrupt(interrupts, now=NOW), refused=blocked)
        if blocked:
            return
        self.interrupt_ids += [i.id for i in interrupts]
        kinds = trace(effects)
        assert kinds[-2:] == ["Persist", "RUN_FINISHED"]
        assert kinds[: len(self.open_subagents)] == ["SUBAGENT_FINISHED"] * len(self.open_subagents)
        assert set(kinds[len(self.open_subagents) : -2]) <= {"STATE_SNAPSHOT", "MESSAGES_SNAPSHOT"}
        assert self.machine.open_interrupts == tuple(interrupts)
        self.ended(effects)

    @precondition(lambda self: self.busy)
    @rule(result=st.sampled_from([None, {"ok": True}, [1, 2], "done"]))
    def finish(self, result: Any) -> None:
        blocked = bool(self.open_text or self.open_tools)
        effects = self.agent(lambda m: m.finish(result), refused=blocked)
        if not blocked:
            assert trace(effects)[-2:] == ["Persist", "RUN_FINISHED"]
            assert self.machine.state is ThreadState.IDLE
            self.ended(effects)

    @precondition(lambda self: self.busy)
    @rule()
    def fail(self) -> None:
        answered = {a.interrupt.id for a in self.machine.answers}
        effects = self.agent(lambda m: m.fail("the agent failed"))
        assert trace(effects) == ["Persist", "RUN_ERROR"]
        assert {i.id for i in self.machine.open_interrupts} == answered
        self.ended(effects, failed=True)

    @precondition(lambda self: self.busy)
    @rule()
    def cancel(self) -> None:
        effects = self.agent(lambda m: m.cancel())
        assert trace(effects)[-2:] == ["Persist", "RUN_FINISHED"]
        assert self.machine.state is ThreadState.IDLE
        self.ended(effects)

    # --- invariants -----------------------------------------------------------------------------

    @invariant()
    def at_most_one_run(self) -> None:
        in_run = self.machine.state in (ThreadState.RUNNING, ThreadState.RESUMED)
        assert (self.machine.run_id is not None) == in_run
        assert bool(self.machine.answers) == (self.machine.state is ThreadState.RESUMED)

    @invariant()
    def open_interrupts_only_when_interrupted(self) -> None:
        assert bool(self.machine.open_interrupts) == (self.machine.state is ThreadState.INTERRUPTED)

    @invariant()
    def versions_count_the_persists(self) -> None:
        assert self.machine.version == self.persisted == self.machine.record().version

    @invariant()
    def the_audit_trail_never_repeats_an_interrupt(self) -> None:
        closed = [r.interrupt.id for r in self.machine.resolved]
        assert len(closed) == len(set(closed))
        assert not set(closed) & {i.id for i in self.machine.open_interrupts}

    @invariant()
    def the_size_kept_is_the_size_measured_afresh(self) -> None:
        assert self.machine.message_bytes == sum(message_size(m) for m in self.machine.messages)

    def teardown(self) -> None:
        # The whole stream of the thread, once more, through a fresh verifier.
        verifier = StreamVerifier()
        for event in self.stream:
            verifier.check(event)


ThreadLife.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_thread_life = ThreadLife.TestCase
