"""The HTTP + SSE transport: the ASGI application in process, mounted in FastAPI and Starlette,
and served by uvicorn (the ``http`` plugin) for what needs a real connection to drop."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.http import HttpApp, HttpTransport
from agui_transports.http_client import HttpError, connect_http
from agui_transports.plugin import ServeOptions, load_transport
from fastapi import FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

from agui_core.machine.client import ClientMachine
from agui_core.protocol import events as ev
from agui_core.protocol.codec import decode_event, encode_input
from agui_core.protocol.framing import SSEReader
from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
from agui_core.protocol.validation import validate_capabilities
from agui_core.runtime import Host, tool
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.test_websocket_trust import certificate

__all__ = ["certificate"]  # a fixture this module uses

pytestmark = pytest.mark.anyio

LIMIT = 15.0
ANN = "token-of-ann-0123456789"
BOB = "token-of-bob-0123456789"
ORIGIN = "https://app.example.com"


def run_input(thread_id: str, run_id: str = "run-1", **fields: Any) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id, run_id=run_id, messages=(UserMessage(id=f"u-{run_id}", content="hi"),), **fields
    )


def body(value: RunAgentInput) -> bytes:
    return encode_input(value)


def events_of(text: bytes) -> list[dict[str, Any]]:
    reader = SSEReader()
    return [orjson.loads(frame) for frame in [*reader.feed(text), *reader.close()]]


@asynccontextmanager
async def serving(
    agent: Any = agents.approval_agent, *, mount: Callable[[HttpApp], Any] | None = None, **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """An httpx client on the application (or on ``mount(app)``), over a fresh host."""
    authenticator = options.pop("authenticator", None)
    async with Host(agent, store=MemoryThreadStore(), tools=agents.TOOLS, authenticator=authenticator) as host:
        app = HttpApp(host, **options)
        asgi = mount(app) if mount is not None else app
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=asgi), base_url="http://test") as client:
            yield client


JSON_HEADERS = {"content-type": "application/json"}


# -- runs ------------------------------------------------------------------------------------


async def test_a_run_is_answered_with_its_events_as_server_sent_events() -> None:
    async with serving() as client:
        response = await client.post("/", content=body(run_input("t")), headers=JSON_HEADERS)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache"
    assert response.text.startswith('data: {"type":"RUN_STARTED"') and response.text.endswith("}\n\n")
    machine = ClientMachine("t")
    for frame in events_of(response.content):
        machine.receive_event(decode_event(orjson.dumps(frame)), now=datetime.now(UTC))
    assert machine.awaiting_input and len(machine.open_interrupts) == 1


async def test_an_event_that_cannot_be_encoded_cuts_the_stream_after_the_events_before_it() -> None:
    async def unencodable(ctx: Any) -> Any:
        await ctx.text("before")
        # The machine refuses a value JSON cannot hold when it is emitted; one the agent edits
        # after (a set where the event's value was JSON) reaches the transport unencodable.
        value: dict[str, Any] = {"fine": True}
        await ctx.emit(ev.CustomEvent(name="bad", value=value))
        value["not json"] = {1, 2}
        return "never"

    async with serving(unencodable) as client:
        response = await client.post("/", content=body(run_input("t")), headers=JSON_HEADERS)
    frames = events_of(response.content)
    # Nothing honest follows the bad event, not even an end; everything before it went out.
    assert [f["type"] for f in frames] == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
    ]


@pytest.mark.parametrize(
    ("content", "code"),
    [
        (b"{not json", "INVALID_INPUT"),
        (b'{"threadId": "t"}', "INVALID_INPUT"),
        (
            body(run_input("t", resume=(ResumeEntry(interrupt_id="i", status="cancelled", payload={"a": 1}),))),
            "INVALID_RESUME",
        ),
    ],
)
async def test_an_input_that_is_not_a_valid_run_is_refused_in_the_stream(content: bytes, code: str) -> None:
    async with serving() as client:
        response = await client.post("/", content=content, headers=JSON_HEADERS)
    assert response.status_code == 200
    (refusal,) = events_of(response.content)
    assert refusal["type"] == "RUN_ERROR" and refusal["code"] == code


async def test_a_refused_run_is_a_run_error_with_its_code() -> None:
    async with serving() as client:
        await client.post("/", content=body(run_input("t")), headers=JSON_HEADERS)
        response = await client.post("/", content=body(run_input("t", "run-2")), headers=JSON_HEADERS)
    assert response.status_code == 200
    assert [(e["type"], e["code"]) for e in events_of(response.content)] == [("RUN_ERROR", "PENDING_INTERRUPTS")]


# -- what is not a run -----------------------------------------------------------------------


def error_of(response: httpx.Response) -> str:
    document = response.json()
    assert set(document) == {"error", "message"} and document["message"]
    assert response.headers["content-type"] == "application/json"
    return str(document["error"])


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/", "POST, OPTIONS"),
        ("PUT", "/", "POST, OPTIONS"),
        ("POST", "/capabilities", "GET, OPTIONS"),
        ("PUT", "/keys", "GET, POST, OPTIONS"),
        ("DELETE", "/keys", "GET, POST, OPTIONS"),
    ],
)
async def test_a_wrong_method_is_405_with_allow(method: str, path: str, allow: str) -> None:
    async with serving() as client:
        response = await client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    assert error_of(response) == "method_not_allowed"
    assert response.json()["message"] == f"use {allow.removesuffix(', OPTIONS').replace(', ', ' or ')} on {path}"


async def test_an_unknown_path_is_404() -> None:
    async with serving() as client:
        response = await client.get("/nowhere")
    assert response.status_code == 404 and error_of(response) == "not_found"


@pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
async def test_a_body_that_is_not_json_is_415(content_type: str | None) -> None:
    headers = {"content-type": content_type} if content_type else {}
    async with serving() as client:
        response = await client.post("/", content=body(run_input("t")), headers=headers)
    assert response.status_code == 415 and error_of(response) == "unsupported_media_type"


async def test_json_with_a_charset_is_json() -> None:
    async with serving() as client:
        response = await client.post(
            "/", content=body(run_input("t")), headers={"content-type": "application/json; charset=utf-8"}
        )
    assert response.status_code == 200


async def test_a_declared_length_over_the_limit_is_413_before_reading() -> None:
    async with serving(max_body=100) as client:
        response = await client.post("/", content=b"{" + b" " * 200 + b"}", headers=JSON_HEADERS)
    assert response.status_code == 413 and error_of(response) == "payload_too_large"


class Driver:
    """Drives the application as an ASGI server would, one request, recording what it sends."""

    def __init__(self, chunks: list[bytes], *, then_wait: bool = False) -> None:
        self.chunks = chunks
        self.read = 0
        self.then_wait = then_wait
        self.sent: list[Mapping[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        if self.read < len(self.chunks):
            self.read += 1
            more = self.then_wait or self.read < len(self.chunks)
            return {"type": "http.request", "body": self.chunks[self.read - 1], "more_body": more}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def send(self, message: Mapping[str, Any]) -> None:
        self.sent.append(message)

    @property
    def status(self) -> int:
        return int(self.sent[0]["status"])

    async def post(self, app: HttpApp, headers: list[tuple[bytes, bytes]]) -> None:
        scope = {"type": "http", "method": "POST", "path": "/", "root_path": "", "headers": headers}
        with anyio.fail_after(LIMIT):
            await app(scope, self.receive, self.send)


async def test_a_body_over_the_limit_is_413_as_soon_as_the_bytes_read_say_so() -> None:
    driver = Driver([b"x" * 60] * 10)  # no Content-Length: the limit is enforced while reading
    async with Host(agents.approval_agent) as host:
        await driver.post(HttpApp(host, max_body=100), [(b"content-type", b"application/json")])
    assert driver.status == 413
    assert driver.read == 2  # the third chunk was never asked for


async def test_a_body_that_does_not_arrive_in_time_is_408() -> None:
    driver = Driver([b'{"threadId":'], then_wait=True)
    async with Host(agents.approval_agent) as host:
        await driver.post(HttpApp(host, body_timeout=0.1), [(b"content-type", b"application/json")])
    assert driver.status == 408
    assert orjson.loads(driver.sent[1]["body"])["error"] == "request_timeout"


# -- authentication and owners ---------------------------------------------------------------


def tokens() -> TokenAuthenticator:
    return TokenAuthenticator({ANN: "ann", BOB: "bob"})


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-known-token-at-all", f"Basic {ANN}"])
async def test_a_run_without_accepted_credentials_is_401(authorization: str | None) -> None:
    headers = {**JSON_HEADERS, **({"authorization": authorization} if authorization else {})}
    async with serving(authenticator=tokens()) as client:
        response = await client.post("/", content=body(run_input("t")), headers=headers)
    assert response.status_code == 401 and error_of(response) == "unauthorized"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_thread_is_shown_to_its_owner_only() -> None:
    ann, bob = {"authorization": f"Bearer {ANN}"}, {"authorization": f"bearer {BOB}"}
    async with serving(authenticator=tokens()) as client:
        streamed = await client.post("/", content=body(run_input("ann-1")), headers={**JSON_HEADERS, **ann})
        events = events_of(streamed.content)
        interrupt = events[-1]["outcome"]["interrupts"][0]
        snapshot = next(e["messages"] for e in events if e["type"] == "MESSAGES_SNAPSHOT")

        mine = await client.get("/threads/ann-1", headers=ann)
        assert mine.status_code == 200 and mine.headers["cache-control"] == "no-store"
        view = mine.json()
        assert view["threadId"] == "ann-1" and view["state"] == "interrupted" and view["runId"] == "run-1"
        assert view["interrupts"] == [interrupt]
        assert view["messages"] == snapshot
        assert view["agentState"] is None

        theirs = await client.get("/threads/ann-1", headers=bob)
        nobodys = await client.get("/threads/nobody", headers=bob)
        assert theirs.status_code == 404 and (theirs.content, theirs.headers) == (nobodys.content, nobodys.headers)
        assert "ann" not in theirs.text and interrupt["id"] not in theirs.text

        stranger_run = await client.post("/", content=body(run_input("ann-1", "r")), headers={**JSON_HEADERS, **bob})
        assert [e.get("code") for e in events_of(stranger_run.content)] == ["FORBIDDEN"]

        assert (await client.get("/threads/nobody", headers=ann)).status_code == 404
        assert (await client.get("/threads/ann-1")).status_code == 401


# -- browsers --------------------------------------------------------------------------------


async def test_by_default_no_origin_is_allowed() -> None:
    async with serving() as client:
        response = await client.post("/", content=body(run_input("t")), headers={**JSON_HEADERS, "origin": ORIGIN})
        preflight = await client.options("/", headers={"origin": ORIGIN, "access-control-request-method": "POST"})
    for refused in (response, preflight):
        assert refused.status_code == 403 and error_of(refused) == "origin_not_allowed"
        assert "access-control-allow-origin" not in refused.headers


async def test_an_allowed_origin_gets_its_preflight_and_its_origin_echoed() -> None:
    async with serving(allow_origins=[ORIGIN]) as client:
        preflight = await client.options(
            "/",
            headers={
                "origin": ORIGIN,
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type",
            },
        )
        response = await client.post("/", content=body(run_input("t")), headers={**JSON_HEADERS, "origin": ORIGIN})
        other = await client.get("/capabilities", headers={"origin": "https://evil.example"})
        plain = await client.get("/capabilities")
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == ORIGIN
    assert "POST" in preflight.headers["access-control-allow-methods"]
    assert {"authorization", "content-type"} <= {
        h.strip() for h in preflight.headers["access-control-allow-headers"].split(",")
    }
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == ORIGIN
    assert response.headers["vary"] == "origin"
    assert other.status_code == 403 and "access-control-allow-origin" not in other.headers
    assert plain.status_code == 200 and "access-control-allow-origin" not in plain.headers


# -- capabilities ----------------------------------------------------------------------------


@tool("deleteFile", needs_approval=True, allow_edits=False)
async def delete_file(path: str) -> str:
    """Delete a file (after approval; the path cannot be edited)."""
    return path


@tool("lookUp")
async def look_up(query: str) -> str:
    """Look something up."""
    return query


@pytest.mark.parametrize(
    ("tools", "approvals", "edits"),
    [(agents.TOOLS, True, True), ([delete_file, look_up], True, False), ([look_up], False, False), ([], False, False)],
)
async def test_capabilities_say_what_the_host_really_does(tools: list[Any], approvals: bool, edits: bool) -> None:
    async with Host(agents.approval_agent, tools=tools) as host:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=HttpApp(host)), base_url="http://t") as client:
            response = await client.get("/capabilities")
    assert response.status_code == 200
    document = response.json()
    validate_capabilities(document)
    assert document["humanInTheLoop"] == {
        "supported": True,
        "interrupts": True,
        "approvals": approvals,
        "approveWithEdits": edits,
    }
    assert document["transport"] == {
        "streaming": True,
        "websocket": False,
        "httpBinary": False,
        "pushNotifications": False,
        "resumable": False,
    }
    assert document["identity"]["name"] == "approval_agent"
    assert document["identity"]["description"].startswith("A text, then a gated")
    assert [t["name"] for t in document["tools"].get("items", [])] == [t.name for t in tools]


async def test_identity_comes_from_the_agent_object_when_it_has_one() -> None:
    class Named:
        name = "mailer"
        description = "Sends mail after asking."

        async def __call__(self, ctx: Any) -> None:
            return None

    async with Host(Named()) as host:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=HttpApp(host)), base_url="http://t") as client:
            identity = (await client.get("/capabilities")).json()["identity"]
    assert identity == {"name": "mailer", "description": "Sends mail after asking."}


# -- mounted ---------------------------------------------------------------------------------


def in_fastapi(app: HttpApp) -> FastAPI:
    outer = FastAPI()

    @outer.get("/health")
    async def health() -> dict[str, str]:
        return {"status": "ok"}

    outer.mount("/agents/mailer", app)
    return outer


def in_starlette(app: HttpApp) -> Starlette:
    return Starlette(routes=[Mount("/agents/mailer", app=app)])


@pytest.mark.parametrize("mount", [in_fastapi, in_starlette])
async def test_mounted_under_a_prefix_every_route_is_below_it(mount: Callable[[HttpApp], Any]) -> None:
    async with serving(mount=mount) as client:
        run = await client.post("/agents/mailer/", content=body(run_input("m")), headers=JSON_HEADERS)
        # Starlette redirects the bare prefix to it with a slash (307: the method and body are kept).
        bare = await client.post(
            "/agents/mailer", content=body(run_input("m2")), headers=JSON_HEADERS, follow_redirects=True
        )
        view = await client.get("/agents/mailer/threads/m")
        capabilities = await client.get("/agents/mailer/capabilities")
        outside = await client.get("/capabilities")
    assert run.status_code == 200 and events_of(run.content)[-1]["outcome"]["type"] == "interrupt"
    assert bare.status_code == 200 and events_of(bare.content)[0]["threadId"] == "m2"
    assert view.status_code == 200 and view.json()["threadId"] == "m"
    assert capabilities.status_code == 200 and capabilities.json()["humanInTheLoop"]["interrupts"] is True
    assert outside.status_code == 404


# -- under uvicorn ---------------------------------------------------------------------------


@asynccontextmanager
async def uvicorn_host(
    agent: Any = agents.approval_agent, *, grace: float = 10.0, authenticator: Any = None, **trust: Any
) -> AsyncIterator[tuple[str, Host, anyio.Event]]:
    """The ``http`` plugin serving ``agent`` on a free port: its URL, its host and its stop event.

    ``trust`` are the trust fields of its :class:`ServeOptions` (``allow_origins``, ``ssl``).
    """
    stop = anyio.Event()
    where: list[str] = []
    found = anyio.Event()

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    async with Host(agent, store=MemoryThreadStore(), tools=agents.TOOLS, authenticator=authenticator) as host:
        async with anyio.create_task_group() as group:
            options = ServeOptions(address="127.0.0.1:0", stop=stop, grace=grace, ready=ready, **trust)
            group.start_soon(HttpTransport().serve, host, options)
            await found.wait()
            yield where[0], host, stop
            stop.set()


async def run_ended(host: Host, thread_id: str) -> None:
    """Wait until the thread's record says no run is in progress."""
    while (record := await host.store.load(thread_id)) is None or record.active_run is not None:
        await anyio.sleep(0.02)


async def test_the_http_plugin_is_found_by_name() -> None:
    assert isinstance(load_transport("http"), HttpTransport)


async def test_a_client_that_leaves_mid_stream_does_not_stop_its_run_and_a_retry_gets_its_outcome() -> None:
    thread = "leaver"
    gate = agents.GATES[thread] = anyio.Event()
    agents.SENT.clear()
    try:
        with anyio.fail_after(LIMIT):
            async with uvicorn_host() as (url, host, _), httpx.AsyncClient(base_url=url) as client:
                first = run_input(thread)
                async with client.stream("POST", "/", content=body(first), headers=JSON_HEADERS) as response:
                    reader = SSEReader()
                    seen: list[bytes] = []
                    async for chunk in response.aiter_raw():
                        seen += reader.feed(chunk)
                        if len(seen) >= 2:
                            break  # leave mid-run: the agent is waiting at its gate
                gate.set()
                await run_ended(host, thread)

                retried = events_of((await client.post("/", content=body(first), headers=JSON_HEADERS)).content)
                assert retried[-1]["type"] == "RUN_FINISHED" and retried[-1]["outcome"]["type"] == "interrupt"
                (interrupt,) = retried[-1]["outcome"]["interrupts"]
                approve = run_input(
                    thread,
                    "run-2",
                    resume=(ResumeEntry(interrupt_id=interrupt["id"], status="resolved", payload={"approved": True}),),
                )
                for _ in range(2):  # the resume, then the same resume again: nothing runs twice
                    resumed = events_of((await client.post("/", content=body(approve), headers=JSON_HEADERS)).content)
                    assert resumed[-1]["outcome"] == {"type": "success"}
                    assert [e["toolCallId"] for e in resumed if e["type"] == "TOOL_CALL_RESULT"] == [
                        interrupt["toolCallId"]
                    ]
        assert len(agents.SENT) == 1
    finally:
        agents.GATES.pop(thread, None)


async def test_on_stop_a_stream_in_flight_is_delivered_whole_and_serve_returns() -> None:
    with anyio.fail_after(LIMIT):
        async with uvicorn_host(agents.slow_agent) as (url, _, stop), httpx.AsyncClient(base_url=url) as client:
            slow = run_input("slow", forwarded_props={"seconds": 0.5})
            async with client.stream("POST", "/", content=body(slow), headers=JSON_HEADERS) as response:
                reader = SSEReader()
                frames: list[bytes] = []
                async for chunk in response.aiter_raw():
                    if not frames:
                        stop.set()  # mid-run
                    frames += reader.feed(chunk)
            assert orjson.loads(frames[-1])["type"] == "RUN_FINISHED"
            with pytest.raises(httpx.ConnectError):
                await client.get("/capabilities")


# -- the Python client -----------------------------------------------------------------------


async def test_the_python_client_runs_resumes_and_reads_the_thread_and_capabilities() -> None:
    agents.SENT.clear()
    with anyio.fail_after(LIMIT):
        async with uvicorn_host() as (url, _, _), connect_http(url) as client:
            events = await client.collect(client.new_input("py", "Send the report"))
            assert events[-1].type == "RUN_FINISHED"
            machine = client.machine("py")
            (interrupt,) = machine.open_interrupts

            view = await client.thread("py")
            assert view is not None and view.interrupts == (interrupt,) and view.state == "interrupted"
            assert view.messages == machine.messages
            assert await client.thread("nobody") is None

            capabilities = await client.capabilities()
            assert capabilities.human_in_the_loop is not None and capabilities.human_in_the_loop.interrupts

            resumed = await client.collect(
                client.resume("py", {interrupt.id: {"status": "resolved", "payload": {"approved": True}}})
            )
            assert [e.type for e in resumed if e.type == "TOOL_CALL_RESULT"] == ["TOOL_CALL_RESULT"]
            assert not machine.awaiting_input and machine.result == {"email": "executed"}
    assert len(agents.SENT) == 1


async def test_the_python_client_raises_the_hosts_http_error() -> None:
    with anyio.fail_after(LIMIT):
        async with Host(agents.approval_agent, tools=agents.TOOLS, authenticator=tokens()) as host:
            async with anyio.create_task_group() as group:
                stop, ready = anyio.Event(), anyio.Event()
                where: list[str] = []

                def serving(url: str) -> None:
                    where.append(url)
                    ready.set()

                options = ServeOptions(address="127.0.0.1:0", stop=stop, ready=serving)
                group.start_soon(HttpTransport().serve, host, options)
                await ready.wait()
                async with connect_http(where[0], token="wrong-token-0123456789") as client:
                    with pytest.raises(HttpError) as refused:
                        await client.collect(client.new_input("x", "hi"))
                    assert (refused.value.status, refused.value.error) == (401, "unauthorized")
                async with connect_http(where[0], token=ANN) as client:
                    assert (await client.collect(client.new_input("x", "hi")))[-1].type == "RUN_FINISHED"
                stop.set()


# -- the plugin's trust options --------------------------------------------------------------


async def test_told_loopback_only_it_refuses_to_listen_elsewhere() -> None:
    async with Host(agents.approval_agent) as host:
        with pytest.raises(ValueError, match="loopback"):
            await HttpTransport().serve(host, ServeOptions(address="0.0.0.0:0", loopback_only=True))


async def test_the_origins_agui_serve_allows_are_the_apps() -> None:
    with anyio.fail_after(LIMIT):
        async with uvicorn_host(allow_origins=(ORIGIN,)) as (url, _, _), httpx.AsyncClient(base_url=url) as client:
            allowed = await client.get("/capabilities", headers={"origin": ORIGIN})
            refused = await client.get("/capabilities", headers={"origin": "https://evil.example"})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == ORIGIN
    assert refused.status_code == 403


async def test_https_with_the_tls_context_agui_serve_built(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    client_tls = ssl.create_default_context(cafile=str(cert))
    with anyio.fail_after(LIMIT):
        async with uvicorn_host(authenticator=tokens(), ssl=server_tls) as (url, _, _):
            assert url.startswith("https://")
            async with connect_http(url, token=ANN, ssl=client_tls) as client:
                await client.collect(client.new_input("over-tls", "Send the report"))
                assert client.machine("over-tls").awaiting_input
            async with connect_http(url, token=ANN) as client:  # the certificate is not trusted
                with pytest.raises(anyio.BrokenResourceError):
                    await client.collect(client.new_input("untrusted", "hi"))


async def test_an_input_nested_too_deep_is_refused_as_invalid_input() -> None:
    deep = b'{"threadId":"deep","runId":"r","messages":[],"state":' + b"[" * 300 + b"]" * 300 + b"}"
    async with serving() as client:
        response = await client.post("/", content=deep, headers=JSON_HEADERS)
    assert [(e["type"], e["code"]) for e in events_of(response.content)] == [("RUN_ERROR", "INVALID_INPUT")]


async def test_told_loopback_only_it_answers_no_request_addressed_to_another_name() -> None:
    # DNS rebinding: a page of evil.example whose name now resolves to 127.0.0.1 reaches the
    # host with its own name in Host and, for a GET of its own origin, no Origin at all.
    with anyio.fail_after(LIMIT):
        async with uvicorn_host(loopback_only=True) as (url, _, _), httpx.AsyncClient(base_url=url) as client:
            port = url.rsplit(":", 1)[1]
            rebound = {"host": f"evil.example:{port}"}
            refused = [
                await client.get("/inbox", headers=rebound),
                await client.get("/console/", headers=rebound),
                await client.get("/threads/x", headers=rebound),
                await client.post("/", headers={**rebound, "content-type": "application/json"}, content=b"{}"),
            ]
            by_loopback = [
                await client.get("/inbox"),
                await client.get("/inbox", headers={"host": f"localhost:{port}"}),
                await client.get("/capabilities", headers={"host": f"[::1]:{port}"}),
            ]
        async with uvicorn_host() as (url, _, _), httpx.AsyncClient(base_url=url) as client:
            # Not told loopback_only (an embedder behind a proxy, say): the Host is not judged.
            proxied = await client.get("/capabilities", headers={"host": "app.example"})
    assert [r.status_code for r in refused] == [403] * 4
    assert {r.json()["error"] for r in refused} == {"host_not_allowed"}
    assert [r.status_code for r in by_loopback] == [200] * 3
    assert proxied.status_code == 200


# -- what a stranger learns -----------------------------------------------------------------


async def test_the_capabilities_need_a_token_when_the_host_has_an_authenticator() -> None:
    # They list every tool and its parameter schema: a stranger learns what the agent can do.
    with anyio.fail_after(LIMIT):
        async with uvicorn_host(authenticator=tokens()) as (url, _, _), httpx.AsyncClient(base_url=url) as client:
            anonymous = await client.get("/capabilities")
            wrong = await client.get("/capabilities", headers={"authorization": "Bearer not-a-known-token-at-all"})
            signed_in = await client.get("/capabilities", headers={"authorization": f"Bearer {ANN}"})
        async with uvicorn_host(authenticator=tokens(), public_capabilities=True) as (url, _, _):
            async with httpx.AsyncClient(base_url=url) as client:
                public = await client.get("/capabilities")
        async with uvicorn_host() as (url, _, _), httpx.AsyncClient(base_url=url) as client:
            loopback_host = await client.get("/capabilities")  # no authenticator: as before
    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert {error_of(anonymous), error_of(wrong)} == {"unauthorized"} and "sendEmail" not in anonymous.text
    assert signed_in.status_code == public.status_code == loopback_host.status_code == 200
    assert signed_in.content == public.content and "sendEmail" in public.text


async def test_a_stranger_cannot_tell_another_principals_thread_from_one_never_saved() -> None:
    ann, bob = {"authorization": f"Bearer {ANN}"}, {"authorization": f"Bearer {BOB}"}
    with anyio.fail_after(LIMIT):
        async with uvicorn_host(authenticator=tokens()) as (url, _, _), httpx.AsyncClient(base_url=url) as client:
            streamed = await client.post("/", content=body(run_input("anns")), headers={**JSON_HEADERS, **ann})
            assert events_of(streamed.content)[-1]["outcome"]["type"] == "interrupt"
            answers: dict[str, list[httpx.Response]] = {}
            for path in ("/threads/", "/audit/"):
                answers[path] = [
                    await client.get(path + "anns", headers=bob),  # ann's
                    await client.get(path + "no-such-thread", headers=bob),
                    await client.get(path + "anns", headers=ann),
                ]
    for theirs, nothing, mine in answers.values():
        assert (theirs.status_code, nothing.status_code, mine.status_code) == (404, 404, 200)
        assert theirs.content == nothing.content == b'{"error":"not_found","message":"no such thread"}'
        assert [(k, v) for k, v in theirs.headers.items() if k != "date"] == [
            (k, v) for k, v in nothing.headers.items() if k != "date"
        ]
