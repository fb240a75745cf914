"""The demo's host: the example agents of :mod:`agui_core.examples` over WebSocket or HTTP,
on localhost, with threads in a SQLite file.

``agui demo`` plays its scenarios against it; ``agui demo --console`` leaves threads waiting
in it for the approval console.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, TextIO

from agui_core.store.base import StoreError
from agui_core.store.sqlite import SqliteThreadStore

__all__ = ["CONSOLE_PORT", "DEFAULT_STORE", "exit_status", "serve_examples"]

DEFAULT_STORE: Final = "agui-demo.sqlite3"
"""Where the demo keeps its threads, relative to the current directory."""
CONSOLE_PORT: Final = 8770
"""Where ``agui demo --console`` serves the approval console unless ``--port`` says otherwise."""


@asynccontextmanager
async def serve_examples(
    store_path: str | Path, *, port: int = 0, transport: str = "ws"
) -> AsyncIterator[tuple[str, SqliteThreadStore]]:
    """Host the example agents over ``transport`` (``ws`` or ``http``) on ``127.0.0.1:port``
    (0: a free port) with threads in the SQLite file ``store_path``; yields the URL and the store."""
    from agui_transports.websocket import WebSocketServer

    from agui_core.examples import TOOLS, assistant
    from agui_core.runtime.host import Host

    store = SqliteThreadStore(store_path)
    async with store, Host(assistant, store=store, tools=TOOLS) as host:
        await store.load("agui-demo")  # opens the file now: a store that cannot be opened stops the demo here
        if transport == "http":
            async with _http_server(host, port) as url:
                yield url, store
            return
        async with WebSocketServer(host, address="127.0.0.1", port=port, grace=5.0) as server:
            yield server.url, store


@asynccontextmanager
async def _http_server(host: Any, port: int) -> AsyncIterator[str]:
    """The ``http`` transport serving ``host`` on ``127.0.0.1:port``; yields its URL."""
    import anyio
    from agui_transports.http import HttpTransport
    from agui_transports.plugin import ServeOptions

    where: list[str] = []
    ready, stop = anyio.Event(), anyio.Event()

    def serving(url: str) -> None:
        where.append(url)
        ready.set()

    options = ServeOptions(address=f"127.0.0.1:{port}", stop=stop, grace=5.0, ready=serving, loopback_only=True)
    async with anyio.create_task_group() as group:
        group.start_soon(HttpTransport().serve, host, options)
        await ready.wait()
        try:
            yield where[0]
        finally:
            stop.set()


def exit_status(exc: BaseException, out: TextIO, *, ctrl_c: tuple[str, int]) -> int:
    """The exit status of a demo command that ``exc`` stopped, said in a line.

    The host's task group wraps what crosses it (a Ctrl-C at a prompt included): the one
    exception it stands for is what counts. Ctrl-C prints ``ctrl_c``'s line on ``out`` and
    gives its status; a port taken or a store that cannot be opened is one line on standard
    error, as a command should say it (2); anything else is raised again.
    """
    cause = exc
    while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
        cause = cause.exceptions[0]
    if isinstance(cause, KeyboardInterrupt):
        print(ctrl_c[0], file=out)
        return ctrl_c[1]
    if not isinstance(cause, OSError | StoreError):
        raise exc
    print(f"agui demo: {cause}", file=sys.stderr)
    return 2
