"""The network edge shared by the HTTP and WebSocket transports: who may hold a connection.

A server on the open internet meets clients that connect and never finish a request, that
open a thousand sockets from one address, or that send requests naming another host. What
both network transports do about them lives here, once:

- :class:`ConnectionGate` decides, as each TCP connection is accepted (before a byte of it is
  read), whether it may stay: at most ``max_per_client`` connections per client address (an
  IPv6 client by its ``/64``, as one host usually holds a whole ``/64``), and at most
  ``max_connections`` in all. A connection is *unproven* until it carried a request or input
  the host accepted from a principal (see :meth:`Ticket.prove`); when the server is full, a new
  connection takes the place of the oldest unproven one, so clients that never authenticate
  cannot keep out those that do. Only when every connection is proven is a new one refused.
- :func:`refuse` answers a connection the gate refused with ``503`` and closes it the way a
  server must when it may not have read the request yet ("lingering close"): it stops writing,
  reads and drops what the client still sends for a second at most, then closes, so that the
  client reads the ``503`` instead of a reset.
- :func:`no_delay` turns Nagle's algorithm off on an accepted TCP socket: a response written in
  two pieces (head, then body) otherwise waits for the client's delayed ACK, 40 ms on Linux,
  on every request of a kept-alive connection after the first.
- :func:`loopback_name` is the one check of a request's ``Host`` header for a host without an
  authenticator, which must answer requests addressed to a loopback name only: a page whose own
  name was rebound to 127.0.0.1 (DNS rebinding) sends its own name, and is refused with
  :data:`HOST_NOT_ALLOWED`.
- :class:`InputBudget` keeps each principal's budget of input bytes a second, over all its
  connections (for anonymous clients, each client address's, an address counting as the gate
  counts it: :func:`client_key`); a transport charges every input to it before decoding it.

Connections behind a reverse proxy all come from the proxy's address: there, raise
``max_per_client`` (or turn it off) and let the proxy limit each client; anonymous clients
behind it share one input budget (give the host an authenticator to tell them apart).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import ClassVar, Final

import orjson
from agui_transports.plugin import BurstLog, TokenBucket

from agui_core.errors import RemoteProtocolError, RunErrorCode
from agui_core.runtime.auth import ANONYMOUS

__all__ = [
    "DEFAULT_MAX_BUDGETS",
    "HOST_NOT_ALLOWED",
    "ConnectionGate",
    "InputBudget",
    "Ticket",
    "client_key",
    "loopback_name",
    "no_delay",
    "peer_of",
    "refuse",
    "request_timeout",
    "service_unavailable",
]

log = logging.getLogger("agui_transports")

HOST_NOT_ALLOWED: Final = "this host answers requests addressed to a loopback name only (127.0.0.1, [::1], localhost)"
"""What a request naming another host is told (HTTP 403, error ``host_not_allowed``)."""

DEFAULT_MAX_BUDGETS: Final = 10_000
"""How many principals (or client addresses) an :class:`InputBudget` keeps a budget for at once."""

_LINGER: Final = 1.0  # seconds a refused connection is read (and dropped) before it is closed
_LINGERING_AT_MOST: Final = 256  # refused connections lingering at once; past it, closed at once


def client_key(address: str | None) -> str | None:
    """The client a peer address counts as: the address itself, the IPv4 address of an
    IPv4-mapped IPv6 one, the ``/64`` of any other IPv6 address; ``None`` when unknown."""
    if not address:
        return None
    try:
        ip = ipaddress.ip_address(address.partition("%")[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def peer_of(transport: asyncio.BaseTransport) -> str | None:
    """The address of the peer of ``transport`` (``None`` for a pipe or a Unix socket)."""
    peer = transport.get_extra_info("peername")
    if isinstance(peer, tuple) and peer and isinstance(peer[0], str):
        return peer[0]
    return None


def no_delay(transport: asyncio.BaseTransport) -> None:
    """Send every write at once on ``transport``'s TCP socket (``TCP_NODELAY``)."""
    sock = transport.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6) and sock.type == socket.SOCK_STREAM:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:  # the peer is already gone
            pass


def loopback_name(host_header: str) -> bool:
    """Whether a ``Host`` header names this machine by a loopback address or ``localhost``."""
    name, port = host_header.strip(), ""
    if name.startswith("["):
        name, bracket, port = name[1:].partition("]")
        if not bracket or (port and not port.startswith(":")):
            return False
    elif name.count(":") == 1:
        name, _, port = name.partition(":")
    if port.removeprefix(":") and not port.removeprefix(":").isdigit():
        return False
    name = name.lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class Ticket:
    """One connection's place at the gate, from its accept until :meth:`release`."""

    __slots__ = ("_evict", "_gate", "client", "proven", "released")

    def __init__(self, gate: ConnectionGate, client: str | None, evict: Callable[[], None]) -> None:
        self._gate = gate
        self._evict = evict
        self.client = client
        self.proven = False
        """Whether the connection carried a request or input the host accepted from a principal."""
        self.released = False

    def prove(self) -> None:
        """The connection carried a request the host accepted: it no longer gives way to new ones."""
        if not self.proven and not self.released:
            self.proven = True
            self._gate._unproven.pop(self, None)

    def release(self) -> None:
        """The connection is closed: its place is free (calling again does nothing)."""
        if self.released:
            return
        self.released = True
        gate = self._gate
        gate._unproven.pop(self, None)
        gate.count -= 1
        if self.client is not None:
            left = gate._per_client[self.client] - 1
            if left:
                gate._per_client[self.client] = left
            else:
                del gate._per_client[self.client]

    def evict(self) -> None:
        """Take the place away (another connection needs it) and close the connection."""
        self.release()
        self._evict()


class ConnectionGate:
    """Which accepted connections may stay (see the module docstring).

    ``max_connections`` caps the connections held at once, ``max_per_client`` those of one
    client (see :func:`client_key`); ``None`` for either: no cap. The gate only counts; the
    transport closes what it is told to (:meth:`admit`'s ``evict``, :func:`refuse`).
    """

    def __init__(self, *, max_connections: int | None, max_per_client: int | None) -> None:
        for name, value in (("max_connections", max_connections), ("max_per_client", max_per_client)):
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or None: no cap), not {value}")
        self.max_connections = max_connections
        self.max_per_client = max_per_client
        self.count = 0
        """How many connections hold a place."""
        self._per_client: dict[str, int] = {}
        self._unproven: OrderedDict[Ticket, None] = OrderedDict()  # oldest first
        self._over_client = BurstLog(log, level=logging.WARNING)
        self._full = BurstLog(log, level=logging.WARNING)
        self._evicted = BurstLog(log, level=logging.INFO)

    def connections_of(self, address: str | None) -> int:
        """How many connections the client of ``address`` holds."""
        key = client_key(address)
        return 0 if key is None else self._per_client.get(key, 0)

    @property
    def unproven(self) -> int:
        """How many connections have not yet carried an accepted request."""
        return len(self._unproven)

    def admit(self, address: str | None, evict: Callable[[], None]) -> Ticket | None:
        """A place for a connection just accepted from ``address``, or ``None``: refuse it.

        ``evict`` closes the connection, should its place go to a newer one while it is unproven.
        """
        key = client_key(address)
        if key is not None and self.max_per_client is not None and self._per_client.get(key, 0) >= self.max_per_client:
            self._over_client.note(
                "refused connections from a client over its cap of %d connections (%s)", self.max_per_client, key
            )
            return None
        if self.max_connections is not None and self.count >= self.max_connections:
            if not self._unproven:
                self._full.note("refused connections: %d connections, all in use, is the cap", self.max_connections)
                return None
            oldest = next(iter(self._unproven))
            self._evicted.note("the server is full: closed the oldest connection that had not carried a request")
            oldest.evict()
        ticket = Ticket(self, key, evict)
        self.count += 1
        if key is not None:
            self._per_client[key] = self._per_client.get(key, 0) + 1
        self._unproven[ticket] = None
        return ticket


def refuse(transport: asyncio.Transport, response: bytes) -> None:
    """Answer a connection with ``response`` (a whole HTTP response) and close it, lingering.

    The client may still be sending its request: closing a socket with unread bytes makes the
    system reset the connection, and the client would see the reset, not the answer. So the
    connection stops writing, what arrives is read and dropped, and it is closed when the
    client closes its side or a second has passed; past a number of such connections at
    once, one is closed at once instead.
    """
    lingering = _Lingering(transport)
    transport.set_protocol(lingering)
    transport.write(response)
    if len(_Lingering.active) >= _LINGERING_AT_MOST or not transport.can_write_eof():
        transport.close()
        return
    transport.write_eof()
    lingering.start()


def service_unavailable(message: str) -> bytes:
    """A ``503`` with a JSON body ``{"error", "message"}`` that closes its connection."""
    return _response(503, "Service Unavailable", "unavailable", message, [("Retry-After", "1")])


def request_timeout(message: str) -> bytes:
    """A ``408`` with a JSON body ``{"error", "message"}`` that closes its connection."""
    return _response(408, "Request Timeout", "request_timeout", message, [])


def _response(status: int, phrase: str, error: str, message: str, headers: list[tuple[str, str]]) -> bytes:
    body = orjson.dumps({"error": error, "message": message})
    head = [f"HTTP/1.1 {status} {phrase}", "Content-Type: application/json", f"Content-Length: {len(body)}"]
    head += [f"{name}: {value}" for name, value in headers]
    head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


class _Lingering(asyncio.Protocol):
    """A refused connection after its answer: reads and drops, closes at the client's end or a deadline."""

    active: ClassVar[set[_Lingering]] = set()  # in this process, across servers

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        _Lingering.active.add(self)
        self._timer = asyncio.get_running_loop().call_later(_LINGER, self._transport.close)

    def data_received(self, data: bytes) -> None:
        pass  # the request of a connection already answered: dropped

    def eof_received(self) -> bool:
        self._transport.close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        _Lingering.active.discard(self)
        if self._timer is not None:
            self._timer.cancel()


class InputBudget:
    """A budget of input bytes a second for each principal, shared by all its connections.

    Each principal may send ``rate`` bytes of input a second on average, in bursts of up to
    ``burst`` bytes (``None``: one second's worth). An input larger than the burst passes when
    the principal's budget is full and leaves it in debt (see :meth:`~agui_transports.plugin.TokenBucket.take`), so
    the largest frame a transport reads always gets through. A transport charges every input
    to it (:meth:`charge`) before decoding it, and refuses one over the budget unread.

    Without an authenticator every client is :data:`~agui_core.runtime.auth.ANONYMOUS`: each
    client address then has a budget of its own, an address counting as :func:`client_key`
    says (an IPv6 address by its ``/64``): the peer of the client's connection, so clients that
    come through one proxy share the proxy's budget.

    The budgets held are at most ``max_budgets``. A budget that has refilled is forgotten (a
    new one is the same); while that many have not, every newcomer shares one more budget, so
    many addresses buy a stranger one budget between them, never one each. ``clock`` gives
    seconds (monotonic).
    """

    __slots__ = ("_budgets", "_clock", "_overflow", "burst", "max_budgets", "rate")

    def __init__(
        self,
        rate: float,
        *,
        burst: int | None = None,
        max_budgets: int = DEFAULT_MAX_BUDGETS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_budgets < 1:
            raise ValueError(f"an input budget keeps at least one budget, not {max_budgets!r}")
        self.rate = rate
        self.burst = burst if burst is not None else max(1, round(rate))
        self.max_budgets = max_budgets
        self._clock = clock
        self._overflow = TokenBucket(rate, self.burst, clock=clock)  # a bad rate or burst fails here
        self._budgets: OrderedDict[tuple[str, str], TokenBucket] = OrderedDict()

    @classmethod
    def of(cls, budget: float | InputBudget | None) -> InputBudget | None:
        """The budget a transport's ``input_budget`` names: bytes a second, a budget to share
        (with another transport of the same host), or ``None`` for none."""
        return budget if budget is None or isinstance(budget, InputBudget) else cls(budget)

    @property
    def held(self) -> int:
        """How many budgets are held now (the shared one for newcomers aside)."""
        return len(self._budgets)

    def charge(self, principal: str, address: str | None, size: int) -> bool:
        """Charge ``size`` bytes of one input to ``principal``'s budget (for
        :data:`~agui_core.runtime.auth.ANONYMOUS`, that of the client's ``address``: an IP
        address, a :func:`client_key`, or ``None``): whether the input is within it."""
        key = self._key(principal, address)
        budgets = self._budgets
        bucket = budgets.get(key)
        if bucket is None:
            # Least recently charged first: forget those that have refilled.
            while budgets and next(iter(budgets.values())).full():
                budgets.popitem(last=False)
            if len(budgets) >= self.max_budgets:
                return self._overflow.take(size)
            bucket = budgets[key] = TokenBucket(self.rate, self.burst, clock=self._clock)
        else:
            budgets.move_to_end(key)
        return bucket.take(size)

    def refills_in(self, principal: str, address: str | None, size: int) -> float:
        """Seconds until an input of ``size`` bytes would be within the budget :meth:`charge`
        used for it (0 when it would be now)."""
        bucket = self._budgets.get(self._key(principal, address))
        if bucket is None:
            bucket = self._overflow if len(self._budgets) >= self.max_budgets else None
        return 0.0 if bucket is None else bucket.refills_in(size)

    @staticmethod
    def _key(principal: str, address: str | None) -> tuple[str, str]:
        return (principal, (client_key(address) or "") if principal == ANONYMOUS else "")

    def exceeded(self) -> RemoteProtocolError:
        """What an input over the budget is refused with: ``RATE_LIMITED``, naming the budget."""
        return RemoteProtocolError(
            RunErrorCode.RATE_LIMITED,
            f"over the budget of {self.rate:,.0f} bytes of input a second; this input was not read",
        )
