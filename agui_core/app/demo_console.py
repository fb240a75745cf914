"""``agui demo --console``: the example agents over HTTP with the approval console, and one
thread of each scenario left waiting in its inbox."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import TextIO

from agui_core.app.demo import SCENARIOS
from agui_core.app.examples_host import CONSOLE_PORT, DEFAULT_STORE, exit_status, serve_examples
from agui_core.store.base import StoreError

__all__ = ["CONSOLE_PORT", "run_console"]


def run_console(*, store: str | Path = DEFAULT_STORE, port: int = CONSOLE_PORT, out: TextIO | None = None) -> int:
    """Host the example agents over HTTP with the approval console until Ctrl-C; the exit status.

    One thread of each scenario is started and left waiting, so the console's inbox has an
    approval, the quarterly form and three parallel approvals in it; its address is printed.
    Without an authenticator the host listens on 127.0.0.1 only and the page needs no token.
    0: stopped by Ctrl-C; 2: the host could not start (a one-line message on standard error).
    """
    import anyio
    from anyio.from_thread import start_blocking_portal

    out = out if out is not None else sys.stdout
    suffix = uuid.uuid4().hex  # 122 random bits: a thread id is taken by whoever uses it first
    try:
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(serve_examples(store, port=port, transport="http")) as (url, _),
        ):
            portal.call(_start_waiting_threads, url, suffix)
            print(f"agui demo: the approval console: {url}/console/", file=out)
            print(
                f"agui demo: {len(SCENARIOS)} threads wait there for you (thread demo-NAME-{suffix}); "
                f"threads kept in {store} (SQLite); Ctrl-C stops",
                file=out,
                flush=True,
            )
            portal.call(anyio.sleep_forever)
    except (KeyboardInterrupt, OSError, StoreError, BaseExceptionGroup) as exc:
        return exit_status(exc, out, ctrl_c=("\nagui demo: stopped", 0))
    return 0


async def _start_waiting_threads(url: str, suffix: str) -> None:
    """Start one thread of each scenario and leave its interrupts open, for the console."""
    from agui_transports.http_client import connect_http

    async with connect_http(url) as client:
        for scenario in SCENARIOS:
            run_input = client.new_input(
                f"demo-{scenario.name}-{suffix}", scenario.request, forwarded_props={"scenario": scenario.name}
            )
            async for _ in client.run(run_input):
                pass
