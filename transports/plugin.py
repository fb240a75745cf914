"""The transport plugin interface: what ``agui serve`` needs of a transport, and how it finds one.

A transport is an object with a ``name`` and ``async def serve(host, options) -> None``. It
is published under the entry-point group :data:`ENTRY_POINT_GROUP`; the entry point names
the transport's class (made with no arguments) or a ready object. This package publishes
``stdio`` and ``ws``; a third party adds one by declaring, in its own ``pyproject.toml``::

    [project.entry-points."agui.transports"]
    http = "my_package.http:HttpTransport"

and ``agui serve my_agents:agent --transport http -o port=8080`` finds it.

The contract of ``serve``: carry inputs from clients to ``host`` and events back until
``options.stop`` is set (or the transport runs out of clients, as stdio does at end of
input); then accept no new work, give the runs in flight up to ``options.grace`` seconds to
finish and be delivered, and return. Signals are the caller's business (``agui serve`` sets
``stop`` on SIGTERM and SIGINT), so a transport can be embedded in any program.

Trust (SPEC section 9) is part of the contract too. A transport:

- authenticates each client before reading any input from it: it gathers the client's
  :class:`~agui_core.runtime.auth.Credentials` (``Authorization: Bearer TOKEN``; see
  :func:`bearer_token`), asks :meth:`Host.authenticate <agui_core.runtime.host.Host.authenticate>`
  for the principal, refuses what raises
  :class:`~agui_core.runtime.auth.AuthenticationError` in its own terms (HTTP 401 for
  anything on HTTP), and passes the principal with every input: ``host.run(run_input,
  principal=...)``. A transport with no credentials to gather (a local pipe) runs every input
  as :data:`~agui_core.runtime.auth.ANONYMOUS` and says so;
- refuses a request whose ``Origin`` header is not in ``options.allow_origins`` (HTTP 403;
  see :func:`origin_allowed`); a request without ``Origin`` is not from a browser page;
- serves TLS with ``options.ssl`` when it is given;
- listens on a loopback address by default and, when ``options.loopback_only`` is set (by
  ``agui serve`` when the host has no authenticator and ``--insecure`` was not given), on no
  other: it raises ``ValueError`` before listening (see :func:`require_loopback`), and a
  transport that serves browsers plain ``GET`` requests (which carry no ``Origin``) refuses
  every request whose ``Host`` is not a loopback name (one check for all of them:
  :func:`~agui_transports.connections.loopback_name`, refused with HTTP 403
  ``host_not_allowed``), so a page whose own name was rebound to the loopback address reads
  nothing;
- answers ``GET /capabilities`` (the tools it runs and their parameter schemas) only to clients
  the host's authenticator accepts, unless told ``options.public_capabilities``; without an
  authenticator every client is accepted, as for everything else;
- answers a thread it will not show the asker (another principal's) exactly as one that does
  not exist (404, the same body), so a stranger learns nothing of which thread ids are taken;
- reads each input with :func:`read_input` (``max_messages=options.max_input_messages``) and
  refuses it with :func:`~agui_core.runtime.host.refusal` of the error, so the ``RUN_ERROR``
  code is the error's own on every transport; a client's fault is never logged with a traceback.

Limits are part of it as well. A transport that accepts connections admits each through a
:class:`~agui_transports.connections.ConnectionGate` as it is accepted (``options.max_connections``
in all, ``options.max_connections_per_client`` per client address; when full, a new connection
takes the place of the oldest one that has not yet carried a request its host accepted, so
clients that never authenticate cannot lock out those that do) and refuses the rest cleanly
(HTTP 503, see :func:`~agui_transports.connections.refuse`); it sets ``TCP_NODELAY`` on every
accepted socket (:func:`~agui_transports.connections.no_delay`); it closes a connection whose
request head (or WebSocket handshake) has not arrived within ``options.header_timeout`` seconds,
and one idle for ``options.keepalive_timeout`` seconds (between HTTP requests; a WebSocket
before its first input); where one
connection carries many inputs, it limits them to ``options.rate_limit`` a second
(:class:`TokenBucket`; ``RUN_ERROR`` ``RATE_LIMITED`` past it); a network transport charges
the bytes of every input, before it reads them, to its principal's budget of
``options.input_budget`` bytes a second (one :class:`~agui_transports.connections.InputBudget` for the transport, so a
principal's connections share it) and refuses an input past it unread, with ``RUN_ERROR``
``RATE_LIMITED``; after refusing an input for either limit it waits until the limit would take
it (:data:`MAX_OVER_LIMIT_PAUSE` at most) before it reads from that client again (HTTP: before
it answers); it bounds every write to a client by the host's ``send_timeout`` and closes
the connection of a client that does not read; and what clients can repeat at will is logged
once per burst (:class:`BurstLog`, :func:`fold_server_noise`), not once per occurrence. What
one input may cost the host is bounded by :func:`read_input`'s limits.

Speed: a run streams in bursts. A transport that takes a run's events with :func:`next_batch`
(every event ready at once) and encodes and writes each burst in one go spends per event
little more than the encoding; one that awaits something per event (a timeout scope, a
queue, a write) spends more on that than on the event. A burst written frame by frame can
take a while; calling :func:`progress_of` ``(events)`` as it goes tells the host the client
still reads, so it is not dropped as one that stopped.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from importlib.metadata import EntryPoint, entry_points
from ssl import SSLContext
from typing import TYPE_CHECKING, Final, Protocol, TypeVar, runtime_checkable

import anyio
import attrs

from agui_core.protocol import events as ev
from agui_core.protocol.codec import MAX_DEPTH, decode_input
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime.host import Host
from agui_core.runtime.streams import RunEvents

if TYPE_CHECKING:
    from agui_transports.connections import InputBudget  # which imports this module

__all__ = [
    "DEFAULT_HEADER_TIMEOUT",
    "DEFAULT_INPUT_BUDGET",
    "DEFAULT_KEEPALIVE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_CONNECTIONS_PER_CLIENT",
    "DEFAULT_MAX_FEEDS_PER_PRINCIPAL",
    "DEFAULT_MAX_INPUT_MESSAGES",
    "DEFAULT_RATE_LIMIT",
    "ENTRY_POINT_GROUP",
    "MAX_INPUT_DEPTH",
    "MAX_OVER_LIMIT_PAUSE",
    "BurstLog",
    "ServeOptions",
    "TokenBucket",
    "Transport",
    "UnknownTransportError",
    "available_transports",
    "bearer_token",
    "fold_server_noise",
    "load_transport",
    "next_batch",
    "origin_allowed",
    "progress_of",
    "read_input",
    "require_loopback",
    "setting",
]

ENTRY_POINT_GROUP = "agui.transports"
"""The entry-point group transports are published under."""

_T = TypeVar("_T")

DEFAULT_MAX_CONNECTIONS: Final = 1024
"""How many connections a network transport holds open at once, unless told otherwise."""

DEFAULT_MAX_FEEDS_PER_PRINCIPAL: Final = 4
"""How many live feeds (the approval console's ``/inbox/events``) one principal holds open at
once, unless told otherwise; opening one more ends that principal's oldest."""

DEFAULT_RATE_LIMIT: Final = 20.0
"""How many inputs a second one connection may send on average, unless told otherwise;
the burst allowed is twice that."""

DEFAULT_MAX_CONNECTIONS_PER_CLIENT: Final = 64
"""How many connections one client address may hold at once, unless told otherwise."""

DEFAULT_HEADER_TIMEOUT: Final = 10.0
"""Seconds a client has to send a whole request head (an HTTP request's, a WebSocket handshake's)."""

DEFAULT_KEEPALIVE_TIMEOUT: Final = 15.0
"""Seconds an idle connection is kept: an HTTP connection between requests, a WebSocket
connection that has not sent its first input."""

DEFAULT_MAX_INPUT_MESSAGES: Final = 2000
"""How many messages one input may carry (and tools, context entries, and content parts and
tool calls in all its messages together), unless told otherwise; see :func:`read_input`."""

DEFAULT_INPUT_BUDGET: Final = 4 * 1024 * 1024
"""How many bytes of input a second one principal may send a network transport, over all its
connections, unless told otherwise (4 MiB); see :class:`~agui_transports.connections.InputBudget`."""

MAX_OVER_LIMIT_PAUSE: Final = 1.0
"""The longest a transport leaves a client unanswered (HTTP) or unread (WebSocket) after
refusing its input for a rate limit or an input budget: until the limit would take the input,
at most this many seconds. A client that sends again at once is slowed down instead of costing
the server a refusal as fast as it can send."""


@attrs.frozen(kw_only=True)
class ServeOptions:
    """What ``agui serve`` tells a transport.

    ``address`` is where to listen, in the transport's own notation (``HOST:PORT`` for
    ``ws``; ``None``: the transport's default). ``settings`` holds the transport's own
    ``KEY=VALUE`` options, as strings (see :func:`setting`). ``stop`` is set when the
    transport should stop taking work; ``grace`` is how many seconds runs in flight then get
    to finish. ``ready``, when given, is called once with a description of where the
    transport serves (for example ``ws://127.0.0.1:8765``), as soon as clients can connect.

    ``allow_origins`` are the browser origins (``https://app.example``) whose pages may
    connect; a request with any other ``Origin`` is refused (HTTP 403). ``ssl``, when given,
    is the TLS context to serve with (``wss://``, ``https://``). ``loopback_only``: the host
    has no authenticator, so every client would act as the same principal; the transport
    listens on a loopback address or not at all, and answers requests addressed to a loopback
    name only.

    ``max_connections`` is how many connections the transport holds open at once (``None``:
    no cap), ``max_connections_per_client`` how many of them one client address may hold
    (``None``: no cap); ``rate_limit`` how many inputs a second one connection may send on
    average, in bursts of up to ``rate_burst`` (``None``: twice the rate); ``rate_limit=None``:
    no limit. ``header_timeout`` is how many seconds a client has to send a whole request head
    (an HTTP request's, a WebSocket handshake's), from its connection or from the first byte of
    its next request; ``keepalive_timeout`` how many seconds an idle connection is kept (an HTTP
    connection between requests, a WebSocket connection before its first input).
    ``max_input_messages`` bounds what one input may carry (see :func:`read_input`; ``None``:
    no limit); ``input_budget`` is how many bytes of input a second each principal may send
    over all its connections (see :class:`~agui_transports.connections.InputBudget`; one given whole is shared with
    whatever else charges it; ``None``: no limit). ``max_feeds_per_principal`` is how many live
    feeds one principal may hold open at once (a transport that serves them: one more ends the
    principal's oldest; ``None``: no cap).

    ``public_capabilities``: answer ``GET /capabilities`` without credentials (by default it
    is behind the authenticator, like every other route: it names the tools and their schemas).
    ``public_metrics``: answer ``GET /metrics`` (served when the host's observer has metrics:
    ``agui serve --metrics``) without credentials.
    """

    address: str | None = None
    settings: Mapping[str, str] = attrs.field(factory=dict)
    stop: anyio.Event = attrs.field(factory=anyio.Event)
    grace: float = 10.0
    ready: Callable[[str], None] | None = None
    allow_origins: tuple[str, ...] = ()
    ssl: SSLContext | None = None
    loopback_only: bool = False
    max_connections: int | None = DEFAULT_MAX_CONNECTIONS
    max_connections_per_client: int | None = DEFAULT_MAX_CONNECTIONS_PER_CLIENT
    rate_limit: float | None = DEFAULT_RATE_LIMIT
    rate_burst: int | None = None
    header_timeout: float = DEFAULT_HEADER_TIMEOUT
    keepalive_timeout: float = DEFAULT_KEEPALIVE_TIMEOUT
    max_input_messages: int | None = DEFAULT_MAX_INPUT_MESSAGES
    input_budget: float | InputBudget | None = DEFAULT_INPUT_BUDGET
    max_feeds_per_principal: int | None = DEFAULT_MAX_FEEDS_PER_PRINCIPAL
    public_capabilities: bool = False
    public_metrics: bool = False


@runtime_checkable
class Transport(Protocol):
    """A way for clients to reach a host (see the module docstring for the contract)."""

    name: str

    async def serve(self, host: Host, options: ServeOptions) -> None:
        """Serve ``host`` until ``options.stop`` is set, then drain and return."""


class UnknownTransportError(LookupError):
    """No transport is published under the name asked for."""

    def __init__(self, name: str, known: list[str]) -> None:
        self.name = name
        self.known = known
        super().__init__(f"no transport named {name!r} (installed: {', '.join(known) or 'none'})")


def available_transports() -> dict[str, EntryPoint]:
    """The transports installed in this environment, by name."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def load_transport(name: str) -> Transport:
    """The transport published as ``name``: its class made with no arguments, or the object."""
    found = available_transports().get(name)
    if found is None:
        raise UnknownTransportError(name, sorted(available_transports()))
    loaded = found.load()
    transport = loaded() if isinstance(loaded, type) else loaded
    if not isinstance(transport, Transport):
        raise TypeError(f"transport {name!r} ({found.value}) has no name and async serve(host, options)")
    return transport


def setting(settings: Mapping[str, str], key: str, parse: Callable[[str], _T], default: _T) -> _T:
    """``settings[key]`` read by ``parse``, or ``default``; ``ValueError`` names a bad value."""
    raw = settings.get(key)
    if raw is None:
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ValueError(f"option {key}={raw!r}: {exc}") from None


MAX_INPUT_DEPTH: Final = MAX_DEPTH
"""How deeply the JSON of an input may nest (arrays and objects): the codec's one limit."""


def read_input(
    frame: bytes | bytearray | memoryview | str, *, max_messages: int | None = DEFAULT_MAX_INPUT_MESSAGES
) -> RunAgentInput:
    """The ``RunAgentInput`` in one frame; raises :class:`~agui_core.errors.InvalidInputError`.

    :func:`~agui_core.protocol.codec.decode_input`, which also refuses JSON nested deeper
    than :data:`~agui_core.protocol.codec.MAX_DEPTH` (naming the path), so nothing reaches the
    host that it could not record or announce. It refuses, as soon as the JSON is parsed and
    before anything in it is validated, an input of more than ``max_messages`` messages (or
    tools, or context entries, or content parts and tool calls in all its messages together;
    ``INVALID_INPUT``; ``None``: no limit) and a resume of more than
    :data:`~agui_core.protocol.codec.MAX_RESUME_ENTRIES` entries (``INVALID_RESUME``), so that
    what one input costs the host is bounded, not only how many inputs come.
    """
    return decode_input(frame, max_messages=max_messages)


async def next_batch(events: AsyncIterator[ev.Event]) -> Sequence[ev.Event]:
    """The next events of ``events`` (what ``host.run`` returned), in order; empty at its end.

    From the host's own stream, every event ready now (waiting for the first), so a transport
    encodes and writes a burst in one go; from any other iterator (a host that wraps ``run``
    in a generator of its own), one event at a time.
    """
    if isinstance(events, RunEvents):
        return await events.next_batch()
    try:
        return (await anext(events),)
    except StopAsyncIteration:
        return ()


def _nothing() -> None:
    pass


def progress_of(events: AsyncIterator[ev.Event]) -> Callable[[], None]:
    """What a transport calls while it writes out a batch from :func:`next_batch` slowly, to
    show the host that its client still reads (:meth:`RunEvents.sent`); from any other iterator,
    a call that does nothing (it is taken one event at a time)."""
    return events.sent if isinstance(events, RunEvents) else _nothing


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header value (``None`` for another scheme)."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def origin_allowed(origin: str, allow_origins: Collection[str]) -> bool:
    """Whether a request's ``Origin`` is one of ``allow_origins`` (scheme and host compared
    without regard to case, a trailing ``/`` ignored). ``null`` is allowed only if listed."""

    def canonical(value: str) -> str:
        return value.strip().rstrip("/").lower()

    return canonical(origin) in {canonical(allowed) for allowed in allow_origins}


def require_loopback(host: str) -> None:
    """Raise ``ValueError`` unless ``host`` is a loopback address (``127.0.0.0/8``, ``::1``,
    ``localhost``); any other name may resolve to anything."""
    if host.lower() == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ValueError(
        f"without an authenticator, listening on {host} would let anyone who reaches it act for everyone; "
        "listen on a loopback address (127.0.0.1, ::1, localhost), or give agui serve "
        "--auth-tokens FILE, --auth-jwt-key FILE or --insecure"
    )


class TokenBucket:
    """A rate limit: ``rate`` actions a second on average, up to ``burst`` at once.

    The bucket holds up to ``burst`` tokens and gains ``rate`` a second; each action takes
    one, or as many as it says it weighs (bytes, say). ``clock`` gives seconds (monotonic).
    """

    __slots__ = ("_clock", "_stamp", "_tokens", "burst", "rate")

    def __init__(self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0 or burst < 1:
            raise ValueError(f"a rate limit needs a positive rate and a burst of at least 1, not {rate!r}, {burst!r}")
        self.rate = rate
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._stamp = clock()

    def take(self, amount: float = 1) -> bool:
        """Take ``amount`` tokens for one action: whether the action is within the limit.

        An action passes when the bucket holds ``amount`` tokens, or, one weighing more than
        the whole burst, when the bucket is full: it then leaves the bucket in debt, paid back
        at ``rate`` before anything else passes. So every action passes on a full bucket, and
        on average no more than ``rate`` tokens a second are taken.
        """
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        if self._tokens < (amount if amount < self.burst else self.burst):
            return False
        self._tokens -= amount
        return True

    def full(self) -> bool:
        """Whether the bucket holds its whole burst now (a new bucket would be the same)."""
        return self._tokens + (self._clock() - self._stamp) * self.rate >= self.burst

    def refills_in(self, amount: float = 1) -> float:
        """Seconds until :meth:`take` of ``amount`` would pass (0 when it would now)."""
        tokens = self._tokens + (self._clock() - self._stamp) * self.rate
        needed = amount if amount < self.burst else self.burst
        return max(0.0, (needed - tokens) / self.rate)


class BurstLog:
    """Logs what can happen thousands of times a second once per burst.

    The first occurrence is logged at once; those within ``every`` seconds after a logged one
    are counted, and the count goes with the next line, logged no sooner than ``every``
    seconds later.
    """

    __slots__ = ("_clock", "_logged_at", "_logger", "_missed", "every", "level")

    def __init__(
        self,
        logger: logging.Logger,
        *,
        level: int = logging.WARNING,
        every: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._logger = logger
        self.level = level
        self.every = every
        self._clock = clock
        self._logged_at: float | None = None
        self._missed = 0

    def note(self, message: str, *args: object) -> None:
        """One occurrence, described by ``message % args``."""
        now = self._clock()
        if self._logged_at is not None and now - self._logged_at < self.every:
            self._missed += 1
            return
        if self._missed and self._logged_at is not None:
            message = f"{message} (and {self._missed} more times in the {now - self._logged_at:.0f} s before)"
        self._logger.log(self.level, message, *args)
        self._logged_at = now
        self._missed = 0


_ACCEPT_FAILED: Final = "socket.accept() out of system resource"
_OVER_CAPACITY: Final = "Exceeded concurrency limit."
_RETRY_AFTER_CLOSE: Final = "Exception in callback BaseSelectorEventLoop._start_serving("


class _Fold(logging.Filter):
    """Drops a record a client can make a library write at will, and reports it instead."""

    def __init__(self, prefix: str, report: Callable[[logging.LogRecord], bool]) -> None:
        super().__init__()
        self.prefix = prefix
        self.report = report

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith(self.prefix):
            return self.report(record)
        return True


_log = logging.getLogger("agui_transports")
_accept_failures = BurstLog(_log, level=logging.ERROR)
_over_capacity = BurstLog(_log)


def _accept_failed(record: logging.LogRecord) -> bool:
    error = record.exc_info[1] if record.exc_info else None
    _accept_failures.note(
        "cannot accept connections (%s); asyncio tries again every second; logged once a minute while it lasts",
        error or "out of system resources",
    )
    return False


def _refused_over_capacity(record: logging.LogRecord) -> bool:
    _over_capacity.note("refused requests with HTTP 503: the connection cap is reached")
    return False


def _retried_after_close(record: logging.LogRecord) -> bool:
    # Each accept that failed schedules its own retry a second later; a listener closed in
    # that second (a shutdown) has no descriptor left, and the retry fails on it with this
    # ValueError. Nothing was lost: the listener was meant to be gone. Anything else the
    # retry raises is kept.
    error = record.exc_info[1] if record.exc_info else None
    if isinstance(error, ValueError) and "Invalid file descriptor" in str(error):
        _log.debug("a retry to accept on a listener closed since was dropped")
        return False
    return True


def fold_server_noise() -> None:
    """Log asyncio's accept failures and uvicorn's refusals past its cap once per burst.

    Out of file descriptors (``EMFILE``) or memory, asyncio's event loop stops accepting on a
    listening socket for one second (``ACCEPT_RETRY_DELAY``), but first logs a traceback for
    every connection waiting in the backlog, up to the backlog's size, each time: at
    ``RLIMIT_NOFILE=1024`` that measured 207,699 tracebacks (92 MB) in 45 s. Those records
    are kept out of the ``asyncio`` log and said in one line per burst on
    ``agui_transports`` (see :class:`BurstLog`); so is uvicorn's line for every request it
    refuses past ``limit_concurrency``. Each failed accept also leaves a retry a second
    later, which fails with a traceback on a listener closed in that second (a shutdown
    during a burst); those are dropped. Idempotent; the network transports call it as they
    start.
    """
    for name, prefix, report in (
        ("asyncio", _ACCEPT_FAILED, _accept_failed),
        ("uvicorn.error", _OVER_CAPACITY, _refused_over_capacity),
        ("asyncio", _RETRY_AFTER_CLOSE, _retried_after_close),
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Fold) and f.prefix == prefix for f in logger.filters):
            logger.addFilter(_Fold(prefix, report))
