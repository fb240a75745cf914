"""``agui episodes``: run an agent through a task file's episodes with a scripted human, and score them.

``agui episodes URL --tasks FILE --humans HUMAN [--trials K] [--concurrency N] [--seed S]
[--json FILE] [--svg FILE] [--token TOKEN] [--header NAME:VALUE ...] [--episode-timeout SECONDS]
[--max-wait SECONDS]`` drives any AG-UI server, over HTTP + SSE (``http(s)://``) or WebSocket
(``ws(s)://``), with this package's clients: every event is checked by the thread's
``ClientMachine`` as it arrives. Each task of ``FILE`` (:mod:`agui_core.episodes.tasks`) is run
``K`` times, each time on a new thread, ``N`` episodes at once; ``HUMAN``
(:mod:`agui_core.episodes.humans`) answers the interrupts. The table goes to standard output;
``--json`` writes every figure and every episode, ``--svg`` a plot of pass^k and latencies.

An episode: the task's prompt opens a thread; while the thread has open interrupts, the human
decides each, waits as long as it says, and the resume carrying its decisions is sent (a
second time too, on a connection of its own, when the human answers twice: the server must
replay it). A resume the client would refuse (an answer after ``expiresAt``) is sent anyway,
for the server to refuse. When the human answers nothing and an interrupt carries an
``expiresAt`` within ``--max-wait`` seconds, the runner waits for it to pass and sends a new
message on the thread: a conforming server closes the expired interrupt and runs it. An
episode that breaks the protocol, loses its connection or outlasts ``--episode-timeout``
counts as broken off (and wrong).

Exit status: 1 when an action ran without an approval or an approval was not honoured exactly
once, 2 when the run could not be made (bad options, a task file that is not one, a server that
cannot be reached), 0 otherwise.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import attrs

from agui_core.episodes import (
    EpisodeLog,
    EpisodeScore,
    EpisodesReport,
    Human,
    Situation,
    Task,
    episode_rng,
    load_tasks,
    parse_human,
    score,
    summarize,
)
from agui_core.episodes.plot import plot_svg
from agui_core.errors import LocalProtocolError
from agui_core.machine.client import RunStatus
from agui_core.protocol.types import ResumeEntry, RunAgentInput

__all__ = ["EpisodesOptions", "add_parser", "main", "run_episodes"]

HANDSHAKES = 100
"""WebSocket handshakes in flight at once: a burst of a thousand overflows a listen backlog."""


@attrs.frozen(kw_only=True)
class EpisodesOptions:
    """How episodes are run (see the module docstring)."""

    trials: int = 1
    concurrency: int = 8
    seed: int = 0
    episode_timeout: float = 120.0
    max_wait: float = 30.0
    max_turns: int = 20
    connect_timeout: float = 60.0
    """How long opening a connection (a WebSocket handshake) may take: a loaded host is slow to accept."""
    token: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)


OpenClient = Callable[[], AbstractAsyncContextManager[Any]]


@asynccontextmanager
async def _clients(url: str, options: EpisodesOptions) -> AsyncIterator[OpenClient]:
    """A factory of clients for ``url``: one connection per episode (and per replayed resume)."""
    if url.startswith(("ws://", "wss://")):
        from agui_transports.client import connect_websocket

        handshakes = anyio.CapacityLimiter(HANDSHAKES)

        @asynccontextmanager
        async def open_ws() -> AsyncIterator[Any]:
            context = connect_websocket(url, token=options.token, max_size=None, open_timeout=options.connect_timeout)
            async with handshakes:
                client = await context.__aenter__()
            try:
                yield client
            except BaseException as exc:
                if not await context.__aexit__(type(exc), exc, exc.__traceback__):
                    raise
            else:
                await context.__aexit__(None, None, None)

        yield open_ws
    elif url.startswith(("http://", "https://")):
        import httpx
        from agui_transports.http_client import HttpClient, HttpConnection

        headers = dict(options.headers)
        if options.token is not None:
            headers["authorization"] = f"Bearer {options.token}"
        limits = httpx.Limits(max_connections=options.concurrency * 2, max_keepalive_connections=options.concurrency)
        base = url if url.endswith("/") else url + "/"
        async with httpx.AsyncClient(
            base_url=base, headers=headers, timeout=httpx.Timeout(options.connect_timeout, read=None), limits=limits
        ) as http:

            @asynccontextmanager
            async def open_http() -> AsyncIterator[Any]:
                client = HttpClient(HttpConnection(http))
                try:
                    yield client
                finally:
                    await client.aclose()

            yield open_http
    else:
        raise ValueError(f"{url!r} is neither http(s):// nor ws(s)://")


async def _run(client: Any, run_input: RunAgentInput, log: EpisodeLog) -> None:
    log.sent(run_input, time.monotonic())
    async for event in client.run(run_input):
        log.received(event, time.monotonic())


def _forced_resume(thread_id: str, run_id: str, replies: Mapping[str, Any]) -> RunAgentInput:
    """The resume for ``replies`` built without the client's checks (for the server to judge)."""
    entries = tuple(
        ResumeEntry(interrupt_id=iid, status=r.status, payload=r.payload, metadata=r.metadata)
        for iid, r in replies.items()
    )
    return RunAgentInput(thread_id=thread_id, run_id=run_id, messages=(), resume=entries)


async def _leave_unanswered(client: Any, thread_id: str, log: EpisodeLog, options: EpisodesOptions) -> None:
    """Nobody answers: wait for the open interrupts' ``expiresAt`` (if near) and write again."""
    from agui_core.machine.client import read_expires_at

    machine = client.machine(thread_id)
    deadlines = [read_expires_at(i.expires_at) for i in machine.open_interrupts if i.expires_at is not None]
    if not deadlines:
        return
    wait = (max(deadlines) - client.clock()).total_seconds() + 0.05
    if wait > options.max_wait:
        return
    await anyio.sleep(max(0.0, wait))
    await _run(client, client.new_input(thread_id, "Are you still there?"), log)


async def _drive(
    open_client: OpenClient, client: Any, log: EpisodeLog, human: Human, rng: Any, options: EpisodesOptions
) -> None:
    task = log.task
    thread_id = f"episode-{client.new_id()}"
    first = client.new_input(thread_id, task.prompt, state=task.state, forwarded_props=task.forwarded_props)
    await _run(client, first, log)
    forms = 0
    for _ in range(options.max_turns):
        machine = client.machine(thread_id)
        if not machine.awaiting_input:
            return
        if machine.legacy_interrupts:
            for interrupt in machine.open_interrupts:
                log.interrupt_announced(interrupt.id, interrupt.tool_call_id, time.monotonic())
        decisions = []
        for interrupt in machine.open_interrupts:
            route = machine.route(interrupt)
            situation = Situation(
                interrupt=interrupt, route=route, task=task, trial=log.trial, form_index=forms, rng=rng
            )
            decision = human.decide(situation)
            if decision is not None and route.kind == "form" and decision.reply.status == "resolved":
                forms += 1
            decisions.append((interrupt.id, decision))
        if any(d is None for _, d in decisions):
            await _leave_unanswered(client, thread_id, log, options)
            return
        answered = [(iid, d) for iid, d in decisions if d is not None]
        delay = max(d.delay for _, d in answered)
        if delay > 0:
            await anyio.sleep(delay)
        replies = {iid: d.reply for iid, d in answered}
        try:
            resume = client.resume(thread_id, replies)
        except LocalProtocolError:
            resume = _forced_resume(thread_id, f"run-{client.new_id()}", replies)
        await _run(client, resume, log)
        for _ in range(max(d.times for _, d in answered) - 1):
            async with open_client() as other:
                await _run(other, attrs.evolve(resume, run_id=f"run-{other.new_id()}"), log)
        if machine.run_status in (RunStatus.REJECTED, RunStatus.ERRORED):
            return


async def _episode(
    open_client: OpenClient, task: Task, trial: int, human: Human, options: EpisodesOptions
) -> EpisodeScore:
    rng = episode_rng(options.seed, task.id, trial)
    human = human.for_episode(rng)
    log = EpisodeLog(task=task, trial=trial, human=human.name)
    try:
        with anyio.move_on_after(options.episode_timeout) as bound:
            async with open_client() as client:
                await _drive(open_client, client, log, human, rng, options)
        if bound.cancelled_caught:
            log.problem = f"no end within {options.episode_timeout:g} s"
    except Exception as exc:  # a server under test may fail in any way; the episode records how
        rule = getattr(exc, "rule", None)
        log.problem = f"{type(exc).__name__}{f' ({rule})' if rule else ''}: {exc}"
    return score(log)


async def run_episodes(
    url: str, tasks: Sequence[Task], human: Human, options: EpisodesOptions = EpisodesOptions()
) -> EpisodesReport:
    """Run every task of ``tasks`` ``options.trials`` times against ``url`` with ``human``, and score them."""
    if options.trials < 1 or options.concurrency < 1:
        raise ValueError("trials and concurrency are at least 1")
    jobs = iter(enumerate((task, trial) for trial in range(options.trials) for task in tasks))
    scores: dict[int, EpisodeScore] = {}

    async def work(open_client: OpenClient) -> None:
        for index, (task, trial) in jobs:
            scores[index] = await _episode(open_client, task, trial, human, options)

    started = time.monotonic()
    async with _clients(url, options) as open_client, anyio.create_task_group() as group:
        for _ in range(min(options.concurrency, len(tasks) * options.trials)):
            group.start_soon(work, open_client)
    seconds = time.monotonic() - started
    labels = {"url": url, "human": human.name, "trials": str(options.trials), "seed": str(options.seed)}
    return summarize([scores[i] for i in sorted(scores)], seconds=seconds, labels=labels)


def _raise_open_files(needed: int) -> None:
    """The soft limit on open files raised toward ``needed`` (as far as the hard limit allows)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (needed if hard == resource.RLIM_INFINITY else min(needed, hard), hard)
        )


def add_parser(commands: Any) -> None:
    """Add ``episodes`` to the ``agui`` subcommands."""
    parser = commands.add_parser("episodes", help="run an agent through tasks with a scripted human and score it")
    parser.add_argument("url", metavar="URL", help="the agent's endpoint: http(s):// (HTTP + SSE) or ws(s)://")
    parser.add_argument("--tasks", required=True, metavar="FILE", help="the task file (JSON lines)")
    parser.add_argument("--humans", required=True, metavar="HUMAN", help="the scripted human: approve, deny:TOOL, ...")
    parser.add_argument("--trials", type=int, default=1, metavar="K", help="runs of each task (default 1)")
    parser.add_argument("--concurrency", type=int, default=8, metavar="N", help="episodes at once (default 8)")
    parser.add_argument("--seed", type=int, default=0, help="the seed of the humans' random choices (default 0)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures and every episode as JSON")
    parser.add_argument("--svg", metavar="FILE", help="also plot pass^k and the latency percentiles")
    parser.add_argument("--token", help="sent as Authorization: Bearer TOKEN")
    parser.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="sent with every request (HTTP)"
    )
    parser.add_argument("--episode-timeout", type=float, default=120.0, metavar="SECONDS", help="bound on one episode")
    parser.add_argument(
        "--max-wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="longest wait for an unanswered interrupt to expire",
    )


def main(args: argparse.Namespace) -> int:
    """``agui episodes`` with parsed ``args``; returns the exit status."""
    import orjson

    def fail(message: str) -> int:
        print(f"agui episodes: {message}", file=sys.stderr)
        return 2

    headers: dict[str, str] = {}
    for pair in args.header:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            return fail(f"--header {pair!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    try:
        tasks = load_tasks(args.tasks)
        human = parse_human(args.humans)
    except (OSError, ValueError, ImportError, AttributeError) as exc:
        return fail(str(exc))
    if args.trials < 1 or args.concurrency < 1:
        return fail("--trials and --concurrency are at least 1")
    if not args.url.startswith(("http://", "https://", "ws://", "wss://")):
        return fail(f"{args.url!r} is neither http(s):// nor ws(s)://")
    options = EpisodesOptions(
        trials=args.trials,
        concurrency=args.concurrency,
        seed=args.seed,
        episode_timeout=args.episode_timeout,
        max_wait=args.max_wait,
        token=args.token,
        headers=headers,
    )
    _raise_open_files(2 * args.concurrency + 256)
    report = anyio.run(run_episodes, args.url, tasks, human, options)
    if all(e.problem is not None and e.runs == 0 for e in report.episodes):
        return fail(f"no episode got a run started at {args.url}: {report.episodes[0].problem}")
    print(report.table(), end="")
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
    if args.svg:
        Path(args.svg).write_text(plot_svg([report]))
    return 0 if report.ok else 1
