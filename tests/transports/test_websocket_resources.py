"""The WebSocket port's two plain GETs: the capabilities document and an owner's thread view.

A client that reloaded while interrupts were pending finds them again on the port it already
talks to, without guessing a ``runId`` (issue 12's "equivalent for the WebSocket transport").
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx
import pytest
from agui_transports.client import connect_websocket

from agui_core.protocol.codec import converter, input_from_dict
from agui_core.protocol.types import AgentCapabilities, Interrupt
from agui_core.runtime.auth import TokenAuthenticator
from tests.transports.agents import SENT
from tests.transports.test_websocket_trust import ALICE_TOKEN, BOB_TOKEN, LIMIT, bearer, serving, tokens

__all__ = ["tokens"]

pytestmark = pytest.mark.anyio


def http_url(ws_url: str, path: str) -> str:
    return ws_url.replace("ws://", "http://", 1) + path


async def get(url: str, headers: dict[str, str] | None = None) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(url, headers=headers)


async def test_capabilities_are_served_on_the_websocket_port() -> None:
    with anyio.fail_after(LIMIT):
        async with serving(None) as (_, server):
            answer = await get(http_url(server.url, "/capabilities"))
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    document = converter.structure(answer.json(), AgentCapabilities)
    assert document.human_in_the_loop is not None and document.human_in_the_loop.interrupts is True
    assert document.transport is not None and document.transport.websocket is True
    assert [tool.name for tool in document.tools.items or ()] == ["sendEmail"]  # type: ignore[union-attr]


async def test_a_reloaded_client_finds_its_open_interrupts_and_answers_them(tokens: TokenAuthenticator) -> None:
    SENT.clear()
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (host, server):
            async with connect_websocket(server.url, token=ALICE_TOKEN) as client:
                await client.collect(client.new_input("t-reload", "Send the report"))
                announced = client.machine("t-reload").open_interrupts
            # The page reloads: nothing of the first connection survives but the thread id.
            url = http_url(server.url, "/threads/t-reload")
            view: dict[str, Any] = (await get(url, bearer(ALICE_TOKEN))).json()
            assert view["threadId"] == "t-reload" and view["state"] == "interrupted"
            found = [converter.structure(i, Interrupt) for i in view["interrupts"]]
            assert found == list(announced)
            assert any(m["role"] == "assistant" for m in view["messages"])
            stranger = await get(url, bearer(BOB_TOKEN))
            anonymous = await get(url)
            missing = await get(http_url(server.url, "/threads/never-seen"), bearer(ALICE_TOKEN))
            resume = input_from_dict(
                {
                    "threadId": "t-reload",
                    "runId": "after-reload",
                    "messages": view["messages"],  # sent back unchanged, as a reloaded page would
                    "tools": [],
                    "context": [],
                    "forwardedProps": {},
                    "resume": [
                        {"interruptId": i.id, "status": "resolved", "payload": {"approved": True}} for i in found
                    ],
                }
            )
            async with connect_websocket(server.url, token=ALICE_TOKEN) as client:
                await client.collect(resume)
                result = client.machine("t-reload").result
            record = await host.store.load("t-reload")
    assert (stranger.status_code, anonymous.status_code, missing.status_code) == (404, 401, 404)
    assert stranger.content == missing.content and found[0].id not in stranger.text
    assert result == {"email": "executed"} and len(SENT) == 1
    assert record is not None and record.open_interrupts == ()


async def test_a_foreign_origin_gets_neither_resource() -> None:
    with anyio.fail_after(LIMIT):
        async with serving(None) as (_, server):
            evil = {"Origin": "https://evil.example"}
            answers = [await get(http_url(server.url, path), evil) for path in ("/capabilities", "/threads/x")]
    assert [a.status_code for a in answers] == [403, 403]


async def test_the_capabilities_need_a_token_when_the_host_has_an_authenticator(tokens: TokenAuthenticator) -> None:
    # They list every tool and its parameter schema: a stranger learns what the agent can do.
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (_, server):
            url = http_url(server.url, "/capabilities")
            anonymous, wrong = await get(url), await get(url, bearer("not-a-token-anyone-was-given"))
            signed_in = await get(url, bearer(ALICE_TOKEN))
        async with serving(tokens, public_capabilities=True) as (_, server):
            public = await get(http_url(server.url, "/capabilities"))
    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert "sendEmail" not in anonymous.text + wrong.text
    assert signed_in.status_code == public.status_code == 200
    assert signed_in.content == public.content and "sendEmail" in public.text


async def test_a_stranger_cannot_tell_a_thread_of_someone_elses_from_one_never_saved(
    tokens: TokenAuthenticator,
) -> None:
    with anyio.fail_after(LIMIT):
        async with serving(tokens) as (host, server):
            async with connect_websocket(server.url, token=ALICE_TOKEN) as client:
                await client.collect(client.new_input("alices", "Send the report"))
            host.store = loads = CountedLoads(host.store)
            theirs = await get(http_url(server.url, "/threads/alices"), bearer(BOB_TOKEN))
            nothing = await get(http_url(server.url, "/threads/no-such-thread"), bearer(BOB_TOKEN))
            bob_loads = loads.count
            mine = await get(http_url(server.url, "/threads/alices"), bearer(ALICE_TOKEN))
    assert (theirs.status_code, nothing.status_code, mine.status_code) == (404, 404, 200)
    assert theirs.content == nothing.content == b'{"error":"not_found","message":"no such thread"}'
    # Alike header for header; only the Date may differ, when the two fall either side of a second.
    assert {k: v for k, v in theirs.headers.items() if k != "date"} == {
        k: v for k, v in nothing.headers.items() if k != "date"
    }
    # And alike in cost: the conversation of a thread that is not the asker's is never read.
    assert bob_loads == 0 and loads.count == 1


class CountedLoads:
    """A store that counts its loads (a load reads a whole conversation); the rest goes through."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.count = 0

    async def load(self, thread_id: str) -> Any:
        self.count += 1
        return await self.inner.load(thread_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
