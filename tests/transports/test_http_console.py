"""The HTTP transport's routes for the approval console: its files, the inbox, the audit trail,
the live feed, and which browser origins may call the host (the page's own, where safe)."""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.http import HttpApp, HttpTransport
from agui_transports.plugin import ServeOptions

from agui_core.protocol.framing import SSEReader
from agui_core.protocol.types import ResumeEntry
from agui_core.runtime import Host
from agui_core.runtime.auth import AuthenticationError, Credentials, TokenAuthenticator
from tests.transports import agents
from tests.transports.test_http import (
    ANN,
    BOB,
    JSON_HEADERS,
    LIMIT,
    body,
    events_of,
    run_input,
    serving,
    uvicorn_host,
)

pytestmark = pytest.mark.anyio

TOKENS = TokenAuthenticator({ANN: "ann", BOB: "bob"})
PROPOSED = {"to": "ann@example.com", "subject": "Q3 report"}  # what agents.approval_agent proposes


def auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def start(client: httpx.AsyncClient, thread_id: str, token: str) -> dict[str, Any]:
    response = await client.post("/", content=body(run_input(thread_id)), headers={**JSON_HEADERS, **auth(token)})
    finished = events_of(response.content)[-1]
    assert finished["outcome"]["type"] == "interrupt", finished
    interrupt: dict[str, Any] = finished["outcome"]["interrupts"][0]
    return interrupt


async def test_the_inbox_and_the_audit_trail_are_their_owners_only() -> None:
    async with serving(authenticator=TOKENS) as client:
        interrupt = await start(client, "mine", ANN)
        assert (await client.get("/inbox")).status_code == 401
        inbox = (await client.get("/inbox", headers=auth(ANN))).json()
        assert inbox["principal"] == "ann"
        (waiting,) = inbox["threads"]
        assert waiting["threadId"] == "mine" and waiting["interrupts"] == [interrupt]
        assert waiting["toolCalls"] == {interrupt["toolCallId"]: {"name": "sendEmail", "arguments": PROPOSED}}
        assert "continuation" not in orjson.dumps(inbox).decode()
        assert (await client.get("/inbox", headers=auth(BOB))).json() == {"principal": "bob", "threads": []}

        stranger = await client.get("/audit/mine", headers=auth(BOB))
        assert stranger.status_code == 404 and "mine" not in stranger.text
        assert (await client.get("/audit/nothing", headers=auth(ANN))).status_code == 404
        assert (await client.get("/audit/mine", headers=auth(ANN))).json()["entries"] == []

        approve = run_input(
            "mine",
            "run-2",
            resume=(ResumeEntry(interrupt_id=interrupt["id"], status="resolved", payload={"approved": True}),),
        )
        await client.post("/", content=body(approve), headers={**JSON_HEADERS, **auth(ANN)})
        assert (await client.get("/inbox", headers=auth(ANN))).json()["threads"] == []
        (entry,) = (await client.get("/audit/mine", headers=auth(ANN))).json()["entries"]
        assert entry["status"] == "resolved" and entry["payload"] == {"approved": True}
        assert entry["decidedBy"] == "ann" and entry["answeredIn"] == "run-2"
        assert entry["proposed"] == entry["ran"] == {"name": "sendEmail", "arguments": PROPOSED}
        assert "result" in entry and entry["ranBy"] == "host"


async def test_the_feed_tells_each_principal_of_its_own_threads_and_ends_when_the_server_stops() -> None:
    async def changes(client: httpx.AsyncClient, token: str, seen: list[dict[str, Any]], ready: anyio.Event) -> None:
        async with client.stream("GET", "/inbox/events", headers=auth(token)) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            reader = SSEReader()
            async for chunk in response.aiter_raw():
                for frame in reader.feed(chunk):
                    seen.append(orjson.loads(frame))
                    ready.set()

    with anyio.fail_after(LIMIT):
        async with uvicorn_host(authenticator=TOKENS) as (url, host, stop), httpx.AsyncClient(base_url=url) as client:
            ann_seen: list[dict[str, Any]] = []
            bob_seen: list[dict[str, Any]] = []
            async with anyio.create_task_group() as group:
                ann_ready, bob_ready = anyio.Event(), anyio.Event()
                group.start_soon(changes, client, ANN, ann_seen, ann_ready)
                group.start_soon(changes, client, BOB, bob_seen, bob_ready)
                await ann_ready.wait()
                await bob_ready.wait()
                assert len(host.changes) == 2
                await start(client, "ann-thread", ANN)
                await start(client, "bob-thread", BOB)
                while not any(e.get("state") == "interrupted" for e in bob_seen):
                    await anyio.sleep(0.01)
                stop.set()  # the feeds end with the server: nothing waits for them
    assert ann_seen[0] == bob_seen[0] == {"type": "ready"}
    assert {e["threadId"] for e in ann_seen[1:]} == {"ann-thread"}
    assert {e["threadId"] for e in bob_seen[1:]} == {"bob-thread"}  # nothing of ann's
    assert ann_seen[-1] == {"type": "changed", "threadId": "ann-thread", "state": "interrupted"}
    assert len(host.changes) == 0


async def test_the_console_is_served_whole_with_a_strict_content_policy() -> None:
    async with serving() as client:
        moved = await client.get("/console")
        assert moved.status_code == 308 and moved.headers["location"] == "/console/"
        page = await client.get("/console/")
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
        policy = page.headers["content-security-policy"]
        assert "default-src 'none'" in policy and "script-src 'self'" in policy and "connect-src 'self'" in policy
        assert page.headers["x-content-type-options"] == "nosniff"
        for name in ("console.mjs", "schema.mjs", "console.css"):
            assert f'"{name}"' in page.text or name == "schema.mjs"
            found = await client.get(f"/console/{name}")
            assert found.status_code == 200 and found.headers["content-security-policy"] == policy
        assert (await client.get("/console/schema.mjs")).headers["content-type"] == "text/javascript; charset=utf-8"
        assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere
        assert (await client.post("/console/")).status_code == 405
    async with serving(console=False) as client:
        assert (await client.get("/console/")).status_code == 404


async def raw_get(app: HttpApp, path: str) -> int:
    """The status ``app`` answers a GET of ``path`` with, the path passed as is (an HTTP client
    would resolve its dot segments before sending it)."""
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "headers": []}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    status: int = sent[0]["status"]
    return status


@pytest.mark.parametrize(
    "path",
    ["/console/../pyproject.toml", "/console/../../etc/passwd", "/console//etc/passwd", "/console/./console.css"],
)
async def test_the_console_serves_its_own_files_and_no_path_reaches_beyond_them(path: str) -> None:
    async with Host(agents.approval_agent) as host:
        app = HttpApp(host)
        assert await raw_get(app, "/console/console.css") == 200
        assert await raw_get(app, path) == 404


@pytest.mark.parametrize(
    ("authenticated", "console", "host", "origin", "allowed"),
    [
        (True, True, "agents.example.com", "http://agents.example.com", True),  # the page's own host, with tokens
        (True, True, "agents.example.com", "https://evil.example", False),
        (True, False, "agents.example.com", "http://agents.example.com", False),  # no console: no exception
        (False, True, "agents.example.com", "http://agents.example.com", False),  # a rebound name, no tokens
        (False, True, "127.0.0.1:8000", "http://127.0.0.1:8000", True),
        (False, True, "localhost:8000", "http://localhost:8000", True),
        (False, True, "[::1]:8000", "http://[::1]:8000", True),
        (False, True, "127.0.0.1:8000", "http://127.0.0.1:9000", False),  # another port is another origin
    ],
)
async def test_the_pages_own_origin_may_call_the_host_only_where_that_is_safe(
    authenticated: bool, console: bool, host: str, origin: str, allowed: bool
) -> None:
    authenticator = TOKENS if authenticated else None
    async with serving(authenticator=authenticator, console=console) as client:
        headers = {**JSON_HEADERS, "host": host, "origin": origin, **(auth(ANN) if authenticated else {})}
        response = await client.post("/", content=body(run_input("from-a-page")), headers=headers)
        assert (response.status_code == 200) is allowed, response.text
        if not allowed:
            assert response.json()["error"] == "origin_not_allowed"


class Revocable:
    """Ann's token, until it is revoked."""

    def __init__(self) -> None:
        self.revoked = False

    async def authenticate(self, credentials: Credentials) -> str:
        if self.revoked or credentials.bearer != ANN:
            raise AuthenticationError("this token is not valid")
        return "ann"


async def test_a_feed_ends_at_its_next_heartbeat_once_its_token_is_no_longer_valid() -> None:
    authenticator = Revocable()
    seen: list[str] = []
    with anyio.fail_after(LIMIT):
        async with (
            uvicorn_host(authenticator=authenticator, settings={"feed_heartbeat": "0.05"}) as (url, _, _),
            httpx.AsyncClient(base_url=url) as client,
        ):
            async with client.stream("GET", "/inbox/events", headers=auth(ANN)) as response:
                async for line in response.aiter_lines():
                    if line:
                        seen.append(line)
                    if len(seen) == 3:  # ready, then two heartbeats: the token was accepted each time
                        authenticator.revoked = True
            # The stream ended by itself (the loop above finished), and the page's next call is refused.
            assert (await client.get("/inbox", headers=auth(ANN))).status_code == 401
    assert seen[:3] == ['data: {"type":"ready"}', ": still here", ": still here"]
    assert len(seen) <= 4  # at most one more heartbeat was under way when the token was revoked


@pytest.mark.parametrize("value", ["0", "-1", "inf", "nan", "soon"])
async def test_a_feed_heartbeat_that_is_not_a_positive_number_of_seconds_is_refused(value: str) -> None:
    async with Host(agents.approval_agent) as host:
        options = ServeOptions(address="127.0.0.1:0", settings={"feed_heartbeat": value})
        with pytest.raises(ValueError, match="feed_heartbeat"):
            await HttpTransport().serve(host, options)


async def test_the_audit_says_who_answered_a_call_the_host_tool_or_the_agents_own_code() -> None:
    from agui_core.adapters.langgraph import langgraph_agent
    from tests.adapters import graphs

    async with serving(agent=langgraph_agent(graphs.approval_graph())) as client:
        interrupt = await start(client, "graph", ANN)
        approve = ResumeEntry(interrupt_id=interrupt["id"], status="resolved", payload={"approved": True})
        await client.post("/", content=body(run_input("graph", "run-2", resume=(approve,))), headers=JSON_HEADERS)
        (by_graph,) = (await client.get("/audit/graph")).json()["entries"]
    async with serving() as client:
        interrupt = await start(client, "host", ANN)
        deny = ResumeEntry(interrupt_id=interrupt["id"], status="resolved", payload={"approved": False})
        await client.post("/", content=body(run_input("host", "run-2", resume=(deny,))), headers=JSON_HEADERS)
        (denied,) = (await client.get("/audit/host")).json()["entries"]
    # The graph's node sent the email: the host cannot vouch for the arguments, only report it.
    assert by_graph["proposed"]["name"] == "send_email" and "ran" not in by_graph
    assert by_graph["ranBy"] == "agent" and by_graph["result"] == "sent to bob@example.com: hi"
    # The host's own tool, denied: nothing ran, and the result is the host's note of the denial.
    assert "ran" not in denied and "ranBy" not in denied
    assert denied["result"] == "the user denied this call"


async def test_one_principals_feeds_are_capped_and_the_oldest_ends_cleanly_for_the_newest() -> None:
    # A principal that opens feed after feed holds 2 at most (the cap here); each one more ends
    # its oldest, whole (the response completes), and another principal's feed is untouched.
    ended: list[int] = []
    ready = [anyio.Event() for _ in range(6)]
    heard: list[list[str]] = [[] for _ in range(6)]

    async def feed(client: httpx.AsyncClient, token: str, number: int) -> None:
        async with client.stream("GET", "/inbox/events", headers=auth(token)) as response:
            async for line in response.aiter_lines():
                if line == 'data: {"type":"ready"}':
                    ready[number].set()
                elif line.startswith("data: "):
                    heard[number].append(line)
        ended.append(number)  # the loop ended: the server completed the response

    with anyio.fail_after(LIMIT):
        async with uvicorn_host(authenticator=TOKENS, max_feeds_per_principal=2) as (url, host, stop):
            limits = httpx.Limits(max_connections=20)
            async with httpx.AsyncClient(base_url=url, limits=limits) as client, anyio.create_task_group() as group:
                group.start_soon(feed, client, BOB, 0)
                await ready[0].wait()
                for number in range(1, 6):
                    group.start_soon(feed, client, ANN, number)
                    await ready[number].wait()
                while len(ended) < 3:
                    await anyio.sleep(0.01)
                assert sorted(ended) == [1, 2, 3]  # ann's three oldest, in turn; bob's is still open
                assert (host.changes.watching("ann"), host.changes.watching("bob")) == (2, 1)
                await start(client, "ann-thread", ANN)  # ann's two live feeds still hear of her threads
                while not (heard[4] and heard[5]):
                    await anyio.sleep(0.01)
                stop.set()
    assert sorted(ended) == [0, 1, 2, 3, 4, 5]
    assert heard[:4] == [[], [], [], []]
