"""Agreement of agui_core.machine.ordering with the reference client's verifier.

A seeded generator writes event streams the way a producer would (several runs, every kind of
entity, subagent tags drawn from a small pool so that owners collide), then spoils some of them
(an event dropped, repeated, moved, or re-attributed), so that both accepted and refused streams
occur. All streams go to Node in one batch; for every stream the verdict of
:class:`StreamVerifier` must equal the reference's, and a refusal must come at the same event.

Two pipelines, as ``@ag-ui/client``'s agents run them:

- streams without chunk events: ``enforceEvents`` then ``verifyEvents``
  (``tests.interop.nodebridge.node_verify``);
- streams with chunk events: ``enforceEvents``, ``transformChunks``, then ``verifyEvents``
  (the expansion the verifier emulates). ``node_verify`` does not expand chunks, so this test
  runs that pipeline itself.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from agui_core.errors import OrderingError
from agui_core.machine.ordering import StreamVerifier
from agui_core.protocol.codec import event_to_dict
from agui_core.protocol.events import (
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    CustomEvent,
    Event,
    MessagesSnapshotEvent,
    RawEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageChunkEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageChunkEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallChunkEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UnknownEvent,
)
from agui_core.protocol.types import (
    ActivityMessage,
    AssistantMessage,
    FunctionCall,
    Interrupt,
    Message,
    ReasoningMessage,
    RunAgentInput,
    RunFinishedCancelledOutcome,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    ToolCall,
    UserMessage,
)
from tests.interop.nodebridge import NODE_DIR, NodeBridgeError, NodeResult, node_verify
from tests.machine.stream_blocks import RE, act, interrupt_outcome, rf, rs, tc, te, ts

SEED = 20_240_611
STREAMS = 300
"""Streams per pipeline; each pipeline is one Node process."""

# Small pools, so that ids and owners collide often.
TAGS: tuple[str | None, ...] = (None, None, None, "s1", "s2", "")
MESSAGE_IDS = ("m1", "m2", "m3")
TOOL_CALL_IDS = ("t1", "t2", "t3")
REASONING_IDS = ("r1", "r2")
ACTIVITY_IDS = ("a1", "a2")
STEP_NAMES = ("plan", "tools")
SUBAGENT_IDS = ("s1", "s2", "s3")


class StreamWriter:
    """Writes one plausible stream: mostly valid, with the odd slip a real producer makes."""

    def __init__(self, rng: random.Random, chunks: bool) -> None:
        self.rng = rng
        self.chunks = chunks
        self.events: list[Event] = []

    def new_run(self) -> None:
        """Forget the last run: what is open, with the tag each opener used."""
        self.texts: dict[str, str | None] = {}
        self.tools: dict[str, str | None] = {}
        self.spans: dict[str, str | None] = {}
        self.reasonings: dict[str, str | None] = {}
        self.steps: set[tuple[str | None, str]] = set()
        self.subagents: list[str] = []
        self.finished_subagents: list[str] = []
        # The chunk lanes the writer believes open: tag -> kind of stream.
        self.lanes: dict[str | None, str] = {}
        # Ids chunks have opened (the run's end closes them, not an explicit end).
        self.chunked: dict[str, None] = {}
        # the tag each (kind, id) was first opened with in this run
        self.owners: dict[tuple[str, str], str | None] = {}

    def tag(self) -> str | None:
        return self.rng.choice(TAGS)

    def owner(self, kind: str, entity_id: str) -> str | None:
        """An opener's tag: usually the one this id had before in the run, if it had one."""
        key = (kind, entity_id)
        if key in self.owners and self.rng.random() < 0.9:
            return self.owners[key]
        tag = self.tag()
        self.owners.setdefault(key, tag)
        return tag

    def follow(self, opener: str | None) -> str | None:
        """A continuation's tag: usually absent or the opener's, now and then anything."""
        roll = self.rng.random()
        if roll < 0.45:
            return None
        if roll < 0.96:
            return opener
        return self.tag()

    def pick(self, pool: Sequence[str], open_: dict[str, Any] | None = None) -> str:
        """An id from ``pool``, preferring one not open now."""
        free = [i for i in pool if open_ is None or i not in open_]
        return self.rng.choice(free if free and self.rng.random() < 0.9 else list(pool))

    def messages(self) -> tuple[Message, ...]:
        rng = self.rng
        out: list[Message] = []
        for _ in range(rng.randint(0, 3)):
            role = rng.choice(("user", "assistant", "assistant", "reasoning", "activity"))
            mid = rng.choice(MESSAGE_IDS + REASONING_IDS + ACTIVITY_IDS)
            tag = self.tag()
            if role == "user":
                out.append(UserMessage(id=mid, content="hi", subagent_run_id=tag))
            elif role == "assistant":
                calls = tuple(
                    ToolCall(id=c, function=FunctionCall(name="search", arguments="{}"))
                    for c in rng.sample(TOOL_CALL_IDS, rng.randint(0, 2))
                )
                out.append(AssistantMessage(id=mid, content="ok", tool_calls=calls or None, subagent_run_id=tag))
            elif role == "reasoning":
                out.append(ReasoningMessage(id=mid, content="...", subagent_run_id=tag))
            else:
                out.append(ActivityMessage(id=mid, activity_type="plan", content={}, subagent_run_id=tag))
        return tuple(out)

    # one step of a run

    def act(self) -> None:
        rng = self.rng
        actions: list[Callable[[], None]] = [
            self.text,
            self.text,
            self.tool,
            self.tool,
            self.reasoning,
            self.step,
            self.subagent,
            self.misc,
        ]
        if self.chunks:
            actions += [self.chunk, self.chunk, self.chunk]
        action = rng.choice(actions)
        if action != self.chunk:
            # Most explicit events end the chunk stream of their lane.
            self.lanes.clear()
        action()

    def text(self) -> None:
        rng, emit = self.rng, self.events.append
        if self.texts and rng.random() < 0.6:
            mid = rng.choice(list(self.texts))
            tag = self.follow(self.texts[mid])
            if rng.random() < 0.5:
                emit(TextMessageContentEvent(message_id=mid, delta="x", subagent_run_id=tag))
            else:
                emit(TextMessageEndEvent(message_id=mid, subagent_run_id=tag))
                del self.texts[mid]
        else:
            mid = self.pick(MESSAGE_IDS, {**self.texts, **self.chunked})
            tag = self.owner("message", mid)
            emit(TextMessageStartEvent(message_id=mid, role="assistant", subagent_run_id=tag))
            self.texts[mid] = tag

    def tool(self) -> None:
        rng, emit = self.rng, self.events.append
        roll = rng.random()
        if roll < 0.15:
            emit(
                ToolCallResultEvent(
                    message_id=rng.choice(("tm1", "tm2", "tm3", "tm4", *MESSAGE_IDS)),
                    tool_call_id=rng.choice(TOOL_CALL_IDS),
                    content="42",
                    subagent_run_id=self.tag(),
                )
            )
        elif self.tools and roll < 0.7:
            tid = rng.choice(list(self.tools))
            tag = self.follow(self.tools[tid])
            if rng.random() < 0.5:
                emit(ToolCallArgsEvent(tool_call_id=tid, delta="{}", subagent_run_id=tag))
            else:
                emit(ToolCallEndEvent(tool_call_id=tid, subagent_run_id=tag))
                del self.tools[tid]
        else:
            tid = self.pick(TOOL_CALL_IDS, {**self.tools, **self.chunked})
            tag = self.owner("tool", tid)
            # Usually an open message of the same producer carries the call.
            own = [m for m, owner in self.texts.items() if owner == tag]
            roll = rng.random()
            parent = rng.choice(own) if own and roll < 0.5 else None if roll < 0.92 else rng.choice(MESSAGE_IDS)
            emit(
                ToolCallStartEvent(
                    tool_call_id=tid,
                    tool_call_name="search",
                    parent_message_id=parent,
                    subagent_run_id=tag,
                )
            )
            self.tools[tid] = tag

    def reasoning(self) -> None:
        rng, emit = self.rng, self.events.append
        roll = rng.random()
        if roll < 0.15:
            subtype = rng.choice(("tool-call", "message"))
            pool = TOOL_CALL_IDS if subtype == "tool-call" else MESSAGE_IDS + REASONING_IDS
            eid = rng.choice(pool)
            known = [t for (k, i), t in self.owners.items() if i == eid]
            emit(
                ReasoningEncryptedValueEvent(
                    subtype=subtype,
                    entity_id=eid,
                    encrypted_value="opaque",
                    subagent_run_id=self.follow(known[0] if known else self.tag()),
                )
            )
        elif roll < 0.45:
            if self.spans and rng.random() < 0.5:
                rid = rng.choice(list(self.spans))
                emit(ReasoningEndEvent(message_id=rid, subagent_run_id=self.follow(self.spans[rid])))
                del self.spans[rid]
            else:
                rid = self.pick(REASONING_IDS, self.spans)
                tag = self.owner("reasoning", rid)
                emit(ReasoningStartEvent(message_id=rid, subagent_run_id=tag))
                self.spans[rid] = tag
        elif self.reasonings and rng.random() < 0.6:
            rid = rng.choice(list(self.reasonings))
            tag = self.follow(self.reasonings[rid])
            if rng.random() < 0.5:
                emit(ReasoningMessageContentEvent(message_id=rid, delta="x", subagent_run_id=tag))
            else:
                emit(ReasoningMessageEndEvent(message_id=rid, subagent_run_id=tag))
                del self.reasonings[rid]
        else:
            # Often the id of the open span: the canonical shape.
            rid = rng.choice(list(self.spans)) if self.spans else self.pick(REASONING_IDS)
            tag = self.spans[rid] if rid in self.spans else self.owner("reasoning", rid)
            emit(ReasoningMessageStartEvent(message_id=rid, subagent_run_id=tag))
            self.reasonings[rid] = tag

    def step(self) -> None:
        rng, emit = self.rng, self.events.append
        if self.steps and rng.random() < 0.55:
            owner, name = rng.choice(sorted(self.steps, key=str))
            # Now and then the wrong owner closes it: a common producer slip.
            if rng.random() < 0.08:
                owner = self.tag()
            emit(StepFinishedEvent(step_name=name, subagent_run_id=owner))
            self.steps.discard((owner, name))
        else:
            key = (self.tag(), rng.choice(STEP_NAMES))
            emit(StepStartedEvent(step_name=key[1], subagent_run_id=key[0]))
            self.steps.add(key)

    def subagent(self) -> None:
        rng, emit = self.rng, self.events.append
        if self.subagents and rng.random() < 0.5:
            sid = rng.choice(self.subagents)
            if rng.random() < 0.2:
                emit(SubagentErrorEvent(subagent_run_id=sid, message="failed"))
            else:
                outcome = rng.choice(
                    (
                        None,
                        SubagentFinishedSuccessOutcome(),
                        SubagentFinishedSuspendedOutcome(interrupt_ids=("i1",)),
                        SubagentFinishedSuspendedOutcome(),
                    )
                )
                emit(SubagentFinishedEvent(subagent_run_id=sid, outcome=outcome))
            self.subagents.remove(sid)
            self.finished_subagents.append(sid)
        else:
            started = self.subagents + self.finished_subagents
            sid = self.pick([s for s in SUBAGENT_IDS if s not in started] or SUBAGENT_IDS)
            parent = rng.choice(started) if started and rng.random() < 0.4 else None
            if rng.random() < 0.03:
                parent = "nobody"
            emit(SubagentStartedEvent(subagent_run_id=sid, name="helper", parent_subagent_run_id=parent))
            if sid not in self.subagents:
                self.subagents.append(sid)

    def misc(self) -> None:
        rng, emit = self.rng, self.events.append
        kind = rng.randrange(7)
        aid = rng.choice(ACTIVITY_IDS)
        if kind == 0:
            emit(
                ActivitySnapshotEvent(
                    message_id=aid,
                    activity_type="plan",
                    content={"n": 1},
                    replace=rng.choice((None, True, False)),
                    subagent_run_id=self.tag(),
                )
            )
        elif kind == 1:
            emit(
                ActivityDeltaEvent(
                    message_id=aid,
                    activity_type="plan",
                    patch=({"op": "replace", "path": "/n", "value": 2},),
                    subagent_run_id=self.tag(),
                )
            )
        elif kind == 2:
            emit(MessagesSnapshotEvent(messages=self.messages()))
        elif kind == 3:
            emit(StateSnapshotEvent(snapshot={"n": 1}, subagent_run_id=self.tag()))
        elif kind == 4:
            emit(StateDeltaEvent(delta=({"op": "add", "path": "/m", "value": 1},)))
        elif kind == 5:
            emit(CustomEvent(name="note", value=None, subagent_run_id=self.tag()))
        else:
            emit(RawEvent(event={"provider": "x"}, subagent_run_id=self.tag()))

    def chunk(self) -> None:
        rng, emit = self.rng, self.events.append
        tag = self.tag() if rng.random() < 0.5 else None
        delta = rng.choice(("x", None, "y"))
        kind = rng.choice(("text", "tool", "reasoning"))
        # A chunk may leave its id out only to continue the stream its lane has open.
        go_on = self.lanes.get(tag) == kind and rng.random() < 0.7
        busy = {**self.texts, **self.tools, **self.reasonings, **self.chunked}
        pool = {"text": MESSAGE_IDS, "tool": TOOL_CALL_IDS, "reasoning": REASONING_IDS}[kind]
        entity = None if go_on else self.pick(pool, busy)
        if kind == "text":
            role = None if go_on or rng.random() < 0.8 else "user"
            emit(TextMessageChunkEvent(message_id=entity, role=role, delta=delta, subagent_run_id=tag))
        elif kind == "tool":
            name = None if go_on else "search"
            if rng.random() < 0.05:
                name = rng.choice((None, "other"))
            parent = None if go_on or rng.random() < 0.6 else rng.choice(MESSAGE_IDS)
            emit(
                ToolCallChunkEvent(
                    tool_call_id=entity,
                    tool_call_name=name,
                    parent_message_id=parent,
                    delta=delta,
                    subagent_run_id=tag,
                )
            )
        else:
            emit(ReasoningMessageChunkEvent(message_id=entity, delta=delta, subagent_run_id=tag))
        if entity is not None:
            self.lanes[tag] = kind
            self.chunked[entity] = None

    # whole runs and streams

    def close_all(self) -> None:
        closers: list[Event] = []
        closers += [TextMessageEndEvent(message_id=m) for m in self.texts]
        closers += [ToolCallEndEvent(tool_call_id=t) for t in self.tools]
        closers += [ReasoningMessageEndEvent(message_id=r) for r in self.reasonings]
        closers += [ReasoningEndEvent(message_id=r) for r in self.spans]
        closers += [StepFinishedEvent(step_name=n, subagent_run_id=o) for o, n in self.steps]
        closers += [SubagentFinishedEvent(subagent_run_id=s) for s in self.subagents]
        self.rng.shuffle(closers)
        self.events += closers

    def run(self, run_id: str) -> None:
        rng = self.rng
        self.new_run()
        history = self.messages() if rng.random() < 0.3 else ()
        run_input = RunAgentInput(thread_id="thread", run_id=run_id, messages=history, tools=(), context=())
        self.events.append(RunStartedEvent(thread_id="thread", run_id=run_id, input=run_input if history else None))
        for _ in range(rng.randint(0, 14)):
            self.act()
        if rng.random() < 0.92:
            self.close_all()
        if rng.random() < 0.15:
            self.events.append(RunErrorEvent(message="boom", code="AGENT_ERROR"))
            return
        outcome = rng.choice(
            (
                None,
                RunFinishedSuccessOutcome(),
                RunFinishedCancelledOutcome(),
                RunFinishedInterruptOutcome(interrupts=(Interrupt(id="i1", reason="tool_call", tool_call_id="t1"),)),
            )
        )
        self.events.append(RunFinishedEvent(thread_id="thread", run_id=run_id, outcome=outcome))
        if rng.random() < 0.05:
            self.events.append(RunErrorEvent(message="late"))

    def stream(self) -> list[Event]:
        if self.rng.random() < 0.04:
            self.events.append(RunErrorEvent(message="refused"))
        for n in range(self.rng.randint(1, 3)):
            self.run(f"run-{n}")
        return self.events


def spoil(rng: random.Random, events: list[Event]) -> list[Event]:
    """``events`` with one slip: an event dropped, repeated, moved or re-attributed."""
    events = list(events)
    at = rng.randrange(len(events))
    how = rng.randrange(5)
    if how == 0 and len(events) > 1:
        del events[at]
    elif how == 1:
        events.insert(at, events[at])
    elif how == 2 and at + 1 < len(events):
        events[at], events[at + 1] = events[at + 1], events[at]
    elif how == 3:
        events.insert(rng.randrange(len(events) + 1), events.pop(at))
    else:
        taggable = [
            i
            for i, e in enumerate(events)
            if "subagent_run_id" in attrs.fields_dict(type(e))
            and not isinstance(e, SubagentStartedEvent | SubagentFinishedEvent | SubagentErrorEvent)
        ]
        if taggable:
            i = rng.choice(taggable)
            events[i] = attrs.evolve(events[i], subagent_run_id=rng.choice(TAGS))  # type: ignore[misc]
    return events


def write_streams(seed: int, count: int, chunks: bool) -> list[list[Event]]:
    rng = random.Random(seed)
    streams = []
    for _ in range(count):
        events = StreamWriter(rng, chunks).stream()
        if rng.random() < 0.5:
            events = spoil(rng, events)
        streams.append(events)
    return streams


def our_verdict(events: Sequence[Event | UnknownEvent]) -> OrderingError | None:
    verifier = StreamVerifier()
    try:
        for event in events:
            verifier.check(event)
    except OrderingError as error:
        return error
    return None


def disagreement(
    events: Sequence[Event], ours: OrderingError | None, theirs: NodeResult, same_index: bool
) -> str | None:
    """Why the two verdicts differ, with the whole stream; ``None`` when they agree."""
    agree = (ours is None) == theirs.ok
    if agree and ours is not None and same_index:
        # The reference emits every event it accepted, so the refusal is the next one.
        agree = ours.index == len(theirs.value)
    if agree:
        return None
    lines = [json.dumps(event_to_dict(e)) for e in events]
    stream = "\n".join(f"  {i}: {line}" for i, line in enumerate(lines))
    return (
        f"ours: {'accepted' if ours is None else ours}\n"
        f"reference: {'accepted' if theirs.ok else theirs.error} "
        f"(after {len(theirs.value or ())} events)\nstream:\n{stream}"
    )


def check_agreement(streams: list[list[Event]], results: Sequence[NodeResult], same_index: bool) -> None:
    verdicts = [our_verdict(events) for events in streams]
    for events, ours, theirs in zip(streams, verdicts, results, strict=True):
        problem = disagreement(events, ours, theirs, same_index)
        assert problem is None, problem
    # The generator must reach both verdicts, and many rules, or agreement proves little.
    refused = [v for v in verdicts if v is not None]
    assert len(streams) * 0.25 < len(refused) < len(streams) * 0.75
    rules = {v.rule for v in refused}
    assert len(rules) >= 18, sorted(rules)


def test_agrees_with_verify_events_on_streams_without_chunks() -> None:
    streams = write_streams(SEED, STREAMS, chunks=False)
    results = node_verify([[event_to_dict(e, validate=True) for e in s] for s in streams])
    check_agreement(streams, results, same_index=True)


# The reference pipeline for chunked streams, as the client's agents run it.
_EXPAND_AND_VERIFY = """
const { enforceEvents, transformChunks, verifyEvents } = require("@ag-ui/client");
const { from } = require("rxjs");
process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "1";
const request = JSON.parse(require("fs").readFileSync(0, "utf8"));
const one = (events) => new Promise((resolve) => {
  const out = [];
  try {
    from(events).pipe(enforceEvents(), transformChunks(), verifyEvents()).subscribe({
      next: (e) => out.push(e),
      error: (err) => resolve({ ok: false, error: String(err && err.message), events: out }),
      complete: () => resolve({ ok: true, error: null, events: out }),
    });
  } catch (err) {
    resolve({ ok: false, error: String(err && err.message), events: out });
  }
});
(async () => {
  const results = [];
  for (const stream of request.streams) results.push(await one(stream));
  process.stdout.write(JSON.stringify({ results }));
})();
"""


def node_expand_and_verify(streams: list[list[dict[str, Any]]]) -> list[NodeResult]:
    node = shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        raise NodeBridgeError("node and `npm ci --prefix tests/interop/node` are needed")
    done = subprocess.run(
        [node, "-e", _EXPAND_AND_VERIFY],
        input=json.dumps({"streams": streams}).encode(),
        capture_output=True,
        cwd=NODE_DIR,
        timeout=120,
        check=True,
    )
    return [NodeResult(ok=r["ok"], error=r["error"], value=r["events"]) for r in json.loads(done.stdout)["results"]]


def test_agrees_with_the_client_pipeline_on_streams_with_chunks() -> None:
    streams = write_streams(SEED + 1, STREAMS, chunks=True)
    assert sum(1 for s in streams if any(e.type.endswith("_CHUNK") for e in s)) > STREAMS // 2
    results = node_expand_and_verify([[event_to_dict(e, validate=True) for e in s] for s in streams])
    check_agreement(streams, results, same_index=False)


# --- facts the unit tests state about the reference, checked against it ---------------------


def _facts() -> list[tuple[str, list[Event | UnknownEvent], bool]]:
    interrupted = interrupt_outcome()
    unknown = UnknownEvent(type="FUTURE_EVENT", data={"type": "FUTURE_EVENT", "x": 1})
    return [
        ("run error right after run finished", [rs(), rf(), RE, rs("r2"), rf("r2")], True),
        ("a lone run error opens a stream", [RE, rs(), rf()], True),
        ("two run errors", [rs(), RE, RE], False),
        (
            "a resumed run answers the earlier run's tool call with a result alone",
            [
                rs(),
                ToolCallStartEvent(tool_call_id="t1", tool_call_name="search"),
                ToolCallArgsEvent(tool_call_id="t1", delta="{}"),
                ToolCallEndEvent(tool_call_id="t1"),
                rf(outcome=interrupted),
                rs("r2"),
                ToolCallResultEvent(message_id="tm1", tool_call_id="t1", content="done"),
                rf("r2"),
            ],
            True,
        ),
        (
            "an interrupt while its tool call is open",
            [
                rs(),
                ToolCallStartEvent(tool_call_id="t1", tool_call_name="x"),
                rf(outcome=interrupted),
            ],
            False,
        ),
        (
            "an untagged reopen keeps the first owner",
            [rs(), ts("m1", "s1"), te("m1"), ts("m1"), tc("m1", "s1"), te("m1"), rf()],
            True,
        ),
        (
            "a tagged reopen by another owner",
            [rs(), ts("m1", "s1"), te("m1"), ts("m1", "s2")],
            False,
        ),
        (
            "the empty-string subagent is not the parent",
            [
                rs(),
                StepStartedEvent(step_name="p"),
                StepFinishedEvent(step_name="p", subagent_run_id=""),
            ],
            False,
        ),
        (
            "a non-replacing snapshot does not re-own an activity",
            [
                rs(),
                act(sub="s1"),
                act(sub="s2", replace=False),
                ActivityDeltaEvent(message_id="a1", activity_type="plan", patch=(), subagent_run_id="s2"),
            ],
            False,
        ),
        (
            "an encrypted message value is checked against a reasoning message",
            [
                rs(),
                ReasoningMessageStartEvent(message_id="r1", subagent_run_id="s1"),
                ReasoningEncryptedValueEvent(
                    subtype="message", entity_id="r1", encrypted_value="e", subagent_run_id="s2"
                ),
            ],
            False,
        ),
        (
            "a suspended subagent continues in the next run",
            [
                rs(),
                SubagentStartedEvent(subagent_run_id="s1", name="h"),
                SubagentFinishedEvent(
                    subagent_run_id="s1",
                    outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=("i1",)),
                ),
                rf(outcome=interrupted),
                rs("r2"),
                SubagentStartedEvent(subagent_run_id="s1", name="h"),
                SubagentFinishedEvent(subagent_run_id="s1"),
                rf("r2"),
            ],
            True,
        ),
        (
            "a subagent id started twice in one run",
            [
                rs(),
                SubagentStartedEvent(subagent_run_id="s1", name="h"),
                SubagentFinishedEvent(subagent_run_id="s1"),
                SubagentStartedEvent(subagent_run_id="s1", name="h"),
            ],
            False,
        ),
        ("a tag naming a subagent never started", [rs(), ts("m1", "ghost"), te("m1"), rf()], True),
        ("unknown events anywhere", [unknown, rs(), unknown, rf(), unknown], True),
        (
            "the run end closes a chunk stream",
            [rs(), TextMessageChunkEvent(message_id="m1", delta="x"), rf()],
            True,
        ),
        (
            "an explicit end after chunks",
            [rs(), TextMessageChunkEvent(message_id="m1", delta="x"), te("m1")],
            False,
        ),
        (
            "an id-less chunk with two subagent streams open",
            [
                rs(),
                TextMessageChunkEvent(message_id="m1", delta="x", subagent_run_id="s1"),
                TextMessageChunkEvent(message_id="m2", delta="x", subagent_run_id="s2"),
                TextMessageChunkEvent(delta="y"),
            ],
            False,
        ),
    ]


def test_the_facts_the_unit_tests_state_hold_for_the_reference() -> None:
    facts = _facts()
    results = node_expand_and_verify([[event_to_dict(e) for e in events] for _, events, _ in facts])
    for (name, events, expected), theirs in zip(facts, results, strict=True):
        ours = our_verdict(events)
        assert theirs.ok is expected, f"{name}: reference says {theirs.error}"
        assert (ours is None) is expected, f"{name}: we say {ours}"
