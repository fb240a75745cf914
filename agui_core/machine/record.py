"""The record of a thread: everything a store saves and a ThreadMachine is restored from.

A record is immutable. ``record_to_dict`` and ``record_from_dict`` turn it into plain JSON and
back, bit for bit, so any store that can keep a JSON document can keep a thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs
import orjson

from agui_core.machine.interrupts import BoundAnswer, make_bound_answer
from agui_core.machine.journal import Step, StepJournal
from agui_core.machine.transitions import ThreadState
from agui_core.protocol.codec import converter, event_from_dict, event_to_dict, structure_message, unstructure_message
from agui_core.protocol.events import Event, ToolCallResultEvent
from agui_core.protocol.frozen import maker
from agui_core.protocol.types import JSON, Interrupt, Message, ResumeEntry, RunFinishedOutcome

__all__ = [
    "ANONYMOUS",
    "ActiveRun",
    "CompletedResume",
    "ExpiryDefault",
    "OpenInterrupt",
    "Proposal",
    "ResolvedInterrupt",
    "ThreadRecord",
    "ToolJournalEntry",
    "Vote",
    "payload_digest",
    "record_from_dict",
    "record_to_dict",
    "resolved_from_dicts",
    "votes_to_json",
]


ANONYMOUS = "anonymous"
"""The principal of every client of a host without an authenticator, and the owner of threads
saved before threads had owners."""


@attrs.frozen(kw_only=True)
class Proposal:
    """A tool call exactly as the agent proposed it: bound to its approval when the run interrupts.

    After approval the host runs this (or the approval's ``editedArgs``, where the interrupt
    offered edits); nothing a client sends in ``messages`` changes it (SPEC section 9).
    """

    tool_call_id: str
    name: str
    arguments: str
    """The arguments as the agent streamed them (JSON text)."""
    parameters: Mapping[str, JSON] | None = None
    """The JSON Schema edited arguments must pass (the tool's parameters), if edits are offered."""

    @property
    def args(self) -> dict[str, Any]:
        """The arguments as keywords; arguments that are not a JSON object read as ``{}``."""
        try:
            value = orjson.loads(self.arguments or "{}")
        except orjson.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@attrs.frozen(kw_only=True)
class ExpiryDefault:
    """The answer a host gives an interrupt itself once its ``expiresAt`` passes unanswered.

    The agent declares it when it raises the interrupt (a cancel, or a resolved payload its
    schema accepts, such as a denial); active expiry then resumes the agent with it, as a run
    of the host's own. The audit trail records the interrupt as ``expired``, with this payload.
    """

    status: Literal["resolved", "cancelled"]
    payload: JSON = None


@attrs.frozen(kw_only=True)
class Vote:
    """One decider's answer to an interrupt that needs several (a quorum, see
    :mod:`agui_core.machine.quorum`): who, with which roles and key, what, when, in which run."""

    principal: str
    roles: tuple[str, ...] = ()
    key: str | None = None
    """The id of the key whose signature on the answer verified, if it was signed."""
    status: Literal["resolved", "cancelled"]
    payload: JSON = None
    metadata: Mapping[str, JSON] | None = None
    run_id: str
    """The run whose input carried the vote."""
    at: str
    """When the vote was received (RFC 3339)."""


@attrs.frozen(kw_only=True)
class OpenInterrupt:
    """An interrupt waiting for its answer, the run that raised it and when (if known).

    ``proposal`` is the tool call a ``tool_call`` interrupt gates, as proposed.
    ``continuation`` is the agent's own data kept with the interrupt: never sent to a
    client, handed back to the agent with the answer.
    """

    interrupt: Interrupt
    run_id: str
    raised_at: str | None = None
    proposal: Proposal | None = None
    continuation: JSON = None
    on_expiry: ExpiryDefault | None = None
    """The answer the agent declared for when nobody answers in time (``None``: none)."""
    votes: tuple[Vote, ...] = ()
    """The answers given so far to an interrupt that needs several deciders, in order."""


@attrs.frozen(kw_only=True)
class ResolvedInterrupt:
    """One line of the audit trail: an interrupt and how it was closed.

    ``run_id`` is the run that raised it and ``raised_at`` when (RFC 3339, if the host said).
    ``status`` is the answer's status, or ``expired`` when nobody answered in time.
    ``answered_in`` is the run that carried the answer and ``answered_at`` the instant it was
    received (for an expired interrupt: its ``expiresAt``). ``outcome`` is the type of the
    outcome of the run that carried the answer, once that run has ended. For a tool call:
    ``proposal`` is what the agent proposed, ``payload`` the decision (with ``editedArgs``
    if any), and ``ran`` the tool and arguments the host really ran (``None``: not run).
    """

    interrupt: Interrupt
    run_id: str
    raised_at: str | None = None
    status: Literal["resolved", "cancelled", "expired"]
    payload: JSON = None
    metadata: Mapping[str, JSON] | None = None
    answered_in: str | None = None
    answered_at: str | None = None
    outcome: str | None = None
    proposal: Proposal | None = None
    ran: Proposal | None = None
    decided_by: str | None = None
    """The principal whose resume carried the answer (``None``: nobody's, an expiry)."""
    decided_roles: tuple[str, ...] = ()
    """The roles that principal's credentials carried then, sorted."""
    decided_key: str | None = None
    """The id of the key whose signature on the decision verified, if it was signed."""
    votes: tuple[Vote, ...] = ()
    """Every answer of a quorum, in order (the last decided it); empty for a lone decision."""


@attrs.frozen(kw_only=True)
class ToolJournalEntry:
    """A tool the host ran (or a ``ctx.once`` function): started, and its result once it has one.

    Written before the tool runs and again before its result is sent, so after a crash a
    tool is never run twice: a recorded result is sent again, a missing one is unknown.
    """

    tool_call_id: str
    """The tool call's id (a ``ctx.once`` step's id for a function run by ``ctx.once``)."""
    run_id: str
    started_at: str | None = None
    result: ToolCallResultEvent | None = None
    ran: Proposal | None = None
    """The tool and the arguments it was started with."""
    value: JSON = None
    """What the tool (or function) returned, as JSON, when the agent's code needs it back."""
    execution: str | None = None
    """The agent's execution whose run started it (see :mod:`agui_core.machine.journal`)."""
    answered: str | None = None
    """The interrupt whose answer the tool ran on (a tool behind an approval), or ``""``: it ran
    on no interrupt's answer (``None``: an entry saved before this was kept). An agent may
    propose another call under the same id later (some model providers number their calls
    afresh every round); a run whose answers bind that id to another interrupt is that call's."""


_DIGEST_PREFIX = "sha256:"


def payload_digest(canonical: str) -> str:
    """A resume payload's identity: the SHA-256 of its canonical JSON text, however long that is."""
    return _DIGEST_PREFIX + hashlib.sha256(canonical.encode()).hexdigest()


@attrs.frozen(kw_only=True)
class CompletedResume:
    """A run that was carried out, kept so the same input again is a replay.

    ``answers`` is the resume's identity: ``(interrupt id, status, payload digest)`` sorted by
    id (:func:`payload_digest` of the payload's canonical JSON); it is empty for a run that
    answered nothing, which is replayed only for an input with the same ``run_id`` (a client
    retrying a run whose end it never saw). A replay re-sends ``tool_results``, the thread's
    current snapshots (for an interrupt outcome) and a ``RUN_FINISHED`` with ``outcome`` and
    ``result``. Nothing here grows with the conversation: a thread keeps a bounded number of
    these (see :class:`~agui_core.machine.thread.ThreadMachine`).
    """

    run_id: str
    answers: tuple[tuple[str, str, str], ...]
    outcome: RunFinishedOutcome
    result: JSON = None
    tool_results: tuple[Event, ...] = ()


@attrs.frozen(kw_only=True)
class ActiveRun:
    """The run in progress: what it started from and what it has emitted so far."""

    run_id: str
    parent_run_id: str | None = None
    answers: tuple[BoundAnswer, ...] = ()
    """The resume being carried out: each entry with its interrupt and the run that raised it."""
    received_at: str = ""
    raised_at: tuple[tuple[str, str], ...] = ()
    """When each answered interrupt was raised, by interrupt id (where known)."""
    messages_before: tuple[Message, ...] = ()
    state_before: JSON = None
    input_messages: tuple[Message, ...] | None = None
    """The conversation the input carried, which the run started from (None: the thread's)."""
    input_state: JSON = None
    """The state the input carried (None: the thread's)."""
    events: tuple[Event, ...] = ()
    proposals: tuple[Proposal, ...] = ()
    """The proposals bound to the answered ``tool_call`` interrupts."""
    continuation: JSON = None
    """The continuation kept with the answered interrupts."""
    lease_until: str | None = None
    """Until when (RFC 3339) the host carrying the run holds the thread, unless it renews.

    Set when the run starts and extended by the store's ``renew_lease``; a run whose lease has
    run out lost its host. ``None``: a run saved before runs held leases."""
    decided_by: str | None = None
    """The principal whose input started the run (who decided its answers)."""
    decided_roles: tuple[str, ...] = ()
    expiry_defaults: tuple[tuple[str, ExpiryDefault], ...] = ()
    """The answers the agent declared for the expiry of the interrupts this run answers, by
    interrupt id: what they get back if the run fails and they are open again."""
    decided_keys: tuple[tuple[str, str], ...] = ()
    """By interrupt id, the key whose signature on this run's decision verified."""
    votes: tuple[tuple[str, tuple[Vote, ...]], ...] = ()
    """The quorum behind each answer that had one, by interrupt id (the last vote decided it)."""


@attrs.frozen(kw_only=True)
class ThreadRecord:
    """One thread, whole: its state, conversation, open and closed interrupts and live run."""

    thread_id: str
    version: int = 0
    state: ThreadState = ThreadState.IDLE
    messages: tuple[Message, ...] = ()
    message_bytes: int | None = None
    """The size of ``messages`` in bytes as the thread machine counts it (each message's compact
    wire JSON; see :class:`~agui_core.machine.thread.ThreadLimits`); ``None``: not counted yet
    (a record from before threads were measured, or one not made by a machine)."""
    agent_state: JSON = None
    open_interrupts: tuple[OpenInterrupt, ...] = ()
    resolved: tuple[ResolvedInterrupt, ...] = ()
    completed_resumes: tuple[CompletedResume, ...] = ()
    tool_journal: tuple[ToolJournalEntry, ...] = ()
    active_run: ActiveRun | None = None
    owner: str | None = None
    """The principal the thread belongs to (``None``: nobody yet, a thread never saved)."""
    step_journal: StepJournal | None = None
    """The steps of the execution waiting on the open interrupts, for the run that answers them
    to replay (see :mod:`agui_core.machine.journal`); ``None``: no straight-line agent waits."""
    acted_on: tuple[tuple[str, str, str], ...] = ()
    """The answers a resumed run acted on (it started a tool, or kept a ``ctx.once`` value) and
    then failed, as ``(interrupt id, status, payload digest)``: a retry must carry the same."""
    acted_in: str | None = None
    """The execution (see :mod:`agui_core.machine.journal`) of the attempt that acted on
    :attr:`acted_on`: a retry carrying those answers continues it, under any ``runId``."""
    acted: tuple[ResumeEntry, ...] = ()
    """The entries of :attr:`acted_on` as the attempt received them, for a retry of them: a
    client's past a deadline, or the host's at expiry (a record saved before they were kept
    has none, and its retries go as they did then)."""
    acted_retried: bool = False
    """Whether the host retried :attr:`acted` at expiry, which it does once."""
    saved_at: str | None = None
    """When the record was saved (RFC 3339, on the saving host's clock): the thread's last
    activity, by which a host's retention judges it. ``None``: its saver did not say (a
    :class:`~agui_core.machine.thread.ThreadMachine` never does; the host stamps what it saves)."""


# The records' makers (see agui_core.protocol.frozen): a machine builds a thread record and
# the parts of it that changed at each boundary of a run, and a store the whole of one for each
# thread it loads, where building them through their classes cost several times as much.
make_proposal = maker(Proposal)
make_open_interrupt = maker(OpenInterrupt)
make_resolved_interrupt = maker(ResolvedInterrupt)
make_tool_journal_entry = maker(ToolJournalEntry)
make_completed_resume = maker(CompletedResume)
make_active_run = maker(ActiveRun)
make_thread_record = maker(ThreadRecord)


# The codec's hooks, looked up once: ``converter.structure(value, tp)`` finds the hook by
# dispatch on every call, which cost a loaded record with a long conversation a quarter of
# its load (three Python calls a message around the one that builds it).
_structure_interrupt = converter.get_structure_hook(Interrupt)
_unstructure_interrupt = converter.get_unstructure_hook(Interrupt)
_structure_entry = converter.get_structure_hook(ResumeEntry)
_unstructure_entry = converter.get_unstructure_hook(ResumeEntry)
_structure_outcome = converter.get_structure_hook(RunFinishedOutcome)
_unstructure_outcome = converter.get_unstructure_hook(RunFinishedOutcome)


def _messages_to_list(messages: Sequence[Message]) -> list[Any]:
    unstructure = unstructure_message
    return [unstructure(m) for m in messages]


def _messages_from_list(items: Sequence[Any]) -> tuple[Message, ...]:
    structure = structure_message
    return tuple([structure(m, Message) for m in items])


def _expiry_default(data: Mapping[str, Any] | None) -> ExpiryDefault | None:
    if data is None:
        return None
    return ExpiryDefault(status=data["status"], payload=data.get("payload"))


def _proposal_to_dict(proposal: Proposal | None) -> dict[str, Any] | None:
    if proposal is None:
        return None
    return {
        "toolCallId": proposal.tool_call_id,
        "name": proposal.name,
        "arguments": proposal.arguments,
        "parameters": proposal.parameters,
    }


def _proposal_from_dict(data: Mapping[str, Any] | None) -> Proposal | None:
    if data is None:
        return None
    return make_proposal(
        tool_call_id=data["toolCallId"],
        name=data["name"],
        arguments=data["arguments"],
        parameters=data.get("parameters"),
    )


def record_to_dict(record: ThreadRecord, *, messages: bool = True) -> dict[str, Any]:
    """The record as plain JSON (wire objects in their camelCase wire form).

    ``messages=False`` leaves the thread's messages out, for a store that keeps them on
    their own (:func:`record_from_dict` then takes them as an argument).
    """
    run = record.active_run
    out = {
        "threadId": record.thread_id,
        "owner": record.owner,
        "version": record.version,
        "state": record.state.value,
        "messages": _messages_to_list(record.messages) if messages else None,
        "messageBytes": record.message_bytes,
        "agentState": record.agent_state,
        "open": [
            {
                "interrupt": _unstructure_interrupt(o.interrupt),
                "runId": o.run_id,
                "raisedAt": o.raised_at,
                "proposal": _proposal_to_dict(o.proposal),
                "continuation": o.continuation,
                **(
                    {"onExpiry": {"status": o.on_expiry.status, "payload": o.on_expiry.payload}}
                    if o.on_expiry is not None
                    else {}
                ),
                **({"votes": votes_to_json(o.votes)} if o.votes else {}),
            }
            for o in record.open_interrupts
        ],
        "resolved": [
            {
                "interrupt": _unstructure_interrupt(r.interrupt),
                "runId": r.run_id,
                "raisedAt": r.raised_at,
                "status": r.status,
                "payload": r.payload,
                "metadata": r.metadata,
                "answeredIn": r.answered_in,
                "answeredAt": r.answered_at,
                "outcome": r.outcome,
                "proposal": _proposal_to_dict(r.proposal),
                "ran": _proposal_to_dict(r.ran),
                **({"decidedBy": r.decided_by, "decidedRoles": list(r.decided_roles)} if r.decided_by else {}),
                **({"decidedKey": r.decided_key} if r.decided_key else {}),
                **({"votes": votes_to_json(r.votes)} if r.votes else {}),
            }
            for r in record.resolved
        ],
        "completedResumes": [
            {
                "runId": c.run_id,
                "answers": [list(a) for a in c.answers],
                "outcome": _unstructure_outcome(c.outcome),
                "result": c.result,
                "toolResults": [event_to_dict(e) for e in c.tool_results],
            }
            for c in record.completed_resumes
        ],
        "toolJournal": [
            {
                "toolCallId": j.tool_call_id,
                "runId": j.run_id,
                "startedAt": j.started_at,
                "result": None if j.result is None else event_to_dict(j.result),
                "ran": _proposal_to_dict(j.ran),
                **({} if j.value is None else {"value": j.value}),
                **({} if j.execution is None else {"execution": j.execution}),
                **({} if j.answered is None else {"answered": j.answered}),
            }
            for j in record.tool_journal
        ],
        **({} if record.step_journal is None else {"stepJournal": _journal_to_dict(record.step_journal)}),
        **({} if not record.acted_on else {"actedOn": [list(a) for a in record.acted_on]}),
        **({} if record.acted_in is None else {"actedIn": record.acted_in}),
        **({} if not record.acted else {"acted": [_unstructure_entry(e) for e in record.acted]}),
        **({} if not record.acted_retried else {"actedRetried": True}),
        "activeRun": None
        if run is None
        else {
            "runId": run.run_id,
            "parentRunId": run.parent_run_id,
            "answers": [
                {
                    "interrupt": _unstructure_interrupt(a.interrupt),
                    "entry": _unstructure_entry(a.entry),
                    "raisedIn": a.raised_in,
                }
                for a in run.answers
            ],
            "receivedAt": run.received_at,
            "raisedAt": [list(pair) for pair in run.raised_at],
            **_before(record, run),
            "inputMessages": None if run.input_messages is None else _messages_to_list(run.input_messages),
            "inputState": run.input_state,
            "events": [event_to_dict(e) for e in run.events],
            "proposals": [_proposal_to_dict(p) for p in run.proposals],
            "continuation": run.continuation,
            "leaseUntil": run.lease_until,
            **({"decidedBy": run.decided_by, "decidedRoles": list(run.decided_roles)} if run.decided_by else {}),
            **(
                {
                    "expiryDefaults": [
                        [iid, {"status": d.status, "payload": d.payload}] for iid, d in run.expiry_defaults
                    ]
                }
                if run.expiry_defaults
                else {}
            ),
            **({"decidedKeys": [list(pair) for pair in run.decided_keys]} if run.decided_keys else {}),
            **({"votes": [[iid, votes_to_json(v)] for iid, v in run.votes]} if run.votes else {}),
        },
        **({} if record.saved_at is None else {"savedAt": record.saved_at}),
    }
    if not messages:
        del out["messages"]
    return out


def _before(record: ThreadRecord, run: ActiveRun) -> dict[str, Any]:
    """Where the run started from, unless it is the record's own messages and state.

    It always is for a record a ThreadMachine made (a thread in the middle of a run is
    saved as it stood before the run), and the conversation is not written twice.
    """
    out: dict[str, Any] = {}
    if not (run.messages_before is record.messages or run.messages_before == record.messages):
        out["messagesBefore"] = _messages_to_list(run.messages_before)
    if not (run.state_before is record.agent_state or run.state_before == record.agent_state):
        out["stateBefore"] = run.state_before
    return out


def votes_to_json(votes: Sequence[Vote]) -> list[dict[str, Any]]:
    """Votes as a record writes them: ``principal``, ``roles``, ``key``?, ``status``,
    ``payload``, ``metadata``?, ``runId``, ``at``."""
    return [
        {
            "principal": v.principal,
            "roles": list(v.roles),
            **({"key": v.key} if v.key else {}),
            "status": v.status,
            "payload": v.payload,
            **({"metadata": v.metadata} if v.metadata is not None else {}),
            "runId": v.run_id,
            "at": v.at,
        }
        for v in votes
    ]


def _votes_from_list(items: Sequence[Mapping[str, Any]] | None) -> tuple[Vote, ...]:
    if not items:
        return ()
    votes = []
    for v in items:
        if v["status"] not in ("resolved", "cancelled"):
            raise ValueError(f"a vote is resolved or cancelled, not {v['status']!r}")
        votes.append(
            Vote(
                principal=v["principal"],
                roles=tuple(v.get("roles") or ()),
                key=v.get("key"),
                status=v["status"],
                payload=v.get("payload"),
                metadata=v.get("metadata"),
                run_id=v["runId"],
                at=v["at"],
            )
        )
    return tuple(votes)


def _journal_to_dict(journal: StepJournal) -> dict[str, Any]:
    return {
        "execution": journal.execution,
        "steps": [
            {
                "kind": s.kind,
                "key": s.key,
                "id": s.id,
                **({} if s.interrupt_id is None else {"interruptId": s.interrupt_id}),
                **({} if s.result is None else {"result": s.result}),
            }
            for s in journal.steps
        ],
    }


def _journal_from_dict(data: Mapping[str, Any] | None) -> StepJournal | None:
    if data is None:
        return None
    return StepJournal(
        execution=data["execution"],
        steps=tuple(
            Step(kind=s["kind"], key=s["key"], id=s["id"], interrupt_id=s.get("interruptId"), result=s.get("result"))
            for s in data["steps"]
        ),
    )


def _answer_identity(answer: list[str]) -> tuple[str, str, str]:
    interrupt_id, status, payload = answer
    if not payload.startswith(_DIGEST_PREFIX):  # saved before payloads were kept as digests
        payload = payload_digest(payload)
    return interrupt_id, status, payload


def _events(items: list[Any]) -> tuple[Event, ...]:
    return tuple(event_from_dict(item) for item in items)  # type: ignore[misc]


def record_from_dict(data: Mapping[str, Any], *, messages: tuple[Message, ...] | None = None) -> ThreadRecord:
    """The record ``record_to_dict`` wrote; raises ``KeyError``/``ValueError`` on anything else.

    ``messages``, when given, are the thread's messages, kept apart from ``data``.
    """
    run = data["activeRun"]
    version = data["version"]
    message_bytes = data.get("messageBytes")
    if message_bytes is not None and (type(message_bytes) is not int or message_bytes < 0):
        raise ValueError(f"messageBytes is a size in bytes, not {message_bytes!r}")
    if messages is None:
        messages = _messages_from_list(data["messages"])
    return make_thread_record(
        thread_id=data["threadId"],
        # Records saved before threads had owners belong to the anonymous principal.
        owner=data.get("owner", ANONYMOUS if version else None),
        version=version,
        state=ThreadState(data["state"]),
        messages=messages,
        message_bytes=message_bytes,
        agent_state=data["agentState"],
        open_interrupts=tuple(
            make_open_interrupt(
                interrupt=_structure_interrupt(o["interrupt"], Interrupt),
                run_id=o["runId"],
                raised_at=o["raisedAt"],
                proposal=_proposal_from_dict(o.get("proposal")),
                continuation=o.get("continuation"),
                on_expiry=_expiry_default(o.get("onExpiry")),
                votes=_votes_from_list(o.get("votes")),
            )
            for o in data["open"]
        ),
        resolved=tuple(
            make_resolved_interrupt(
                interrupt=_structure_interrupt(r["interrupt"], Interrupt),
                run_id=r["runId"],
                raised_at=r["raisedAt"],
                status=r["status"],
                payload=r["payload"],
                metadata=r["metadata"],
                answered_in=r["answeredIn"],
                answered_at=r["answeredAt"],
                outcome=r["outcome"],
                proposal=_proposal_from_dict(r.get("proposal")),
                ran=_proposal_from_dict(r.get("ran")),
                decided_by=r.get("decidedBy"),
                decided_roles=tuple(r.get("decidedRoles") or ()),
                decided_key=r.get("decidedKey"),
                votes=_votes_from_list(r.get("votes")),
            )
            for r in data["resolved"]
        ),
        completed_resumes=tuple(
            make_completed_resume(
                run_id=c["runId"],
                answers=tuple(_answer_identity(a) for a in c["answers"]),
                outcome=_structure_outcome(c["outcome"], RunFinishedOutcome),
                result=c["result"],
                tool_results=_events(c["toolResults"]),
            )
            for c in data["completedResumes"]
        ),
        tool_journal=tuple(
            make_tool_journal_entry(
                tool_call_id=j["toolCallId"],
                run_id=j["runId"],
                started_at=j["startedAt"],
                result=None if j["result"] is None else event_from_dict(j["result"]),  # type: ignore[arg-type]
                ran=_proposal_from_dict(j.get("ran")),
                value=j.get("value"),
                execution=j.get("execution"),
                answered=j.get("answered"),
            )
            for j in data["toolJournal"]
        ),
        step_journal=_journal_from_dict(data.get("stepJournal")),
        acted_on=tuple(_answer_identity(a) for a in data.get("actedOn", ())),
        acted_in=data.get("actedIn"),
        acted=tuple(_structure_entry(e, ResumeEntry) for e in data.get("acted", ())),
        acted_retried=bool(data.get("actedRetried", False)),
        active_run=None
        if run is None
        else make_active_run(
            run_id=run["runId"],
            parent_run_id=run["parentRunId"],
            answers=tuple(
                make_bound_answer(
                    interrupt=_structure_interrupt(a["interrupt"], Interrupt),
                    entry=_structure_entry(a["entry"], ResumeEntry),
                    raised_in=a["raisedIn"],
                )
                for a in run["answers"]
            ),
            received_at=run["receivedAt"],
            raised_at=tuple((pair[0], pair[1]) for pair in run["raisedAt"]),
            messages_before=messages if "messagesBefore" not in run else _messages_from_list(run["messagesBefore"]),
            state_before=run["stateBefore"] if "stateBefore" in run else data["agentState"],
            input_messages=None if run["inputMessages"] is None else _messages_from_list(run["inputMessages"]),
            input_state=run["inputState"],
            events=_events(run["events"]),
            proposals=tuple(
                p for p in (_proposal_from_dict(item) for item in run.get("proposals", ())) if p is not None
            ),
            continuation=run.get("continuation"),
            lease_until=run.get("leaseUntil"),
            decided_by=run.get("decidedBy"),
            decided_roles=tuple(run.get("decidedRoles") or ()),
            expiry_defaults=tuple(
                (iid, default)
                for iid, data in run.get("expiryDefaults") or ()
                if (default := _expiry_default(data)) is not None
            ),
            decided_keys=tuple((iid, kid) for iid, kid in run.get("decidedKeys") or ()),
            votes=tuple((iid, _votes_from_list(v)) for iid, v in run.get("votes") or ()),
        ),
        saved_at=data.get("savedAt"),
    )


def resolved_from_dicts(entries: Sequence[Mapping[str, Any]]) -> tuple[ResolvedInterrupt, ...]:
    """Audit entries as :func:`record_to_dict` writes them under ``resolved`` (a store's audit rows).

    :func:`record_from_dict` stays the one reader of an entry's JSON: the entries are read
    inside an empty record's, so a field added to an entry is read here too.
    """
    shell = record_to_dict(ThreadRecord(thread_id=""))
    shell["resolved"] = list(entries)
    return record_from_dict(shell).resolved
