"""The host: runs agents on thread machines and carries out what the machines decide.

``async with Host(agent, store=...) as host:`` then ``async for event in host.run(run_input)``.
For each input the host loads the thread from its store, hands the input to the thread's
:class:`~agui_core.machine.thread.ThreadMachine` and carries out the effects in order: a
``Persist`` is saved (a compare-and-set on the record's version) before anything after it is
emitted, an ``Emit`` goes to the caller, a ``StartAgent`` runs the agent.

The host owns the clock (one injectable :class:`~agui_core.runtime.clock.Clock` for every
instant it records and every wait it times on a run's behalf: expiry, leases, the run's
deadline) and makes sure one run at a time goes on per thread:
in this process by a set of busy threads, across processes and machines by the store's
compare-and-set, which makes exactly one of two hosts win a thread. A run outlives its
caller: if the caller stops listening, the run goes on and its outcome is saved.

Slow callers. Handing an event to a caller waits while the caller's stream is full (``buffer``
events), so a slow reader slows its run down instead of memory growing; but it waits
``send_timeout`` seconds at most (10 by default). A caller that takes no event for that long
is dropped as if it had left: its stream ends where it stands (without the run's last event),
and the run goes on and is saved. So a reader that stopped reading holds its thread
``send_timeout`` seconds longer at most, never forever, even in a step that must not be cut
short (the end of a run).

Crash safety. A run holds its thread by a lease in the store (``lease`` seconds, renewed every
``lease_renew`` seconds while the run goes on: :class:`~agui_core.runtime.lease.LeaseKeeper`).
A run left in progress by a host that died is closed by the next host that loads its thread
after the lease ran out; while the lease lasts, the thread is ``THREAD_BUSY``. The closed run
fails, and the thread goes back to where it stood, so the interrupts it answered are open
again. ``run_timeout`` bounds every run: its host stops it then, and stops renewing its lease
(a run saved without a lease, by an older host, is closed ``run_timeout`` after it was
received). Approved tools run at most once: the
host records a tool as started before it runs it, and its result before sending it; on a
retry a recorded result is sent again, and a tool that started but left no result is
reported as ``unknown`` rather than run a second time.

Trust (SPEC section 9). Every input comes with the principal its transport authenticated
(:meth:`Host.authenticate`, through the host's authenticator); the thread machine refuses an
input on another principal's thread with ``FORBIDDEN``. An approved tool call runs exactly as
the record bound it when the run interrupted (or with the approval's ``editedArgs``, where the
interrupt offered edits and they passed the tool's parameter schema); nothing in a later
input's ``messages`` decides which tool runs or with what.

Thread limits. A client's inputs may bring a thread to ``max_thread_messages`` messages
(10,000 by default) and ``max_thread_bytes`` bytes of messages (32 MiB by default; each
message counted as its compact JSON); an input whose new messages would take the thread past
either gets ``RUN_ERROR`` ``THREAD_TOO_LARGE`` and changes nothing. An input that adds no
messages is still taken (the resume answering a full thread's interrupts); the agent's own
messages are never refused. The rule is the thread machine's
(:class:`~agui_core.machine.thread.ThreadLimits`); ``None`` lifts a limit. This is what bounds
the memory and the time one thread costs its host on every input, whatever the store.

Reading a thread (:meth:`Host.view`, :meth:`Host.audit`) is for its owner: another principal's
thread is answered exactly as a thread never saved (``None``), and costs the same to answer
(the store is asked for the owner first, which reads no conversation), so a stranger learns
nothing of which thread ids exist. A stranger's input on a thread is still refused with
``FORBIDDEN`` (SPEC section 9): a thread id is taken once a thread is saved, so clients
should mint unguessable ones (our clients mint 122 random bits).

Retention. Every record the host saves carries the instant it was saved (``saved_at``, on the
host's clock). With ``retain`` (seconds), a sweep in the host's task group purges the threads
at rest (no open interrupt, no run in progress) that nobody has saved for that long, through
the store's :meth:`~agui_core.store.base.ThreadStore.purge`: at start, then every
``sweep_every`` seconds on the host's clock. Their audit trails go with them, unless
``retain_audit`` (seconds, not less than ``retain``) keeps them apart longer. Hosts sharing a
store may all sweep: the store lets one purge at a time.

Active expiry. With ``expire_every`` (seconds), a task in the host's task group looks for
interrupts whose ``expiresAt`` has passed on the host's clock, at start and then every
``expire_every`` seconds (:meth:`Host.expire`), and closes them through the thread's machine
(:meth:`~agui_core.machine.thread.ThreadMachine.expire`): each one ``expired`` in the audit
trail, the thread free once none is left open; a late resume is still refused with
``INTERRUPT_EXPIRED``. Without it, an expired interrupt is closed at the thread's next input.
Hosts sharing a store may all look: the save is a compare-and-set, so one closes a thread.
The agent learns of an expiry at its next run, except where the machine starts one: with the
answers the agent declared for nobody answering, or, after a resume that acted on a person's
answers failed, with those answers (a retry of that resume, once).

Failures. Whatever ends a run early (the agent raising, breaking a protocol rule, running out
of time, the store failing, the host shutting down) ends it with ``RUN_ERROR`` and puts the
thread back where the stored record says it stood before the run; the agent's traceback and
the store's own message go to the log, never to the client. A failure fails its run only:
the host's other runs go on.
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Literal

import anyio
import anyio.abc
import attrs
import orjson
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from agui_core.errors import AguiError, LocalProtocolError, PayloadError, RemoteProtocolError, RunErrorCode
from agui_core.machine.effects import (
    Answer,
    Effect,
    Emit,
    LeaveUnrun,
    Persist,
    Reject,
    ReportDenied,
    RunTool,
    SendRecorded,
    StartAgent,
)
from agui_core.machine.expiry import read_expires_at
from agui_core.machine.facts import InterruptHome
from agui_core.machine.history import fitted_id, tool_result_id
from agui_core.machine.ownership import may_read
from agui_core.machine.policy import DecisionPolicy
from agui_core.machine.record import ANONYMOUS, OpenInterrupt, Proposal, ResolvedInterrupt, ThreadRecord
from agui_core.machine.thread import (
    DEFAULT_MAX_THREAD_BYTES,
    DEFAULT_MAX_THREAD_MESSAGES,
    MAX_INTERRUPTS,
    ThreadLimits,
    ThreadMachine,
)
from agui_core.machine.transitions import ThreadState
from agui_core.protocol import events as ev
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import JSON, Interrupt, RunAgentInput
from agui_core.runtime.auth import AuthenticationError, Authenticator, Credentials, roles_of
from agui_core.runtime.clock import Clock, SystemClock, as_clock, timer_of
from agui_core.runtime.context import RunContext, run_agent
from agui_core.runtime.lease import LeaseKeeper
from agui_core.runtime.observe import NO_OBSERVER, Observer
from agui_core.runtime.policies import PolicyFile
from agui_core.runtime.signatures import ApproverKeys
from agui_core.runtime.streams import Outlet, Pace, RunEvents, Streamed
from agui_core.runtime.tools import NO_EDITS, NOT_RUN_AGAIN, Tool, ToolOutcome, failed_result
from agui_core.runtime.views import ThreadView
from agui_core.runtime.watch import ThreadChanges
from agui_core.runtime.webhooks import Webhooks
from agui_core.store.base import (
    DeliveryLedger,
    Purged,
    StoreError,
    ThreadStore,
    VersionConflict,
    WaitingThread,
    newest_first,
)
from agui_core.store.memory import MemoryThreadStore

# RunEvents and ThreadView live in agui_core.runtime.streams and .views; named here too, as what
# Host.run and Host.view return, for those who import them from the host.
__all__ = ["EXPIRY_BATCH", "PURGE_BATCH", "Agent", "Host", "InputTranslator", "RunEvents", "ThreadView", "refusal"]

log = logging.getLogger("agui_core.host")

EXPIRY_BATCH = 10_000
"""How many waiting threads one look for expired interrupts reads at most (the newest)."""

PURGE_BATCH = 500
"""How many threads one purge of a sweep removes at most: a sweep purges batch after batch
until one comes back short, so no one transaction holds the store for long."""

Agent = Callable[[RunContext], Awaitable[JSON]]
"""An agent: an async function of its run context; its return value is the run's result."""


def refusal(error: AguiError) -> ev.RunErrorEvent:
    """The ``RUN_ERROR`` that refuses an input for ``error``, with the error's own code.

    Every transport refuses through this, so a refusal's code is the same on every transport.
    """
    return ev.RunErrorEvent(message=error.message, code=error.code.value)


InputTranslator = Callable[[RunAgentInput, Sequence[Interrupt], Sequence[Interrupt]], RunAgentInput]
"""See :attr:`Host.translate_input`."""


class Host:
    """Runs ``agent`` for every input, one run at a time per thread, over ``store``."""

    def __init__(
        self,
        agent: Agent,
        *,
        store: ThreadStore | None = None,
        tools: Sequence[Tool] = (),
        clock: Clock | Callable[[], datetime] | None = None,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex[:12],
        run_timeout: float = 300.0,
        lease: float = 10.0,
        lease_renew: float = 2.0,
        buffer: int = 256,
        send_timeout: float = 10.0,
        payload_validators: PayloadValidators | None = None,
        authenticator: Authenticator | None = None,
        translate_input: InputTranslator | None = None,
        max_thread_messages: int | None = DEFAULT_MAX_THREAD_MESSAGES,
        max_thread_bytes: int | None = DEFAULT_MAX_THREAD_BYTES,
        retain: float | None = None,
        retain_audit: float | None = None,
        sweep_every: float | None = None,
        observer: Observer | None = None,
        expire_every: float | None = None,
        webhooks: Webhooks | None = None,
        policy: DecisionPolicy | PolicyFile | None = None,
        approver_keys: ApproverKeys | None = None,
    ) -> None:
        """``retain``, ``retain_audit`` and ``sweep_every`` (seconds) are the retention of the
        module docstring; ``retain=None`` keeps every thread. ``sweep_every`` defaults to a tenth
        of ``retain``, at least 1 s and at most an hour. ``observer`` is told what the host does
        (metrics, traces: :mod:`agui_core.runtime.observe`); by default nobody is.
        ``expire_every`` (seconds) turns on active expiry (see the module docstring).
        ``webhooks`` tells receivers when interrupts wait and are settled
        (:mod:`agui_core.runtime.webhooks`); its store is this host's, which must keep a ledger
        of deliveries (every store of this package does). ``policy`` says who besides a
        thread's owner may decide its interrupts, by role (:mod:`agui_core.machine.policy`; a
        :class:`~agui_core.runtime.policies.PolicyFile` is read again when it changes); without
        one, the owner alone. ``approver_keys`` are the public keys decisions are signed with,
        where the policy wants them signed (:mod:`agui_core.runtime.signatures`)."""
        self.agent = agent
        self.store: ThreadStore = store if store is not None else MemoryThreadStore()
        self.tools: Mapping[str, Tool] = {_tool_named(t, i): t for i, t in enumerate(tools)}
        self._clock: Clock = as_clock(clock) if clock is not None else SystemClock()
        self.clock: Callable[[], datetime] = self._clock.now
        """The current instant on the host's clock."""
        self.new_id = new_id
        self.run_timeout = run_timeout
        if not run_timeout > 0:
            raise ValueError(f"run_timeout must be more than 0 s, not {run_timeout:g}")
        if not 0 < lease_renew < lease < math.inf:
            raise ValueError(f"a lease of {lease:g} s renewed every {lease_renew:g} s: need 0 < lease_renew < lease")
        self.lease = lease
        """How long a run holds its thread past each renewal, in seconds."""
        self.lease_renew = lease_renew
        """How often the lease of a run in progress is renewed, in seconds."""
        self._buffer = buffer
        self.send_timeout = send_timeout
        """Seconds a caller may take no event before it is dropped (see the module docstring)."""
        self._validators = payload_validators if payload_validators is not None else PayloadValidators()
        try:
            self.thread_limits = ThreadLimits(max_messages=max_thread_messages, max_bytes=max_thread_bytes)
            """What a client's inputs may make one thread hold (see the module docstring)."""
        except ValueError:
            raise ValueError(
                "max_thread_messages and max_thread_bytes are numbers, 1 or more, or None for no limit; "
                f"not {max_thread_messages!r} and {max_thread_bytes!r}"
            ) from None
        self.authenticator = authenticator
        self.translate_input = translate_input
        """Rewrites an input before the machine reads it, given the thread's open interrupts and
        those the thread's last resume answered (for example a legacy resume channel into
        ``resume[]``, a replay included); it raises
        :class:`~agui_core.errors.RemoteProtocolError` to refuse the input."""
        if retain is not None and not 0 < retain < math.inf:
            raise ValueError(f"retain is a positive number of seconds, not {retain:g}")
        if retain_audit is not None and (retain is None or not retain <= retain_audit < math.inf):
            raise ValueError("retain_audit keeps audit trails longer than their threads: it needs retain, and no less")
        if sweep_every is not None and not 0 < sweep_every < math.inf:
            raise ValueError(f"sweep_every is a positive number of seconds, not {sweep_every:g}")
        self.retain = retain
        """Seconds a thread at rest is kept after its last save (``None``: for ever)."""
        self.retain_audit = retain_audit
        """Seconds a purged thread's audit trail is kept after the thread's last save (``None``: not kept apart)."""
        self.sweep_every = sweep_every if sweep_every is not None else min(max(1.0, (retain or 0) / 10), 3600.0)
        """Seconds between two sweeps, on the host's clock."""
        if expire_every is not None and not 0 < expire_every < math.inf:
            raise ValueError(f"expire_every is a positive number of seconds, not {expire_every:g}")
        self.expire_every = expire_every
        """Seconds between two looks for expired interrupts, on the host's clock (``None``: never)."""
        self._busy: set[str] = set()
        self._group: anyio.abc.TaskGroup | None = None
        self._sweeping: anyio.CancelScope | None = None
        self._expiring: anyio.CancelScope | None = None
        self.changes = ThreadChanges()
        """Every thread record this host saves, for whoever watches (the approval console's feed)."""
        self.observer: Observer = observer if observer is not None else NO_OBSERVER
        """Who is told what the host does (:mod:`agui_core.runtime.observe`)."""
        self.observer.bind(self.store, self.clock)
        # For an active observer, per thread being carried: the open interrupt ids and the number
        # of closed ones as last loaded or saved (what the next save is compared with), and the
        # token of the run in progress. Emptied when the thread's run ends.
        self._seen: dict[str, tuple[frozenset[str], int]] = {}
        self._run_tokens: dict[str, object] = {}
        if webhooks is not None and not isinstance(self.store, DeliveryLedger):
            raise ValueError(
                f"webhooks need a store that keeps a ledger of deliveries; a {type(self.store).__name__} does not"
            )
        self.webhooks = webhooks
        """Who is told of interrupts raised, expiring, decided and expired (``None``: nobody)."""
        self._notifying: anyio.CancelScope | None = None
        self._policy = policy
        self.approver_keys = approver_keys

    @property
    def policy(self) -> DecisionPolicy | None:
        """The decision policy in force (``None``: a thread's owner alone decides)."""
        policy = self._policy
        return policy.current() if isinstance(policy, PolicyFile) else policy

    async def authenticate(self, credentials: Credentials) -> str:
        """The principal ``credentials`` stand for (:data:`ANONYMOUS` without an authenticator).

        Raises :class:`~agui_core.runtime.auth.AuthenticationError` for credentials the
        authenticator refuses; its message is safe to show the client.
        """
        if self.authenticator is None:
            return ANONYMOUS
        principal = await self.authenticator.authenticate(credentials)
        if not isinstance(principal, str) or not principal or principal == ANONYMOUS:
            # "anonymous" owns the threads of hosts without an authenticator: nobody signs in as it.
            raise AuthenticationError("the authenticator named no usable principal")
        return principal

    async def view(self, thread_id: str, principal: str = ANONYMOUS) -> ThreadView | None:
        """The open interrupts of ``thread_id`` and the snapshots to answer them, for its owner.

        ``None`` for a thread never saved and for another principal's alike (see the module
        docstring): a caller cannot tell the two apart, by the answer or by its cost.
        """
        record = await self._owned(thread_id, principal) or await self._decidable(thread_id, principal)
        if record is None:
            return None
        run = record.active_run
        opened: tuple[OpenInterrupt, ...] = record.open_interrupts
        policy = self.policy
        shown: tuple[Interrupt, ...] = tuple(o.interrupt for o in opened)
        others: tuple[Interrupt, ...] = ()
        if policy is not None:
            # Under a policy: what the viewer is to answer, and apart, what others are to
            # answer (a quorum's votes still awaited, another's rule); what is decided waits.
            mine = policy.awaiting(opened, principal=principal, roles=roles_of(principal), owner=record.owner)
            shown = tuple(policy.announced(o) for o in mine)
            others = tuple(policy.announced(o) for o in policy.undecided(opened) if o not in mine)
        return ThreadView(
            thread_id=thread_id,
            state=record.state.name.lower(),
            interrupts=shown,
            waiting_on_others=others,
            messages=record.messages,
            agent_state=record.agent_state,
            run_id=run.run_id if run is not None else (opened[0].run_id if opened else None),
        )

    def deciding_roles(self, principal: str) -> frozenset[str]:
        """The roles of ``principal`` the decision policy names: what it may be asked to decide
        on others' threads (none without a policy)."""
        policy = self.policy
        return frozenset() if policy is None else policy.roles.intersection(roles_of(principal))

    async def inbox(self, principal: str, *, limit: int = 100) -> Sequence[WaitingThread]:
        """``principal``'s threads with open interrupts, newest first (the store's :meth:`waiting`),
        and, under a decision policy, the others' threads with an interrupt ``principal`` may
        decide (each with only those interrupts, and its owner)."""
        own = await self.store.waiting(str(principal), limit=limit)
        policy = self.policy
        if policy is None:
            return own
        # Each interrupt as it is shown while open: with its quorum's tally, where it has one.
        own = [attrs.evolve(w, interrupts=_announced(policy, w.interrupts)) for w in own]
        roles = roles_of(principal)
        if policy.roles.isdisjoint(roles):
            return own  # decides nothing of others': no scan of the store
        others: list[WaitingThread] = []
        for waiting in await self.store.all_waiting():
            if waiting.owner == principal:
                continue
            mine = policy.awaiting(waiting.interrupts, principal=principal, roles=roles, owner=waiting.owner)
            if mine:
                others.append(attrs.evolve(waiting, interrupts=_announced(policy, mine)))
        return newest_first([*own, *others])[:limit]

    async def _decidable(self, thread_id: str, principal: str) -> ThreadRecord | None:
        """The record of ``thread_id`` if ``principal`` may decide one of its open interrupts
        under the decision policy (an approver reads what it is asked to decide); else ``None``."""
        policy, roles = self.policy, roles_of(principal)
        if policy is None or policy.roles.isdisjoint(roles):
            return None  # nothing loaded for a principal who decides nothing of others': the cost of a stranger
        record = await self.store.load(thread_id)
        if record is None or not record.open_interrupts:
            return None
        # The approver is shown what it may decide, not the thread's other requests.
        decidable = policy.awaiting(record.open_interrupts, principal=principal, roles=roles, owner=record.owner)
        return attrs.evolve(record, open_interrupts=decidable) if decidable else None

    async def audit(self, thread_id: str, principal: str) -> tuple[ThreadRecord, Sequence[ResolvedInterrupt]] | None:
        """The record of ``thread_id`` and its audit trail, for its owner.

        ``None`` for a thread never saved and for another principal's alike, as :meth:`view`.
        """
        record = await self._owned(thread_id, principal)
        if record is None:
            return None
        return record, await self.store.audit(thread_id)

    async def _owned(self, thread_id: str, principal: str) -> ThreadRecord | None:
        """The record of ``thread_id`` if ``principal`` owns it; ``None`` otherwise, having read
        only the owner (as little as for a thread that does not exist)."""
        if not may_read(await self.store.owner_of(thread_id), principal):
            return None
        record = await self.store.load(thread_id)
        # Checked again: the thread may have been purged, and begun again by anyone, meanwhile.
        return record if record is not None and may_read(record.owner, principal) else None

    async def sweep(self) -> Purged:
        """Purge what retention says is due now (what the periodic sweep does): the threads at
        rest not saved for ``retain`` seconds and the kept audit trails older than
        ``retain_audit``, batch after batch; how many of each went. Nothing without ``retain``."""
        if self.retain is None:
            return Purged(threads=0, audit_trails=0)
        threads = trails = 0
        while True:
            now = self.clock()
            audit_before = None if self.retain_audit is None else now - timedelta(seconds=self.retain_audit)
            purged = await self.store.purge(
                idle_before=now - timedelta(seconds=self.retain), audit_before=audit_before, limit=PURGE_BATCH
            )
            threads += purged.threads
            trails += purged.audit_trails
            if not purged.swept:
                log.debug("another host is purging the store; this host's sweep waits for its next turn")
                return Purged(threads=threads, audit_trails=trails, swept=False)
            if purged.threads < PURGE_BATCH and purged.audit_trails < PURGE_BATCH:
                break
        if threads or trails:
            log.info("retention: purged %d threads and %d kept audit trails", threads, trails)
        return Purged(threads=threads, audit_trails=trails)

    async def _sweep_forever(self) -> None:
        """Sweep at start, then every ``sweep_every`` seconds on the host's clock, until the host exits."""
        assert self._sweeping is not None
        with self._sweeping:
            while True:
                try:
                    await self.sweep()
                except StoreError as exc:
                    # The store's message may name files and hosts: the log only. The next sweep tries again.
                    log.warning("retention: the sweep failed (%s); trying again in %g s", exc, self.sweep_every)
                except Exception:
                    # A store's own bug fails this sweep, never the host's runs.
                    log.exception("retention: the sweep failed; trying again in %g s", self.sweep_every)
                await self._clock.sleep(self.sweep_every)

    async def expire(self) -> int:
        """Close every interrupt of the store whose ``expiresAt`` has passed on the host's clock
        (what active expiry does every ``expire_every`` seconds); how many this host closed.

        Each thread is closed by its machine (:meth:`ThreadMachine.expire`) and saved by
        compare-and-set: where hosts share a store and look at once, one closes a thread, the
        others find it saved before them and leave it. A thread running here is left for later.
        """
        now = self.clock()
        closed = 0
        for waiting in await self.store.all_waiting(limit=EXPIRY_BATCH):
            due = [o for o in waiting.interrupts if _expired(o, now)]
            thread_id = waiting.thread_id
            if not due or thread_id in self._busy:
                continue
            self._busy.add(thread_id)
            resuming = False
            try:
                machine = await self._load(thread_id)
                run_id = f"expiry-{self.new_id()}"
                lease_until = self.clock() + timedelta(seconds=self.lease)  # from now, not the batch's start
                effects = machine.expire(now, run_id=run_id, lease_until=lease_until, policy=self.policy)
                start = next((e for e in effects if isinstance(e, StartAgent)), None)
                if start is not None:
                    # The agent declared answers for these: it is resumed with them, in a run of
                    # the host's own that nobody listens to (its events are in the thread).
                    assert self._group is not None and isinstance(effects[0], Persist)
                    await self._save(effects[0])
                    closed += len(due)
                    resuming = True
                    self._group.start_soon(self._resume_on_expiry, machine, effects[1:], start)
                for effect in effects if start is None else ():
                    if isinstance(effect, Persist):
                        await self._save(effect)
                        closed += len(due)
            except VersionConflict:
                log.debug("thread %r was saved by another host while expiring its interrupts", thread_id)
            finally:
                if not resuming:
                    self._busy.discard(thread_id)
                    if self.observer.active:
                        self._seen.pop(thread_id, None)
        if closed:
            log.info("active expiry: closed %d expired interrupts", closed)
        return closed

    async def _resume_on_expiry(self, machine: ThreadMachine, effects: Sequence[Effect], start: StartAgent) -> None:
        """Carry out the run :meth:`ThreadMachine.expire` started with the agent's declared
        answers, or a failed attempt's (its record already saved), as a run without a caller; the thread is this
        host's until the run ends."""
        thread_id, run_input = machine.thread_id, start.run_input
        send, receive = anyio.create_memory_object_stream[Streamed](0)
        receive.close()  # nobody listens: the outlet finds the caller gone, and the run goes on
        out = Outlet(send, self.send_timeout, run_input.run_id)
        whose = "a failed attempt acted on" if machine.acted_retried else "its agent declared for expiry"
        log.info("resuming thread %r with the answers %s (run %r)", thread_id, whose, run_input.run_id)
        try:
            async with send:
                await self._carry([e for e in effects if not isinstance(e, StartAgent)], out)
                await self._run_agent(machine, run_input, start.answers, out)
        except Exception:
            log.exception("the host failed on run %r of thread %r, resumed at expiry", run_input.run_id, thread_id)
        finally:
            self._busy.discard(thread_id)
            if self.observer.active:
                self._seen.pop(thread_id, None)
                self._run_tokens.pop(thread_id, None)

    async def _expire_forever(self) -> None:
        """Look for expired interrupts at start, then every ``expire_every`` seconds, until the host exits."""
        assert self._expiring is not None and self.expire_every is not None
        with self._expiring:
            while True:
                try:
                    await self.expire()
                except StoreError as exc:
                    log.warning("active expiry failed (%s); trying again in %g s", exc, self.expire_every)
                except Exception:
                    log.exception("active expiry failed; trying again in %g s", self.expire_every)
                await self._clock.sleep(self.expire_every)

    async def __aenter__(self) -> Host:
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        if self.retain is not None:
            self._sweeping = anyio.CancelScope()
            self._group.start_soon(self._sweep_forever)
        if self.expire_every is not None:
            self._expiring = anyio.CancelScope()
            self._group.start_soon(self._expire_forever)
        if self.webhooks is not None:
            self._notifying = anyio.CancelScope()
            # A decision's audit line is written when its run ends: looks reach back that far.
            margin = timedelta(seconds=self.run_timeout + self.lease + 60)
            self.webhooks.audit_margin = max(self.webhooks.audit_margin, margin)
            self.changes.listen(self.webhooks.kick)
            self._group.start_soon(self._notify_forever, self.webhooks, self._notifying)
        return self

    async def _notify_forever(self, webhooks: Webhooks, scope: anyio.CancelScope) -> None:
        with scope:
            await webhooks.run(self.store, self._clock, self.observer)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None
        if self._sweeping is not None:
            self._sweeping.cancel()  # the tasks of the host's that would never end by themselves
        if self._expiring is not None:
            self._expiring.cancel()
        if self._notifying is not None:
            self._notifying.cancel()
            assert self.webhooks is not None
            self.changes.unlisten(self.webhooks.kick)
        return await group.__aexit__(exc_type, exc, tb)

    def run(self, run_input: RunAgentInput, *, principal: str = ANONYMOUS) -> RunEvents:
        """Carry out ``run_input``, sent by ``principal``, and yield the events for its caller, in order.

        The run starts when the caller first asks for an event, and goes on in the host's task
        group: a caller that stops iterating loses the rest of the stream, not the run.
        """
        return RunEvents(self._start, run_input, principal)

    async def _start(self, run_input: RunAgentInput, principal: str, pace: Pace) -> MemoryObjectReceiveStream[Streamed]:
        """Start carrying out ``run_input``; the stream its caller's events come in (``pace``:
        where the caller says it is writing them out)."""
        if self._group is None:
            raise RuntimeError("use the host as `async with Host(...) as host:`")
        thread_id = run_input.thread_id
        if thread_id in self._busy:
            refused = await self._refuse_busy(run_input, principal)
            send, receive = anyio.create_memory_object_stream[Streamed](len(refused))
            with send:
                for event in refused:
                    send.send_nowait(event)
            return receive
        self._busy.add(thread_id)
        send, receive = anyio.create_memory_object_stream[Streamed](self._buffer)
        self._group.start_soon(self._carry_run, run_input, principal, send, pace)
        return receive

    async def _carry_run(
        self, run_input: RunAgentInput, principal: str, send: MemoryObjectSendStream[Streamed], pace: Pace
    ) -> None:
        out = Outlet(send, self.send_timeout, run_input.run_id, pace)
        try:
            async with send:
                try:
                    await self._handle(run_input, principal, out)
                except Exception:
                    # Whatever fails here fails this run only: the host's other runs go on.
                    log.exception("the host failed on run %r of thread %r", run_input.run_id, run_input.thread_id)
                    if not out.ended:
                        await out(_run_error("the host could not carry out this run; its log has the details"))
        finally:
            self._busy.discard(run_input.thread_id)
            if self.observer.active:
                self._seen.pop(run_input.thread_id, None)
                self._run_tokens.pop(run_input.thread_id, None)

    async def _refuse_busy(self, run_input: RunAgentInput, principal: str) -> list[ev.Event]:
        """What the sender of an input hears while another run holds its thread, as the stored
        thread and the machine decide it: ``FORBIDDEN`` for a stranger, else ``THREAD_BUSY``."""
        machine = await self._load(run_input.thread_id)
        effects = machine.receive_input(
            run_input, now=self.clock(), principal=principal, busy=True, roles=roles_of(principal), policy=self.policy
        )
        for effect in effects:
            if isinstance(effect, Reject):
                self.observer.refused(effect.event.code or "")
        return [effect.event for effect in effects if isinstance(effect, Emit | Reject)]

    async def _load(self, thread_id: str) -> ThreadMachine:
        record = await self.store.load(thread_id)
        if self.observer.active:
            self._seen[thread_id] = _interrupts_of(record)
        if record is None:
            return ThreadMachine(thread_id, payload_validators=self._validators, limits=self.thread_limits)
        return ThreadMachine.from_record(record, payload_validators=self._validators, limits=self.thread_limits)

    async def _save(self, effect: Persist) -> None:
        record = attrs.evolve(effect.record, saved_at=self.clock().isoformat())  # the thread's last activity
        await self.store.save(record)
        policy = self.policy
        self.changes.saved(record, asked=_asked_roles(policy, record) if policy is not None else frozenset())
        if self.observer.active:
            self._observe_save(record)

    def _observe_save(self, record: ThreadRecord) -> None:
        """Tell the observer which interrupts ``record``'s save opened and closed."""
        thread_id = record.thread_id
        seen_open, seen_closed = self._seen.get(thread_id, (frozenset(), 0))
        self._seen[thread_id] = (_, now_closed) = _interrupts_of(record)
        run = self._run_tokens.get(thread_id)
        if now_closed > seen_closed:
            self.observer.interrupts_closed(run, thread_id=thread_id, closed=record.resolved[seen_closed:])
        raised = [o for o in record.open_interrupts if o.interrupt.id not in seen_open]
        if raised:
            self.observer.interrupts_raised(run, thread_id=thread_id, interrupts=raised)

    async def _handle(self, run_input: RunAgentInput, principal: str, out: Outlet) -> None:
        thread_id = run_input.thread_id
        try:
            machine = await self._load(thread_id)
            now = self.clock()
            policy, roles = self.policy, roles_of(principal)
            if machine.admits(principal, run_input, roles=roles, policy=policy):  # a stranger's touches nothing
                await self._recover_abandoned(machine, now)
                if self.translate_input is not None:
                    try:
                        answered = [r for r in machine.resolved if r.status != "expired"]
                        last = [r.interrupt for r in answered if r.answered_in == answered[-1].answered_in]
                        run_input = self.translate_input(run_input, machine.open_interrupts, last)
                    except RemoteProtocolError as exc:
                        await out(ev.RunErrorEvent(message=exc.message, code=exc.code.value))
                        return
            homes = await self._interrupt_homes(machine, run_input, principal)
            keys, entries = self.approver_keys, run_input.resume or ()
            signed = (
                keys.verified(principal, thread_id, entries)
                if keys is not None and policy is not None and entries
                else {}
            )
            effects = machine.receive_input(
                run_input,
                now=now,
                principal=principal,
                interrupt_homes=homes,
                lease_until=now + timedelta(seconds=self.lease),
                roles=roles,
                policy=policy,
                signatures=signed,
            )
            for index, effect in enumerate(effects):
                if isinstance(effect, StartAgent):
                    await self._carry(effects[:index], out)
                    # The input as the machine took it (an approver's: its resume alone).
                    await self._run_agent(machine, effect.run_input, effect.answers, out)
                    break
            else:
                await self._carry(effects, out)
        except VersionConflict as exc:
            # Another host saved the thread first: it holds the thread now. The machine, on what
            # the store holds, says what the sender hears (a stranger still learns nothing).
            log.info("lost the race for thread %r: %s", thread_id, exc)
            if not out.ended:
                for event in await self._refuse_busy(run_input, principal):
                    await out(event)

    async def _carry(self, effects: Sequence[Effect], out: Outlet) -> None:
        """Carry out one step of a machine: its saves and events, in order.

        A step that saves is carried out whole, shielded from the run's deadline and from the
        host shutting down: stopped half-way, it would leave the machine ahead of the store
        (the next save a version conflict) or a run that ended without its last event sent.
        The price: a caller that stops reading, without closing its stream, holds the step up,
        for ``send_timeout`` seconds at most (then it is dropped; see :class:`Outlet`).
        """
        if len(effects) == 1 and effects[0].__class__ in _LONE_EVENTS:  # most steps: one event, nothing saved
            if effects[0].__class__ is Reject:
                self.observer.refused(effects[0].event.code or "")
            await out(effects[0].event)
            return
        if any(isinstance(effect, Persist) for effect in effects):
            with anyio.CancelScope(shield=True):
                await self._carry_in_order(effects, out)
        else:
            await self._carry_in_order(effects, out)

    async def _carry_in_order(self, effects: Sequence[Effect], out: Outlet) -> None:
        for effect in effects:
            if isinstance(effect, Persist):
                await self._save(effect)
            elif isinstance(effect, Emit | Reject):
                if isinstance(effect, Reject):
                    self.observer.refused(effect.event.code or "")
                await out(effect.event)

    async def _recover_abandoned(self, machine: ThreadMachine, now: datetime) -> None:
        """Close a run a dead host left in progress, once its lease has run out (the machine's rule)."""
        run_id = machine.run_id
        timeout = timedelta(seconds=self.run_timeout) if math.isfinite(self.run_timeout) else None
        effects = machine.close_abandoned_run(now, run_timeout=timeout)
        if effects:
            log.warning("closing run %r of thread %r: its host stopped before it ended", run_id, machine.thread_id)
            self.observer.lease_taken_over()
        for effect in effects:
            if isinstance(effect, Persist):
                await self._save(effect)

    def _keep_lease(self, machine: ThreadMachine, on_lost: Callable[[], None]) -> LeaseKeeper:
        """Start renewing the lease of ``machine``'s run in progress; ``on_lost`` if another host closes it."""
        run_id = machine.run_id
        assert self._group is not None and run_id is not None
        keeper = LeaseKeeper(
            self.store,
            machine.thread_id,
            run_id,
            clock=self._clock,
            lease=self.lease,
            renew_every=self.lease_renew,
            # The run's own time, and the longest its last, shielded step may wait on a caller.
            deadline=self.clock() + timedelta(seconds=self.run_timeout + self.send_timeout)
            if math.isfinite(self.run_timeout + self.send_timeout)
            else None,
            running=lambda: machine.run_id == run_id,
            on_lost=on_lost,
        )
        keeper.start(self._group)
        return keeper

    async def _interrupt_homes(
        self, machine: ThreadMachine, run_input: RunAgentInput, principal: str
    ) -> dict[str, InterruptHome]:
        """Where the resume's interrupt ids that ``machine`` never raised were raised, per the store.

        The facts the machine decides ``THREAD_MISMATCH`` from (rule 1): the thread of each
        such id and that thread's owner. The machine, not the host, decides what they mean.
        """
        entries = run_input.resume or ()
        admitted = machine.admits(principal, run_input, roles=roles_of(principal), policy=self.policy)
        if len(entries) > MAX_INTERRUPTS or not admitted:
            return {}  # refused anyway: no lookups for it
        homes: dict[str, InterruptHome] = {}
        owners: dict[str, str | None] = {}
        for entry in entries:
            if machine.knows_interrupt(entry.interrupt_id):
                continue
            thread = await self.store.thread_of_interrupt(entry.interrupt_id)
            if thread is None or thread == machine.thread_id:
                continue
            if thread not in owners:
                record = await self.store.load(thread)
                owners[thread] = record.owner if record is not None else None
            homes[entry.interrupt_id] = InterruptHome(thread_id=thread, owner=owners[thread])
        return homes

    async def _run_agent(
        self,
        machine: ThreadMachine,
        run_input: RunAgentInput,
        answers: tuple[Answer, ...],
        out: Outlet,
    ) -> None:
        run = (machine.run_id, machine.run_received_at)

        async def carry(effects: list[Effect]) -> None:
            await self._carry(effects, out)

        lost = anyio.CancelScope()  # cancelled if another host closes the run
        keeper = self._keep_lease(machine, lost.cancel)
        deadline = anyio.CancelScope()  # cancelled when run_timeout has passed on the host's clock
        stop_timer = self._start_deadline(deadline)
        failure: str | None = None
        observer = self.observer
        token = observer.run_started(thread_id=machine.thread_id, run_id=run_input.run_id)
        if observer.active:
            self._run_tokens[machine.thread_id] = token
        outcome = "stopped"
        # The lease is kept until the run's last save: its RUN_ERROR included.
        try:
            try:
                with deadline, lost:
                    outcomes = await self._carry_out_decisions(machine, carry)
                    ctx = RunContext(
                        machine=machine,
                        run_input=run_input,
                        answers=answers,
                        tools=self.tools,
                        tool_outcomes=outcomes,
                        carry=carry,
                        new_id=self.new_id,
                        now=self.clock,
                        send=out,
                        observer=observer,
                        run_token=token,
                    )
                    await run_agent(self.agent, ctx)
                if keeper.lost:
                    failure = "another host closed this run: its host's lease on the thread ran out"
                elif deadline.cancelled_caught:
                    failure = f"the run took longer than {self.run_timeout:g} s"
            except VersionConflict:
                raise
            except StoreError as exc:
                # The store's message may name files and hosts: it goes to the log only.
                log.error(
                    "the thread store failed in run %r of thread %r: %s", run_input.run_id, run_input.thread_id, exc
                )
                failure = "the thread store failed during the run; the host's log has the details"
            except LocalProtocolError as exc:
                log.warning("agent broke a protocol rule in run %r: %s", run_input.run_id, exc.message)
                failure = f"the agent broke a protocol rule: {exc.message}"
            except AguiError as exc:
                log.warning("agent error in run %r: %s", run_input.run_id, exc.message)
                failure = exc.message
            except Exception as exc:
                log.exception("the agent failed in run %r of thread %r", run_input.run_id, run_input.thread_id)
                failure = f"the agent failed ({type(exc).__name__}); the host's log has the details"
            except BaseException as exc:
                if not _cancelled(exc):
                    # Anything else an agent can raise (an exception group of its own task
                    # group, SystemExit) fails its run only: it never reaches the host's tasks.
                    log.exception("the agent failed in run %r of thread %r", run_input.run_id, run_input.thread_id)
                    failure = f"the agent failed ({type(exc).__name__}); the host's log has the details"
                else:
                    # The host is shutting down: close the run now rather than leave the thread busy
                    # until its time is up; the interrupts it answered are open again.
                    with anyio.CancelScope(shield=True):
                        await self._fail(machine.thread_id, run, "the host stopped during the run", out)
                    raise
            if failure is not None:
                outcome = "error"
                await self._fail(machine.thread_id, run, failure, out)
            elif out.ended:
                outcome = "interrupt" if machine.state is ThreadState.INTERRUPTED else "success"
        finally:
            keeper.stop()
            stop_timer()
            observer.run_ended(
                token, outcome=outcome, code=RunErrorCode.AGENT_ERROR.value if outcome == "error" else None
            )

    def _start_deadline(self, deadline: anyio.CancelScope) -> Callable[[], None]:
        """Cancel ``deadline`` once ``run_timeout`` has passed on the host's clock; call what
        this returns to stop waiting."""
        if not math.isfinite(self.run_timeout):
            return _nothing
        timer = timer_of(self._clock)
        if timer is not None:
            return timer(self.run_timeout, deadline.cancel)
        waiting = anyio.CancelScope()
        assert self._group is not None

        async def wait() -> None:
            with waiting:
                await self._clock.sleep(self.run_timeout)
                deadline.cancel()

        self._group.start_soon(wait)
        return waiting.cancel

    async def _fail(self, thread_id: str, run: tuple[str | None, datetime | None], message: str, out: Outlet) -> None:
        """End the run ``run`` (its id and when it was received) with ``RUN_ERROR``.

        The run is failed from the stored record, not from the machine in memory: a save that
        failed or a step cut short leaves the machine ahead of the store, and the store is
        what the next run starts from. A run that has ended, or that another host has taken
        over, is not touched; its stream still gets its end.
        """
        stored = await self._load(thread_id)
        if (stored.run_id, stored.run_received_at) == run:
            await self._carry(stored.fail(message, RunErrorCode.AGENT_ERROR), out)
        elif not out.ended:
            await out(_run_error(message))

    async def _carry_out_decisions(
        self, machine: ThreadMachine, carry: Callable[[list[Effect]], Awaitable[None]]
    ) -> dict[str, ToolOutcome]:
        """Carry out what the machine decided for each gated tool call of the host's own tools,
        before the agent runs (:meth:`ThreadMachine.tool_decisions`); the outcomes, by call id."""
        outcomes: dict[str, ToolOutcome] = {}
        for decision in machine.tool_decisions():
            call_id, name, args = decision.call_id, decision.name, decision.args
            registered = self.tools.get(name)
            if registered is None:
                continue  # not one of the host's tools: the agent carries it out (an adapter's framework)
            if isinstance(decision, LeaveUnrun):  # a cancelled call gets no result on the wire (SPEC section 5)
                outcomes[call_id] = ToolOutcome(tool_call_id=call_id, name=name, status="cancelled", args=args)
                self.observer.tool_ended(None, name=name, result="cancelled")
            elif isinstance(decision, ReportDenied):
                outcomes[call_id] = ToolOutcome(tool_call_id=call_id, name=name, status="denied", args=args)
                self.observer.tool_ended(None, name=name, result="denied")
                await carry(machine.emit(self._result(machine, call_id, "the user denied this call")))
            elif isinstance(decision, SendRecorded):
                # Started by an earlier attempt at this run, which failed or whose host died:
                # never run twice; what became of it is reported as it is.
                recorded = decision.result
                value = decision.value if decision.value is not None else (recorded and recorded.content)
                status: Literal["executed", "unknown"] = "executed" if recorded is not None else "unknown"
                if status == "unknown":
                    self.observer.tool_ended(None, name=name, result="unknown")
                outcomes[call_id] = ToolOutcome(
                    tool_call_id=call_id, name=name, status=status, args=args, result=value, edited=decision.edited
                )
                if not decision.cancelled:
                    await carry(machine.emit(recorded or self._result(machine, call_id, NOT_RUN_AGAIN)))
            else:
                outcomes[call_id] = await self._run_tool(machine, decision, registered, carry)
        return outcomes

    async def _run_tool(
        self,
        machine: ThreadMachine,
        decision: RunTool,
        registered: Tool,
        carry: Callable[[list[Effect]], Awaitable[None]],
    ) -> ToolOutcome:
        """Run the host's tool as ``decision`` says: journaled before it runs, its result after."""
        call_id, name, args, edited = decision.call_id, decision.name, decision.args, decision.edited
        proposal = machine.bound_proposal(call_id)
        if edited and proposal is not None and proposal.parameters is None and not self._edits_fit(registered, args):
            # A proposal bound before parameters were (a record from an older host): the edits
            # are checked against the tool as registered now, and never run unchecked.
            await carry(machine.emit(self._result(machine, call_id, "the edits do not fit the tool's parameters")))
            return ToolOutcome(
                tool_call_id=call_id, name=name, status="failed", args=args, error="invalid edits", edited=True
            )
        ran = Proposal(tool_call_id=call_id, name=name, arguments=orjson.dumps(args).decode())
        await carry(machine.tool_started(call_id, now=self.clock(), ran=ran))
        tool = self.observer.tool_started(self._run_tokens.get(machine.thread_id), name=name, call_id=call_id)
        try:
            value = await registered.invoke(args)
        except Exception as exc:
            self.observer.tool_ended(tool, name=name, result="failed")
            log.exception("tool %r failed for tool call %r", name, call_id)
            content, metadata = failed_result(exc)
            await carry(machine.emit(self._result(machine, call_id, content, metadata)))
            return ToolOutcome(
                tool_call_id=call_id,
                name=name,
                status="failed",
                args=args,
                error=f"{type(exc).__name__}: {exc}",
                edited=edited,
            )
        self.observer.tool_ended(tool, name=name, result="executed")
        value = orjson.loads(orjson.dumps(value))  # as JSON gives it back: what a retry hands the agent
        content = value if isinstance(value, str) else orjson.dumps(value).decode()
        machine.tool_value(call_id, value)  # saved with the result: a retry hands the agent this very value
        await carry(machine.emit(self._result(machine, call_id, content)))
        return ToolOutcome(tool_call_id=call_id, name=name, status="executed", args=args, result=value, edited=edited)

    def _edits_fit(self, registered: Tool, args: Mapping[str, JSON]) -> bool:
        try:
            self._validators.validate(
                registered.name, registered.parameters if registered.allow_edits else NO_EDITS, args
            )
        except PayloadError:
            return False
        return True

    def _result(
        self, machine: ThreadMachine, call_id: str, content: str, metadata: Mapping[str, JSON] | None = None
    ) -> ev.ToolCallResultEvent:
        # The usual id is predictable; one a client already took for a message of its own gets
        # a fresh suffix, so the thread's message ids stay unique.
        message_id = tool_result_id(call_id)
        if machine.has_message(message_id):
            message_id = fitted_id(f"{message_id}-{self.new_id()}")
        return ev.ToolCallResultEvent(message_id=message_id, tool_call_id=call_id, content=content, metadata=metadata)


def _tool_named(registered: object, index: int) -> str:
    """The name ``tools[index]`` of a host is registered under; a precise error for what is no :class:`Tool`."""
    if not isinstance(registered, Tool):
        hint = ": make it one with @tool" if callable(registered) else ""
        raise TypeError(f"tools[{index}] is {registered!r}, not a Tool{hint}")
    return registered.name


def _expired(opened: OpenInterrupt, now: datetime) -> bool:
    """Whether ``opened`` has an ``expiresAt`` that has passed at ``now`` (unreadable: not this host's to judge)."""
    expires = opened.interrupt.expires_at
    if expires is None:
        return False
    try:
        return read_expires_at(expires) <= now  # the machine's own reading, which decides
    except ValueError:
        return False


def _interrupts_of(record: ThreadRecord | None) -> tuple[frozenset[str], int]:
    """The ids of ``record``'s open interrupts and how many it has closed (what a save changes)."""
    if record is None:
        return frozenset(), 0
    return frozenset(o.interrupt.id for o in record.open_interrupts), len(record.resolved)


_LONE_EVENTS = (Emit, Reject)
"""Effects that only send an event: a step of one of them needs no shield and no save."""


def _cancelled(exc: BaseException) -> bool:
    """Whether ``exc`` is (or holds) the cancellation of the task it was raised in."""
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, BaseExceptionGroup):
        return exc.subgroup(cancelled) is not None
    return isinstance(exc, cancelled)


def _nothing() -> None:
    """Nothing to stop."""


def _run_error(message: str) -> ev.RunErrorEvent:
    return ev.RunErrorEvent(message=message, code=RunErrorCode.AGENT_ERROR.value)


def _announced(policy: DecisionPolicy, interrupts: Sequence[OpenInterrupt]) -> tuple[OpenInterrupt, ...]:
    """``interrupts`` with each one's interrupt as it is shown while open (its quorum's tally)."""
    return tuple(attrs.evolve(o, interrupt=policy.announced(o)) for o in interrupts)


def _asked_roles(policy: DecisionPolicy, record: ThreadRecord) -> frozenset[str]:
    """The roles ``record``'s open, undecided interrupts ask to decide (whom its save concerns)."""
    if not record.open_interrupts:
        return frozenset()
    return frozenset().union(*(policy.rule_of(o).roles for o in policy.undecided(record.open_interrupts)))
