"""A client that resends the whole conversation, past the input limit, over the real WebSocket
transport (docs/security.md): its input is refused naming the limit, the thread is untouched,
and sending only the messages the thread does not have goes on."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from agui_transports.websocket import WebSocketServer
from websockets.asyncio.client import connect

from agui_core.machine.record import record_to_dict
from agui_core.runtime import Host, RunContext
from agui_core.store import MemoryThreadStore
from tests.e2e.test_attacks import exchange, frame

pytestmark = pytest.mark.anyio

LIMIT = 5


async def echo(ctx: RunContext) -> Any:
    await ctx.text(f"Heard {len(ctx.messages)} messages.")
    return None


def said(n: int) -> dict[str, Any]:
    return {"id": f"u-{n}", "role": "user", "content": f"Turn {n}."}


async def test_a_conversation_past_the_input_limit_goes_on_with_only_the_new_messages() -> None:
    store = MemoryThreadStore()
    with anyio.fail_after(15):
        async with Host(echo, store=store) as host, WebSocketServer(host, port=0, max_input_messages=LIMIT) as server:
            async with connect(server.url) as ws:
                held: list[dict[str, Any]] = []
                for turn in range(1, 4):  # 1 + 2 + ... messages resent, the agent's replies among them
                    sent = [*held, said(turn)]
                    frames = await exchange(ws, frame("long", f"run-{turn}", messages=sent))
                    assert frames[-1]["type"] == "RUN_FINISHED", frames[-1]
                    record = await store.load("long")
                    assert record is not None
                    held = list(record_to_dict(record)["messages"])
                assert len(held) == 6  # three turns and three replies: one more than an input may carry

                before = await store.load("long")
                refused = await exchange(ws, frame("long", "run-4", messages=[*held, said(4)]))
                assert [(f["type"], f.get("code")) for f in refused] == [("RUN_ERROR", "INVALID_INPUT")]
                assert f"at most {LIMIT} messages in one input, not 7" in refused[0]["message"]
                assert await store.load("long") == before

                went_on = await exchange(ws, frame("long", "run-4", messages=[said(4)]))
                assert went_on[-1]["type"] == "RUN_FINISHED", went_on[-1]
                after = await store.load("long")
                assert after is not None
                assert [m.id for m in after.messages][:7] == [m["id"] for m in held] + ["u-4"]
