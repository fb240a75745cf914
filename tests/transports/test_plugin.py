"""Transports are found by name through the ``agui.transports`` entry points, ours and others'."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import ClassVar

import pytest
from agui_transports.plugin import (
    ENTRY_POINT_GROUP,
    ServeOptions,
    Transport,
    UnknownTransportError,
    available_transports,
    load_transport,
    next_batch,
    setting,
)
from agui_transports.stdio import StdioTransport
from agui_transports.websocket import WebSocketTransport

from agui_core.app.cli import main
from agui_core.protocol import events as ev
from agui_core.protocol.types import RunAgentInput
from agui_core.runtime import Host, RunContext


class RecordingTransport:
    """A third party's transport: notes what it was given and returns at once."""

    name = "recording"
    calls: ClassVar[list[tuple[Host, ServeOptions]]] = []

    async def serve(self, host: Host, options: ServeOptions) -> None:
        self.calls.append((host, options))
        if options.ready is not None:
            options.ready("nowhere")


@pytest.fixture
def third_party(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An installed distribution (a dist-info folder on sys.path) publishing ``recording``."""
    info = tmp_path / "agui_recording_transport-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: agui-recording-transport\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nrecording = tests.transports.test_plugin:RecordingTransport\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    RecordingTransport.calls.clear()


def test_stdio_and_ws_are_installed() -> None:
    found = available_transports()
    assert {"stdio", "ws"} <= set(found)
    assert isinstance(load_transport("stdio"), StdioTransport)
    assert isinstance(load_transport("ws"), WebSocketTransport)
    for name in ("stdio", "ws"):
        transport = load_transport(name)
        assert isinstance(transport, Transport) and transport.name == name


def test_an_unknown_name_lists_the_installed_transports() -> None:
    with pytest.raises(UnknownTransportError) as raised:
        load_transport("carrier-pigeon")
    assert "stdio" in str(raised.value) and "ws" in str(raised.value)


@pytest.mark.usefixtures("third_party")
def test_a_third_party_transport_is_found_and_served_by_agui_serve() -> None:
    assert isinstance(load_transport("recording"), RecordingTransport)
    argv = [
        "serve", "tests.transports.agents:slow_agent", "--transport", "recording",
        "--address", "over-there", "-o", "colour=blue", "--store", "memory", "--grace", "3",
    ]  # fmt: skip
    assert main(argv) == 0
    [(host, options)] = RecordingTransport.calls
    assert host.agent.__name__ == "slow_agent"
    assert options.address == "over-there"
    assert options.settings == {"colour": "blue"}
    assert options.grace == 3.0
    assert not options.stop.is_set()


def test_setting_reads_a_value_or_gives_the_default() -> None:
    assert setting({"max_size": "10"}, "max_size", int, 5) == 10
    assert setting({}, "max_size", int, 5) == 5
    with pytest.raises(ValueError, match="max_size='ten'"):
        setting({"max_size": "ten"}, "max_size", int, 5)


@pytest.mark.anyio
async def test_next_batch_takes_the_hosts_bursts_and_any_other_stream_one_event_at_a_time() -> None:
    async def agent(ctx: RunContext) -> None:
        for n in range(10):
            await ctx.emit(ev.CustomEvent(name="tick", value=n))

    async with Host(agent) as host:
        events = host.run(RunAgentInput(thread_id="t", run_id="run-1"))
        bursts = []
        while batch := await next_batch(events):
            bursts.append(list(batch))
        expected = [e async for e in host.run(RunAgentInput(thread_id="u", run_id="run-1"))]

    async def wrapped() -> AsyncGenerator[ev.Event, None]:
        # A host that wraps run in a generator of its own, as the conformance kit's broken ones do.
        for event in expected:
            yield event

    stream = wrapped()
    singles = []
    while batch := await next_batch(stream):
        singles.append(list(batch))
    assert len(bursts) < len(expected)
    assert [(e.type, getattr(e, "value", None)) for b in bursts for e in b] == [
        (e.type, getattr(e, "value", None)) for e in expected
    ]
    assert singles == [[event] for event in expected]
