"""``agui conformance`` changes nothing by surprise (issue 25): without ``--approve`` no gated
tool runs, and whatever happens (a check fails, the kit is interrupted midway) every thread it
opened is left with no open interrupt: the host's inbox holds nothing of the kit afterwards.

Through the real transports against a served host whose ``sendEmail`` (approval-gated) writes a
file each time it runs.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from agui_core.conformance import CATALOGUE, Options, ProbeTransport, Status, run_conformance, transport_for
from agui_core.runtime import Host
from agui_core.runtime.auth import ANONYMOUS
from tests.conformance import broken
from tests.conformance.agents import marking_tools
from tests.conformance.servers import TRANSPORTS, make_host, served, serving

pytestmark = pytest.mark.anyio

OPTIONS = Options(expiry_wait=5.0, timeout=10.0, drain=0.02)
NEEDS_A_TOOL = ("resume.tool-results", "r5.concurrent")


async def _inbox(host: Host) -> list[tuple[str, list[str]]]:
    return [(w.thread_id, [o.interrupt.id for o in w.interrupts]) for w in await host.inbox(ANONYMOUS)]


async def _kit(host: Host, transport: str, options: Options) -> tuple[Any, list[tuple[str, list[str]]]]:
    """The kit's report against ``host`` served over ``transport``, and the host's inbox after it."""
    async with serving(host, transport) as url:
        probe = transport_for(url)
        try:
            report = await run_conformance(probe, options)
        finally:
            await probe.aclose()
        return report, await _inbox(host)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_without_approve_no_gated_tool_runs_and_nothing_is_left_open(tmp_path: Path, transport: str) -> None:
    host = make_host(tools=marking_tools(tmp_path))
    report, inbox = await _kit(host, transport, OPTIONS)
    assert list(tmp_path.iterdir()) == [], "a gated tool ran without --approve"
    assert inbox == [], report.table()
    assert report.left_open == {} and not report.approve
    # The approvals were denied, the form answered; the report says so and what it skipped.
    assert report.answers[:2] == tuple(f'#{n} tool_call: denied with {{"approved":false}}' for n in (0, 1))
    assert report.answers[2].startswith("#2 input_required: answered with {")
    assert report.skipped == NEEDS_A_TOOL
    for result in report.results:
        if result.spec.id in NEEDS_A_TOOL:
            assert result.status is Status.NOT_APPLICABLE and result.detail.startswith("needs --approve")
        else:
            assert result.status is Status.PASS, report.table()
    table = report.table()
    assert "without --approve: the kit denied or cancelled every approval" in table
    assert f"Skipped without --approve (they need a tool to run): {', '.join(NEEDS_A_TOOL)}" in table
    assert "every thread the kit opened is left with no open interrupt" in table
    document = report.to_json()
    assert document["skippedWithoutApprove"] == list(NEEDS_A_TOOL) and document["leftOpen"] == {}


async def test_with_approve_the_tool_running_checks_run(tmp_path: Path) -> None:
    host = make_host(tools=marking_tools(tmp_path))
    report, inbox = await _kit(host, "http", Options(expiry_wait=5.0, timeout=10.0, drain=0.02, approve=True))
    assert report.ok and report.skipped == () and report.approve, report.table()
    assert {r.status for r in report.results} == {Status.PASS}
    assert len(report.results) == len(CATALOGUE)
    assert list(tmp_path.iterdir()), "--approve let no tool run"
    assert inbox == []


async def test_a_failing_check_leaves_nothing_open_either(tmp_path: Path) -> None:
    # A host that starts the agent afresh on a plain input while interrupts are pending: the
    # kit's R4 probe leaves that thread interrupted again, and the kit must cancel that too.
    host = make_host(broken.AcceptsPlainInput, tools=marking_tools(tmp_path))
    report, inbox = await _kit(host, "ws", OPTIONS)
    assert {r.spec.id for r in report.failed} == {"r4.plain-input"}, report.table()
    assert inbox == [] and report.left_open == {}
    assert list(tmp_path.iterdir()) == []


class _StopMidway:
    """The real transport, but the suite around it is cancelled as soon as the ``at``-th
    connection has received its first frame: the kit is interrupted in the middle of a response."""

    def __init__(self, inner: ProbeTransport, at: int, scope: anyio.CancelScope) -> None:
        self.inner, self.at, self.scope = inner, at, scope
        self.name, self.url = inner.name, inner.url
        self.connections = 0

    async def connect(self) -> Any:
        self.connections += 1
        connection = await self.inner.connect()
        if self.connections != self.at:
            return connection
        scope = self.scope

        class Cut:
            async def send(self, body: bytes) -> None:
                await connection.send(body)

            async def receive(self) -> bytes:
                frame = await connection.receive()
                scope.cancel()
                return frame

            async def aclose(self) -> None:
                await connection.aclose()

        return Cut()

    async def get_json(self, path: str) -> Any:
        return await self.inner.get_json(path)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.parametrize("at", [1, 6])
async def test_interrupted_midway_it_still_cancels_what_it_opened(tmp_path: Path, at: int) -> None:
    # at=1: cut in the main run's first response; at=6: several threads interrupted by then.
    host = make_host(tools=marking_tools(tmp_path))
    async with serving(host, "http") as url:
        probe = transport_for(url)
        try:
            with anyio.CancelScope() as scope:
                stopping = _StopMidway(probe, at, scope)
                await run_conformance(stopping, OPTIONS)
            assert scope.cancelled_caught and stopping.connections > at, "the kit was not interrupted midway"
        finally:
            await probe.aclose()
        inbox = await _inbox(host)
    assert inbox == []
    assert list(tmp_path.iterdir()) == []


def _inbox_over_http(url: str) -> list[Any]:
    """The host's inbox as the approval console reads it: ``GET /inbox`` beside the endpoint."""
    response = httpx.get(url.rstrip("/") + "/inbox", timeout=10)
    response.raise_for_status()
    threads: list[Any] = response.json()["threads"]
    return threads


@pytest.mark.parametrize(
    ("stop", "status", "said"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_stopped_command_still_cancels_what_it_opened(tmp_path: Path, stop: int, status: int, said: str) -> None:
    # The command as a process, stopped (Ctrl-C, or SIGTERM as a service manager stops it) once
    # a thread of the kit waits in the host's inbox: it exits, having cancelled every interrupt
    # it opened.
    with served(tools=marking_tools(tmp_path)) as url:
        command = [sys.executable, "-m", "agui_core.app.cli", "conformance", url, "--expiry-wait", "5"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            # The kit answers most of its interrupts at once; the one its expiry check leaves
            # open for --expiry-wait is the one to stop it on: a thread seen waiting for half a
            # second on end (a look at the inbox after a first sighting could already find it
            # answered, and stopping on it would test nothing).
            deadline, waiting_since = time.monotonic() + 30, None
            while process.poll() is None and time.monotonic() < deadline:
                if not _inbox_over_http(url):
                    waiting_since = None
                elif waiting_since is None:
                    waiting_since = time.monotonic()
                elif time.monotonic() - waiting_since >= 0.5:
                    break
                time.sleep(0.01)
            assert process.poll() is None, "the kit ended before anything could be interrupted"
            assert waiting_since is not None, "no thread of the kit ever waited in the inbox"
            process.send_signal(stop)
            out, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
        assert process.returncode == status, (out, err)
        assert f"{said}; the interrupts the kit opened were cancelled" in err
        assert _inbox_over_http(url) == []
    assert list(tmp_path.iterdir()) == []
