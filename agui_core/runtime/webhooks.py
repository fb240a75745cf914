"""Webhooks: a signed ``POST`` when someone must act on an interrupt, and when it is settled.

A host with :class:`Webhooks` tells each receiver URL four things, as JSON:

- ``interrupt.raised``: a run ended waiting for an answer (one notice for the interrupts a run
  raised together);
- ``interrupt.expiring``: an open interrupt's ``expiresAt`` is ``remind_before`` seconds away
  or less (one per interrupt);
- ``interrupt.decided``: the interrupts a resume answered, with each one's status (one notice
  per resuming run), or an operator cancelled;
- ``interrupt.expired``: an interrupt's ``expiresAt`` passed with no answer (one per interrupt).

The body names the thread, its owner (who should act), the run, and each interrupt's id,
reason, message (not an approval's, which quotes the call's arguments), tool name,
``expiresAt`` and, once decided, status; with ``console_url``, a
``link`` to the thread in the approval console. It never carries a payload, an answer or a
tool call's arguments: a receiver is told that something waits, not what.

Signature. ``X-AGUI-Timestamp`` is the sending instant in Unix seconds and ``X-AGUI-Signature``
is ``sha256=`` and the hex HMAC-SHA256, under the shared ``secret``, of the timestamp, a dot and
the body bytes: a receiver recomputes it (:func:`signature`), compares in constant time and
refuses a timestamp too far from its own clock, so a captured request cannot be replayed later.
``Idempotency-Key`` (also the body's ``id``) is the same for the same notice on every host and
every attempt: a receiver that has seen it acknowledges and does nothing more.

Delivery is at least once, and by one host at a time. What to tell is read from the store (the
threads waiting, and the audit trail), not from the host's memory, so a notice survives a
restart, and hosts sharing a store derive the same notices under the same keys. Before sending,
a host claims the delivery in the store's :class:`~agui_core.store.base.DeliveryLedger` (one
compare-and-set: of two hosts, one gets it); a 2xx answer marks it delivered, for good; anything
else (another status, a refused connection, ``timeout`` seconds without an answer) leaves it to
be claimed again after a backoff that doubles from ``first_retry`` seconds up to
``max_backoff``. A host that dies mid-attempt leaves a claim that runs out, and another host
takes it over. A decision older than ``lookback`` seconds when a host starts, or that falls out
of every host's view while its receiver is down, is no longer sent; a raised notice is sent for
as long as its interrupts stay open.

Trace context. A notice carries the ``traceparent`` (and ``tracestate``) of the run it is
about, when the host that sends it ran that run with tracing on (``agui serve --traces``): the
run that raised the interrupts, or the one that decided them.

Timing. The host looks every ``every`` seconds, and at once (at most once a second) after
each save it makes; a host learns of another host's saves at its next look.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import math
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, Literal, Protocol
from urllib.parse import quote

import anyio
import attrs
import orjson

from agui_core.machine.record import OpenInterrupt, ResolvedInterrupt
from agui_core.protocol.types import JSON
from agui_core.runtime.clock import Clock
from agui_core.runtime.observe import NO_OBSERVER, Observer
from agui_core.store.base import DeliveryLedger, StoreError, ThreadStore, WaitingThread

__all__ = ["Notice", "NoticeKind", "Webhooks", "notices", "signature"]

log = logging.getLogger("agui_core.runtime.webhooks")

NoticeKind = Literal["interrupt.raised", "interrupt.expiring", "interrupt.decided", "interrupt.expired"]

_CLAIM_MARGIN: Final = 30.0  # seconds a claim outlives the attempt's timeout
_RECHECK: Final = 60.0  # seconds before a delivery another host holds is looked at again
_REMEMBERED: Final = 10_000  # delivered keys a host remembers, so as not to claim them again
_SCAN_GAP: Final = 1.0  # seconds between two looks, however many saves ask for one
_SCAN_MARGIN: Final = timedelta(minutes=5)  # each look at the audit reaches this far behind the last


class _Ledger(ThreadStore, DeliveryLedger, Protocol):
    """A store that keeps threads and the ledger of deliveries (every store this package has)."""


def signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-AGUI-Signature`` of ``body`` sent at ``timestamp`` (Unix seconds, as sent)."""
    digest = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


@attrs.frozen(kw_only=True)
class Notice:
    """One thing to tell the receivers; ``key`` names it, the same on every host."""

    key: str
    kind: NoticeKind
    thread_id: str
    owner: str | None
    run_id: str | None
    interrupts: tuple[Mapping[str, JSON], ...]

    def body(self, *, console_url: str | None) -> bytes:
        document: dict[str, JSON] = {
            "id": self.key,
            "type": self.kind,
            "threadId": self.thread_id,
            "owner": self.owner,
            "runId": self.run_id,
            "interrupts": [dict(i) for i in self.interrupts],
        }
        if console_url is not None:
            document["link"] = f"{console_url}#thread={quote(self.thread_id, safe='')}"
        return orjson.dumps(document)


def _described(interrupt: OpenInterrupt | ResolvedInterrupt, status: str | None = None) -> Mapping[str, JSON]:
    """What a notice says of an interrupt: never its payload, its answer or a tool's arguments."""
    wire = interrupt.interrupt
    found: dict[str, JSON] = {"id": wire.id, "reason": wire.reason}
    if wire.message is not None and wire.reason != "tool_call":
        # An approval's message quotes the call's arguments (the default one does): its tool
        # names it instead.
        found["message"] = wire.message
    if interrupt.proposal is not None:
        found["toolName"] = interrupt.proposal.name
    if wire.expires_at is not None:
        found["expiresAt"] = wire.expires_at
    if interrupt.raised_at is not None:
        found["raisedAt"] = interrupt.raised_at
    if status is not None:
        found["status"] = status
    return found


def _key(kind: NoticeKind, thread_id: str, part: str) -> str:
    """A notice's key: its kind, thread and run or interrupt, each quoted so no two read alike."""
    return f"{kind.removeprefix('interrupt.')}:{quote(thread_id, safe='')}:{quote(part, safe='')}"


def _instant(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        return None
    return found if found.tzinfo is not None else None


def notices(
    waiting: Iterable[WaitingThread],
    closed: Iterable[tuple[str, ResolvedInterrupt]],
    *,
    now: datetime,
    remind_before: timedelta,
    owners: Mapping[str, str | None] | None = None,
) -> list[Notice]:
    """The notices the threads ``waiting`` and the audit lines ``closed`` call for at ``now``.

    ``owners`` names the owner of each thread of ``closed`` (the audit does not say).
    Pure: the same state gives the same notices under the same keys, on any host.
    """
    found: list[Notice] = []
    for thread in waiting:
        by_run: dict[str, list[OpenInterrupt]] = {}
        for opened in thread.interrupts:
            by_run.setdefault(opened.run_id, []).append(opened)
            due = _instant(opened.interrupt.expires_at)
            if due is None:
                continue
            kind: NoticeKind | None = None
            if due <= now:
                kind = "interrupt.expired"
            elif due - remind_before <= now:
                kind = "interrupt.expiring"
            if kind is not None:
                found.append(
                    Notice(
                        key=_key(kind, thread.thread_id, opened.interrupt.id),
                        kind=kind,
                        thread_id=thread.thread_id,
                        owner=thread.owner,
                        run_id=opened.run_id,
                        interrupts=(_described(opened),),
                    )
                )
        for run_id, raised in by_run.items():
            found.append(
                Notice(
                    key=_key("interrupt.raised", thread.thread_id, run_id),
                    kind="interrupt.raised",
                    thread_id=thread.thread_id,
                    owner=thread.owner,
                    run_id=run_id,
                    interrupts=tuple(_described(o) for o in raised),
                )
            )
    decided: dict[tuple[str, str], list[ResolvedInterrupt]] = {}
    for thread_id, line in closed:
        owner = (owners or {}).get(thread_id)
        if line.status == "expired":
            found.append(
                Notice(
                    key=_key("interrupt.expired", thread_id, line.interrupt.id),
                    kind="interrupt.expired",
                    thread_id=thread_id,
                    owner=owner,
                    run_id=line.run_id,
                    interrupts=(_described(line, "expired"),),
                )
            )
        else:
            decided.setdefault((thread_id, line.answered_in or line.interrupt.id), []).append(line)
    for (thread_id, answered_in), lines in decided.items():
        found.append(
            Notice(
                key=_key("interrupt.decided", thread_id, answered_in),
                kind="interrupt.decided",
                thread_id=thread_id,
                owner=(owners or {}).get(thread_id),
                run_id=lines[0].answered_in,
                interrupts=tuple(_described(line, line.status) for line in lines),
            )
        )
    return found


class Webhooks:
    """Sends the notices of the module docstring to ``urls``, signed with ``secret``.

    Give it to a :class:`~agui_core.runtime.host.Host` (``webhooks=``), which runs it over its
    store and clock for as long as the host is entered. ``holder`` names this host in the
    ledger's claims (a random name by default). ``transport`` is an ``httpx`` transport, for
    tests; by default, the network.
    """

    def __init__(
        self,
        urls: Sequence[str],
        *,
        secret: bytes,
        console_url: str | None = None,
        remind_before: float = 3600.0,
        every: float = 5.0,
        lookback: float = 86400.0,
        timeout: float = 10.0,
        first_retry: float = 5.0,
        max_backoff: float = 3600.0,
        holder: str | None = None,
        transport: Any = None,
    ) -> None:
        if not urls:
            raise ValueError("webhooks need at least one URL")
        for url in urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"a webhook URL is http:// or https://, not {url!r}")
        if len(secret) < 16:
            raise ValueError("a webhook secret is 16 bytes or more: receivers check signatures with it")
        for name, value in (
            ("remind_before", remind_before),
            ("every", every),
            ("lookback", lookback),
            ("timeout", timeout),
            ("first_retry", first_retry),
            ("max_backoff", max_backoff),
        ):
            if not 0 < value < math.inf:
                raise ValueError(f"{name} is a positive number of seconds, not {value!r}")
        self.urls = tuple(urls)
        self._secret = secret
        self.console_url = console_url
        self.remind_before = timedelta(seconds=remind_before)
        self.every = every
        self.lookback = timedelta(seconds=lookback)
        self.timeout = timeout
        self.first_retry = first_retry
        self.max_backoff = max_backoff
        self.holder = holder if holder is not None else f"host-{uuid.uuid4().hex[:16]}"
        self._transport = transport
        self._wake = anyio.Event()
        self._since: datetime | None = None  # where the next look at the audit starts
        self.audit_margin = _SCAN_MARGIN
        """How far behind its previous look each look at the audit reaches: an audit line is
        written when its run ends, dated when the run began, so at least the longest a run
        may take (a host sets it from its ``run_timeout``)."""
        self._done: OrderedDict[str, None] = OrderedDict()  # delivered (by anyone), newest last
        # ledger key -> (not before, notice, url, whether it is this host's failed attempt to try again)
        self._later: dict[str, tuple[datetime, Notice, str, bool]] = {}
        self._observer: Observer = NO_OBSERVER
        self.delivered = 0
        """How many notices this host delivered (to one URL each)."""

    def kick(self, *_: object) -> None:
        """Look again soon (the host saved a thread)."""
        self._wake.set()

    async def run(self, store: ThreadStore, clock: Clock, observer: Observer = NO_OBSERVER) -> None:
        """Look and deliver, every ``every`` seconds and when kicked, until cancelled.

        ``observer`` gives each notice the trace context of the run it is about
        (:meth:`~agui_core.runtime.observe.Observer.trace_headers`), where this host knows it.
        """
        self._observer = observer
        if not isinstance(store, DeliveryLedger):
            raise TypeError(f"a {type(store).__name__} keeps no ledger of deliveries")
        client = self._client()
        async with client:
            while True:
                self._wake = anyio.Event()
                try:
                    await self.deliver_due(store, client, clock.now, clock.now())
                except StoreError as exc:
                    log.warning("webhooks: the store failed (%s); trying again in %g s", exc, self.every)
                except Exception:
                    log.exception("webhooks: a look failed; trying again in %g s", self.every)
                await anyio.sleep(_SCAN_GAP)  # real time: this bounds the work, whatever the clock says
                with anyio.move_on_after(max(0.0, self._next_wait(clock.now()) - _SCAN_GAP)):
                    await self._wake.wait()

    def _next_wait(self, now: datetime) -> float:
        waits = [self.every]
        waits.extend(max(0.0, (when - now).total_seconds()) for when, *_ in self._later.values())
        return min(waits)

    def _client(self) -> Any:
        try:
            import httpx
        except ImportError as exc:  # pragma: no cover - the extra is part of the test install
            raise ImportError("webhooks need httpx: pip install 'agui-core[webhooks]'") from exc
        return httpx.AsyncClient(transport=self._transport, timeout=self.timeout, follow_redirects=False)

    async def deliver_due(self, store: _Ledger, client: Any, clock: Callable[[], datetime], now: datetime) -> int:
        """Look once: derive the notices due at ``now`` and deliver each to each URL; how many
        deliveries succeeded. Each claim is made at ``clock()``, the instant it is made, so a
        look slowed down by its receivers never claims with an instant already past."""
        since = self._since if self._since is not None else now - self.lookback
        waiting = await store.all_waiting()
        closed = await store.audit_since(since)
        self._since = now - self.audit_margin
        owners = {thread_id: await store.owner_of(thread_id) for thread_id in {t for t, _ in closed}}
        due = notices(waiting, closed, now=now, remind_before=self.remind_before, owners=owners)
        pending = [(n, url) for n in due for url in self.urls]
        current = {n.key for n in due}
        for key, (when, notice, url, mine) in list(self._later.items()):
            if notice.key not in current and (not mine or notice.kind in ("interrupt.raised", "interrupt.expiring")):
                # Its interrupts are no longer open (nobody must act now), or another host holds
                # it and this host's looks no longer find it: it is that host's to finish.
                del self._later[key]
            elif when <= now:
                del self._later[key]
                pending.append((notice, url))
        sent = 0
        for notice, url in pending:
            key = _ledger_key(notice, url)
            if key in self._done or (key in self._later and self._later[key][0] > now):
                continue
            sent += await self._deliver(store, client, notice, url, key, clock)
        return sent

    async def _deliver(
        self, store: _Ledger, client: Any, notice: Notice, url: str, key: str, clock: Callable[[], datetime]
    ) -> int:
        now = clock()
        attempt = await store.claim_delivery(
            key, holder=self.holder, now=now, until=now + timedelta(seconds=self.timeout + _CLAIM_MARGIN)
        )
        if attempt is None:  # delivered, or another host holds it: look again later
            self._later[key] = (now + timedelta(seconds=_RECHECK), notice, url, False)
            return 0
        body = notice.body(console_url=self.console_url)
        stamp = str(int(time.time()))
        headers = {
            "content-type": "application/json",
            "user-agent": "agui-core-webhooks",
            "idempotency-key": notice.key,
            "x-agui-timestamp": stamp,
            "x-agui-signature": signature(self._secret, stamp, body),
        }
        first = notice.interrupts[0].get("id") if notice.interrupts else None
        traced = self._observer.trace_headers(notice.thread_id, first) if isinstance(first, str) else None
        if traced:
            headers.update(traced)
        failure: str | None = None
        response = None
        with anyio.move_on_after(self.timeout):  # the whole attempt, well within the claim
            try:
                response = await client.post(url, content=body, headers=headers)
            except Exception as exc:  # httpx's errors, and timeouts: the receiver did not answer
                failure = f"{type(exc).__name__}: {exc}"
        if response is None:
            failure = failure or f"no answer within {self.timeout:g} s"
        elif not 200 <= response.status_code < 300:
            failure = f"HTTP {response.status_code}"
        if failure is None:
            await store.finish_delivery(key, holder=self.holder, delivered=True)
            self._remember(key)
            self.delivered += 1
            log.debug("webhooks: delivered %s to %s", notice.key, url)
            return 1
        wait = min(self.max_backoff, self.first_retry * 2 ** (attempt - 1))
        retry_at = clock() + timedelta(seconds=wait)  # from when the attempt ended
        await store.finish_delivery(key, holder=self.holder, delivered=False, retry_at=retry_at)
        self._later[key] = (retry_at, notice, url, True)
        log.warning(
            "webhooks: %s to %s failed (attempt %d, %s); trying again in %g s", notice.key, url, attempt, failure, wait
        )
        return 0

    def _remember(self, key: str) -> None:
        self._done[key] = None
        self._later.pop(key, None)
        while len(self._done) > _REMEMBERED:
            self._done.popitem(last=False)


def _ledger_key(notice: Notice, url: str) -> str:
    """The ledger's name for ``notice`` to ``url``: one delivery per receiver."""
    return f"{notice.key} {hashlib.sha256(url.encode()).hexdigest()[:16]}"
