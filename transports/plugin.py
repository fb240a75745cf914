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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Protocol, TypeVar, runtime_checkable

import anyio
import attrs

from agui_core.runtime.host import Host

__all__ = [
    "ENTRY_POINT_GROUP",
    "ServeOptions",
    "Transport",
    "UnknownTransportError",
    "available_transports",
    "load_transport",
    "setting",
]

ENTRY_POINT_GROUP = "agui.transports"
"""The entry-point group transports are published under."""

_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class ServeOptions:
    """What ``agui serve`` tells a transport.

    ``address`` is where to listen, in the transport's own notation (``HOST:PORT`` for
    ``ws``; ``None``: the transport's default). ``settings`` holds the transport's own
    ``KEY=VALUE`` options, as strings (see :func:`setting`). ``stop`` is set when the
    transport should stop taking work; ``grace`` is how many seconds runs in flight then get
    to finish. ``ready``, when given, is called once with a description of where the
    transport serves (for example ``ws://127.0.0.1:8765``), as soon as clients can connect.
    """

    address: str | None = None
    settings: Mapping[str, str] = attrs.field(factory=dict)
    stop: anyio.Event = attrs.field(factory=anyio.Event)
    grace: float = 10.0
    ready: Callable[[str], None] | None = None


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
