"""Hosts served in process for the kit to test: over WebSocket and over HTTP + SSE (uvicorn)."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from agui_transports.http import HttpTransport
from agui_transports.plugin import ServeOptions
from agui_transports.websocket import WebSocketServer

from agui_core.runtime import Host
from agui_core.store import MemoryThreadStore
from tests.conformance.agents import TOOLS, conformance_agent

__all__ = ["TRANSPORTS", "make_host", "served", "serving"]

TRANSPORTS = ("ws", "http")


def make_host(host_class: Callable[..., Host] = Host, tools: Sequence[Any] = TOOLS) -> Host:
    """A host of :func:`conformance_agent` over a memory store (``host_class``: a broken one;
    ``tools``: its ``sendEmail``, :func:`~tests.conformance.agents.marking_tools` say)."""
    return host_class(conformance_agent, store=MemoryThreadStore(), tools=list(tools))


@asynccontextmanager
async def serving(host: Host, transport: str) -> AsyncIterator[str]:
    """``host`` served on a free loopback port over ``transport``; yields the URL to test."""
    async with host:
        if transport == "ws":
            async with WebSocketServer(host, port=0, grace=1.0) as server:
                yield server.url
            return
        stop = anyio.Event()
        where: list[str] = []
        ready = anyio.Event()

        def on_ready(url: str) -> None:
            where.append(url)
            ready.set()

        options = ServeOptions(address="127.0.0.1:0", stop=stop, grace=1.0, ready=on_ready)
        async with anyio.create_task_group() as group:
            group.start_soon(HttpTransport().serve, host, options)
            with anyio.fail_after(10):
                await ready.wait()
            try:
                yield where[0]
            finally:
                stop.set()


@contextmanager
def served(host_class: type[Host] = Host, transport: str = "http", tools: Sequence[Any] = TOOLS) -> Iterator[str]:
    """A host served from a thread of its own, so the command can run its own event loop."""
    where: list[str] = []
    up, down = threading.Event(), threading.Event()

    async def serve() -> None:
        async with serving(make_host(host_class, tools), transport) as url:
            where.append(url)
            up.set()
            while not down.is_set():
                await anyio.sleep(0.02)

    thread = threading.Thread(target=anyio.run, args=(serve,), daemon=True)
    thread.start()
    try:
        assert up.wait(10), "the server did not start"
        yield where[0]
    finally:
        down.set()
        thread.join(10)
