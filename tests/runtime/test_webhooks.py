"""Webhooks (agui_core.runtime.webhooks): what a notice says, how it is signed, that a failed
delivery is tried again and a delivered one never, through real hosts and real receivers on
loopback, with the receiver the docs give, and with two hosts on one PostgreSQL store."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx
import orjson
import pytest
from agui_transports.client import connect_websocket
from agui_transports.http_client import connect_http

from agui_core.machine.client import deny
from agui_core.machine.record import OpenInterrupt, Proposal, ResolvedInterrupt
from agui_core.protocol.types import Interrupt, ResumeEntry, RunAgentInput
from agui_core.runtime import Host
from agui_core.runtime.webhooks import Webhooks, notices, signature
from agui_core.store import MemoryThreadStore
from agui_core.store.base import WaitingThread
from tests.transports import agents
from tests.transports.served import ROOT, agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 60.0
SECRET = b"a-webhook-secret-of-32-bytes-000"
NOW = datetime(2026, 12, 4, 12, tzinfo=UTC)


# -- what a notice says ---------------------------------------------------------------------


def opened(iid: str, run_id: str, *, expires_in: float | None = None) -> OpenInterrupt:
    expires = None if expires_in is None else (NOW + timedelta(seconds=expires_in)).isoformat()
    return OpenInterrupt(
        interrupt=Interrupt(
            id=iid, reason="tool_call", message="Send it?", tool_call_id=f"c-{iid}", expires_at=expires
        ),
        run_id=run_id,
        raised_at=NOW.isoformat(),
        proposal=Proposal(tool_call_id=f"c-{iid}", name="sendEmail", arguments='{"to": "secret@example.com"}'),
    )


def test_a_run_raising_two_interrupts_is_one_notice_and_the_soon_expiring_one_a_reminder() -> None:
    waiting = [
        WaitingThread(thread_id="t", owner="ann", interrupts=(opened("i1", "r1", expires_in=600), opened("i2", "r1")))
    ]
    found = notices(waiting, [], now=NOW, remind_before=timedelta(hours=1))
    assert sorted((n.kind, n.key) for n in found) == [
        ("interrupt.expiring", "expiring:t:i1"),
        ("interrupt.raised", "raised:t:r1"),
    ]
    raised = next(n for n in found if n.kind == "interrupt.raised")
    body = orjson.loads(raised.body(console_url="https://agents.example.com/console/"))
    assert body == {
        "id": "raised:t:r1",
        "type": "interrupt.raised",
        "threadId": "t",
        "owner": "ann",
        "runId": "r1",
        "interrupts": [
            {
                "id": "i1",
                "reason": "tool_call",
                "toolName": "sendEmail",
                "expiresAt": (NOW + timedelta(seconds=600)).isoformat(),
                "raisedAt": NOW.isoformat(),
            },
            {
                "id": "i2",
                "reason": "tool_call",
                "toolName": "sendEmail",
                "raisedAt": NOW.isoformat(),
            },
        ],
        "link": "https://agents.example.com/console/#thread=t",
    }
    assert b"secret@example.com" not in raised.body(console_url=None)  # never the tool's arguments


def test_no_reminder_before_its_time_and_expired_once_past() -> None:
    far = [WaitingThread(thread_id="t", owner="ann", interrupts=(opened("i1", "r1", expires_in=7200),))]
    assert [n.kind for n in notices(far, [], now=NOW, remind_before=timedelta(hours=1))] == ["interrupt.raised"]
    past = [WaitingThread(thread_id="t", owner="ann", interrupts=(opened("i1", "r1", expires_in=-1),))]
    kinds = sorted(n.key for n in notices(past, [], now=NOW, remind_before=timedelta(hours=1)))
    assert kinds == ["expired:t:i1", "raised:t:r1"]


def test_the_answers_of_one_resume_are_one_decided_notice_without_their_payloads() -> None:
    def line(iid: str, status: str, answered_in: str | None) -> tuple[str, ResolvedInterrupt]:
        base = opened(iid, "r1")
        return "t", ResolvedInterrupt(
            interrupt=base.interrupt,
            run_id="r1",
            raised_at=base.raised_at,
            status=status,  # type: ignore[arg-type]
            payload={"approved": True, "editedArgs": {"to": "boss@example.com"}},
            answered_in=answered_in,
            answered_at=NOW.isoformat(),
            proposal=base.proposal,
        )

    closed = [line("i1", "resolved", "r2"), line("i2", "cancelled", "r2"), line("i3", "expired", None)]
    found = notices([], closed, now=NOW, remind_before=timedelta(hours=1), owners={"t": "ann"})
    assert sorted((n.kind, n.key) for n in found) == [
        ("interrupt.decided", "decided:t:r2"),
        ("interrupt.expired", "expired:t:i3"),
    ]
    decided = next(n for n in found if n.kind == "interrupt.decided")
    body = orjson.loads(decided.body(console_url=None))
    assert [(i["id"], i["status"]) for i in body["interrupts"]] == [("i1", "resolved"), ("i2", "cancelled")]
    assert body["owner"] == "ann" and body["runId"] == "r2"
    assert b"boss@example.com" not in decided.body(console_url=None)  # never the answer


def test_the_signature_is_the_hmac_of_the_timestamp_and_the_body() -> None:
    expected = hmac.new(SECRET, b"1700000000." + b'{"a":1}', hashlib.sha256).hexdigest()
    assert signature(SECRET, "1700000000", b'{"a":1}') == f"sha256={expected}"


@pytest.mark.parametrize(
    ("urls", "secret", "message"),
    [([], SECRET, "at least one URL"), (["ftp://x"], SECRET, "http"), (["http://x"], b"short", "16 bytes")],
)
def test_webhooks_refuse_what_cannot_work(urls: list[str], secret: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Webhooks(urls, secret=secret)


# -- a receiver on loopback that fails first --------------------------------------------------


class Receiver:
    """An HTTP/1.1 receiver on 127.0.0.1: answers each request with the next status of ``answers``
    (then 204), and keeps what it got."""

    def __init__(self, answers: list[int]) -> None:
        self.answers = answers
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.url = ""

    async def _serve_one(self, stream: anyio.abc.ByteStream) -> None:
        async with stream:
            data = b""
            while b"\r\n\r\n" not in data:
                data += await stream.receive()
            head, _, body = data.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")[1:]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
            while len(body) < int(headers.get("content-length", "0")):
                body += await stream.receive()
            self.got.append((headers, body))
            status = self.answers.pop(0) if self.answers else 204
            await stream.send(f"HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".encode())

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Receiver]:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self.url = f"http://127.0.0.1:{port}/hooks"
        async with listener, anyio.create_task_group() as group:
            group.start_soon(listener.serve, self._serve_one)
            yield self
            group.cancel_scope.cancel()


def verified(headers: dict[str, str], body: bytes) -> bool:
    return hmac.compare_digest(headers["x-agui-signature"], signature(SECRET, headers["x-agui-timestamp"], body))


async def test_a_delivery_the_receiver_fails_is_tried_again_and_then_never_more() -> None:
    with anyio.fail_after(LIMIT):
        async with Receiver([500]).running() as receiver:
            hooks = Webhooks([receiver.url], secret=SECRET, first_retry=0.2, every=0.2)
            async with Host(
                agents.approval_agent, store=MemoryThreadStore(), tools=agents.TOOLS, webhooks=hooks
            ) as host:
                events = [e async for e in host.run(RunAgentInput(thread_id="t", run_id="r1"))]
                assert events[-1].type == "RUN_FINISHED"
                while len(receiver.got) < 2:
                    await anyio.sleep(0.05)
                await anyio.sleep(1.5)  # several more looks: nothing is sent a third time
    (first_headers, first_body), (second_headers, second_body) = receiver.got
    assert [first_headers["idempotency-key"], second_headers["idempotency-key"]] == ["raised:t:r1"] * 2
    assert first_body == second_body and verified(first_headers, first_body) and verified(second_headers, second_body)
    assert abs(int(second_headers["x-agui-timestamp"]) - time.time()) < 60
    assert orjson.loads(first_body)["type"] == "interrupt.raised"
    assert hooks.delivered == 1


async def test_a_host_on_a_store_without_a_ledger_is_refused() -> None:
    class Bare:  # a store of someone else's, without claim_delivery
        pass

    with pytest.raises(ValueError, match="ledger of deliveries"):
        Host(agents.approval_agent, store=Bare(), webhooks=Webhooks(["http://x"], secret=SECRET))  # type: ignore[arg-type]


# -- agui serve, and the receiver of docs/ -------------------------------------------------------


@asynccontextmanager
async def docs_receiver(secret_file: Path) -> AsyncIterator[tuple[str, list[dict[str, object]]]]:
    """``python docs/webhook_receiver.py --port 0 --secret-file FILE`` as the docs say; its URL and
    the notices it printed (read as they come)."""
    command = [sys.executable, "docs/webhook_receiver.py", "--port", "0", "--secret-file", str(secret_file)]
    process = await anyio.open_process(command, cwd=str(ROOT), stdin=subprocess.DEVNULL)
    printed: list[dict[str, object]] = []
    errors = bytearray()

    async def read_out() -> None:
        assert process.stdout is not None
        pending = b""
        async for chunk in process.stdout:
            pending += chunk
            *lines, pending = pending.split(b"\n")
            printed.extend(orjson.loads(line) for line in lines if line)

    async def read_err() -> None:
        assert process.stderr is not None
        async for chunk in process.stderr:
            errors.extend(chunk)

    async with process, anyio.create_task_group() as group:
        group.start_soon(read_out)
        group.start_soon(read_err)
        with anyio.fail_after(20):
            while b"listening on " not in errors:
                await anyio.sleep(0.05)
        url = errors.decode().split("listening on ", 1)[1].split()[0]
        try:
            yield url, printed
        finally:
            process.terminate()
            group.cancel_scope.cancel()


def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "webhook.secret"
    path.write_bytes(SECRET + b"\n")
    path.chmod(0o600)
    return path


async def test_agui_serve_notifies_the_docs_receiver_of_a_raise_and_a_decision(tmp_path: Path) -> None:
    secret = secret_file(tmp_path)
    with anyio.fail_after(LIMIT):
        async with docs_receiver(secret) as (hook, printed):
            options = (
                "--http", "127.0.0.1:0", "--store", "memory", "--webhook", hook,
                "--webhook-secret-file", str(secret), "--webhook-console", "http://127.0.0.1:8000/console/",
            )  # fmt: skip
            async with agui_serve("tests.transports.agents:approval_agent", *options, tmp=tmp_path) as served:
                async with connect_http(served.url) as client:
                    await client.collect(client.new_input("mail", "Send the report"))
                    machine = client.machine("mail")
                    (interrupt,) = machine.open_interrupts
                    while not printed:
                        await anyio.sleep(0.05)
                    await client.collect(client.resume("mail", {interrupt.id: deny()}))
                while len(printed) < 2:
                    await anyio.sleep(0.05)
            # A forged notice, and a true one replayed ten minutes late, are refused by the receiver.
            body = orjson.dumps({"type": "interrupt.raised"})
            late = str(int(time.time()) - 600)
            async with httpx.AsyncClient() as http:
                forged = await http.post(
                    hook, content=body, headers={"x-agui-timestamp": late, "x-agui-signature": "sha256=00"}
                )
                replayed = await http.post(
                    hook,
                    content=body,
                    headers={"x-agui-timestamp": late, "x-agui-signature": signature(SECRET, late, body)},
                )
            assert forged.status_code == replayed.status_code == 401
    raised, decided = printed
    assert raised["type"] == "interrupt.raised" and raised["threadId"] == "mail" and raised["owner"] == "anonymous"
    assert raised["link"] == "http://127.0.0.1:8000/console/#thread=mail"
    assert [i["id"] for i in raised["interrupts"]] == [interrupt.id]  # type: ignore[index]
    assert decided["type"] == "interrupt.decided"
    assert [(i["id"], i["status"]) for i in decided["interrupts"]] == [(interrupt.id, "resolved")]  # type: ignore[index]


async def test_agui_serve_refuses_a_webhook_without_its_secret(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:approval_agent",
        "--http", "127.0.0.1:0", "--store", "memory", "--webhook", "http://127.0.0.1:9/",
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "--webhook needs --webhook-secret-file FILE" in done.stderr


async def test_two_hosts_on_one_postgresql_store_deliver_each_notice_once(tmp_path: Path, postgres_url: str) -> None:
    secret = secret_file(tmp_path)
    with anyio.fail_after(LIMIT * 2):
        async with docs_receiver(secret) as (hook, printed):
            options = (
                "--ws", "127.0.0.1:0", "--store", postgres_url, "--webhook", hook, "--webhook-secret-file", str(secret),
            )  # fmt: skip
            target = "tests.transports.agents:approval_agent"
            async with (
                agui_serve(target, *options, tmp=tmp_path) as one,
                agui_serve(target, *options, tmp=tmp_path) as two,
            ):
                async with connect_websocket(one.url) as client:
                    first = client.new_input("shared", "Send the report")
                    await client.collect(first)
                    (interrupt,) = client.machine("shared").open_interrupts
                while not printed:
                    await anyio.sleep(0.05)
                async with connect_websocket(two.url) as client:  # the answer goes through the other host
                    entry = ResumeEntry(interrupt_id=interrupt.id, status="resolved", payload={"approved": True})
                    resumed = await client.collect(
                        RunAgentInput(thread_id="shared", run_id="r-resume", resume=(entry,))
                    )
                    assert resumed[-1].type == "RUN_FINISHED"
                while len(printed) < 2:
                    await anyio.sleep(0.05)
                await anyio.sleep(12)  # both hosts have looked at the store twice since (every 5 s)
    assert [(n["type"], n["id"]) for n in printed] == [
        ("interrupt.raised", f"raised:shared:{first.run_id}"),
        ("interrupt.decided", "decided:shared:r-resume"),
    ]


async def test_with_tracing_a_notice_carries_the_trace_context_of_its_run() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agui_core.runtime.tracing import TracingObserver

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with anyio.fail_after(LIMIT):
        async with Receiver([]).running() as receiver:
            hooks = Webhooks([receiver.url], secret=SECRET, every=0.2)
            async with Host(
                agents.approval_agent,
                store=MemoryThreadStore(),
                tools=agents.TOOLS,
                webhooks=hooks,
                observer=TracingObserver(provider),
            ) as host:
                events = [e async for e in host.run(RunAgentInput(thread_id="t", run_id="r1"))]
                assert events[-1].type == "RUN_FINISHED"
                while not receiver.got:
                    await anyio.sleep(0.05)
    (run_span,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent"]
    assert run_span.context is not None
    headers, _ = receiver.got[0]
    version, trace_id, span_id, _flags = headers["traceparent"].split("-")
    assert (version, int(trace_id, 16), int(span_id, 16)) == ("00", run_span.context.trace_id, run_span.context.span_id)


def test_an_approval_s_message_which_quotes_the_arguments_stays_out_of_the_notice() -> None:
    quoted = OpenInterrupt(
        interrupt=Interrupt(id="i1", reason="tool_call", message='Run send_email on "ceo-private@example.com"?'),
        run_id="r1",
        proposal=Proposal(tool_call_id="c1", name="send_email", arguments='{"to": "ceo-private@example.com"}'),
    )
    question = OpenInterrupt(
        interrupt=Interrupt(id="i2", reason="input_required", message="Which quarter?"), run_id="r1"
    )
    (notice,) = notices(
        [WaitingThread(thread_id="t", owner="ann", interrupts=(quoted, question))],
        [],
        now=NOW,
        remind_before=timedelta(hours=1),
    )
    body = notice.body(console_url=None)
    assert b"ceo-private" not in body
    assert [i.get("message") for i in orjson.loads(body)["interrupts"]] == [None, "Which quarter?"]


def test_ids_with_colons_never_make_two_notices_one_key_and_the_link_is_escaped() -> None:
    def raised(thread_id: str, run_id: str) -> str:
        waiting = [WaitingThread(thread_id=thread_id, interrupts=(opened("i", run_id),))]
        (notice,) = notices(waiting, [], now=NOW, remind_before=timedelta(hours=1))
        return notice.key

    assert raised("a:b", "c") != raised("a", "b:c")
    waiting = [WaitingThread(thread_id="a b#c", interrupts=(opened("i", "r"),))]
    (notice,) = notices(waiting, [], now=NOW, remind_before=timedelta(hours=1))
    assert orjson.loads(notice.body(console_url="https://x/console/"))["link"] == "https://x/console/#thread=a%20b%23c"


async def test_the_docs_receiver_acts_once_on_a_notice_replayed_under_other_headers(tmp_path: Path) -> None:
    with anyio.fail_after(LIMIT):
        async with docs_receiver(secret_file(tmp_path)) as (hook, printed):
            body = orjson.dumps({"id": "raised:t:r1", "type": "interrupt.raised"})
            stamp = str(int(time.time()))
            async with httpx.AsyncClient() as http:
                for key in ("k1", "k2", "k3"):  # the header is not signed: anyone can change it
                    headers = {
                        "x-agui-timestamp": stamp,
                        "x-agui-signature": signature(SECRET, stamp, body),
                        "idempotency-key": key,
                    }
                    assert (await http.post(hook, content=body, headers=headers)).status_code == 204
            await anyio.sleep(0.3)
    assert [n["id"] for n in printed] == ["raised:t:r1"]


async def test_a_decision_whose_run_outlasts_the_looks_is_still_told() -> None:
    from agui_core.runtime import ManualClock, RunContext

    gate = anyio.Event()

    async def slow_after_approval(ctx: RunContext) -> object:
        outcome = await ctx.call_tool("sendEmail", {"to": "ann@example.com", "subject": "Q3"})
        await gate.wait()  # the resumed run takes its time: ten minutes on the host's clock
        return {"email": outcome.status}

    clock = ManualClock(NOW)
    with anyio.fail_after(LIMIT):
        async with Receiver([]).running() as receiver:
            hooks = Webhooks([receiver.url], secret=SECRET, every=0.2)
            async with Host(
                slow_after_approval,
                store=MemoryThreadStore(),
                tools=agents.TOOLS,
                clock=clock,
                run_timeout=3600,
                webhooks=hooks,
            ) as host:
                first = [e async for e in host.run(RunAgentInput(thread_id="t", run_id="r1"))]
                (asked,) = first[-1].outcome.interrupts  # type: ignore[union-attr]
                while not receiver.got:  # told that someone must act
                    await anyio.sleep(0.05)
                entry = ResumeEntry(interrupt_id=asked.id, status="resolved", payload={"approved": True})
                async with anyio.create_task_group() as group:

                    async def resume() -> None:
                        async for _ in host.run(RunAgentInput(thread_id="t", run_id="r2", resume=(entry,))):
                            pass

                    group.start_soon(resume)
                    await anyio.sleep(1.5)  # the host looks while the run goes on
                    clock.advance(minutes=10)
                    await anyio.sleep(1.5)  # and looks again, ten minutes later on its clock
                    gate.set()
                while not any(orjson.loads(b)["type"] == "interrupt.decided" for _, b in receiver.got):
                    await anyio.sleep(0.05)
    kinds = [orjson.loads(body)["type"] for _, body in receiver.got]
    assert kinds == ["interrupt.raised", "interrupt.decided"]


async def test_a_look_slowed_by_its_receiver_claims_each_notice_when_it_sends_it() -> None:
    from types import SimpleNamespace

    from agui_core.machine.effects import Persist
    from agui_core.machine.thread import ThreadMachine
    from agui_core.runtime.webhooks import _ledger_key

    store = MemoryThreadStore()
    threads = [f"slow-{n}" for n in range(1, 6)]
    for thread_id in threads:  # five threads waiting: five notices in one look
        machine = ThreadMachine(thread_id)
        started = machine.receive_input(RunAgentInput(thread_id=thread_id, run_id="r1"), now=NOW)
        ended = machine.interrupt([Interrupt(id=f"{thread_id}-i", reason="input_required")], now=NOW)
        for effect in [*started, *ended]:
            if isinstance(effect, Persist):
                await store.save(effect.record)
    clock = [NOW]
    stolen: list[int | None] = []
    posted: list[str] = []
    hooks = Webhooks(["http://receiver.test/"], secret=SECRET, timeout=10.0)

    async def handler(request: httpx.Request) -> httpx.Response:
        clock[0] += timedelta(seconds=9)  # each post takes 9 s on the host's clock, within the timeout
        notice = orjson.loads(request.content)
        posted.append(notice["id"])
        if len(posted) == len(threads):  # 45 s into the look, another host tries the last one
            key = _ledger_key(SimpleNamespace(key=notice["id"]), "http://receiver.test/")  # type: ignore[arg-type]
            stolen.append(
                await store.claim_delivery(key, holder="other", now=clock[0], until=clock[0] + timedelta(seconds=40))
            )
        return httpx.Response(204)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        sent = await hooks.deliver_due(store, client, lambda: clock[0], clock[0])  # type: ignore[arg-type]
    assert sent == 5 and stolen == [None]  # the other host found it held, not free


async def test_a_notice_another_host_holds_is_let_go_once_no_look_finds_it() -> None:
    from agui_core.machine.effects import Persist
    from agui_core.machine.thread import ThreadMachine
    from agui_core.runtime.webhooks import _ledger_key

    class Counting(MemoryThreadStore):
        claims = 0
        gone = False

        async def claim_delivery(self, key: str, **kwargs: Any) -> int | None:
            Counting.claims += 1
            return await super().claim_delivery(key, **kwargs)

        async def all_waiting(self, *, limit: int = 1000) -> Any:
            return [] if Counting.gone else await super().all_waiting(limit=limit)

    store = Counting()
    machine = ThreadMachine("held")
    started = machine.receive_input(RunAgentInput(thread_id="held", run_id="r1"), now=NOW)
    for effect in [*started, *machine.interrupt([Interrupt(id="i", reason="input_required")], now=NOW)]:
        if isinstance(effect, Persist):
            await store.save(effect.record)
    url = "http://receiver.test/"
    key = _ledger_key(notices(await store.all_waiting(), [], now=NOW, remind_before=timedelta(hours=1))[0], url)
    assert await store.claim_delivery(key, holder="other", now=NOW, until=NOW + timedelta(hours=1)) == 1
    hooks = Webhooks([url], secret=SECRET)
    async with httpx.AsyncClient(transport=httpx.MockTransport(lambda request: httpx.Response(204))) as client:
        assert await hooks.deliver_due(store, client, lambda: NOW, NOW) == 0  # the other host holds it
        Counting.gone, before = True, Counting.claims
        later = NOW + timedelta(minutes=5)
        for _ in range(3):
            assert await hooks.deliver_due(store, client, lambda: later, later) == 0
    assert Counting.claims == before  # let go: not claimed again, look after look
    assert hooks._next_wait(later) == hooks.every
