"""Approvers, not only owners (agui_core.machine.policy), through the real transports: a manager
approves a clerk's email over HTTP and over WebSocket, the clerk is refused where separation of
duties applies, a principal without the role is refused naming nothing, the inbox and the thread
view show an approver what it may decide, the audit says who decided, and an edited policy file
takes effect without a restart."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from agui_transports.client import connect_websocket
from agui_transports.http import HttpApp

from agui_core.machine.client import approve
from agui_core.machine.ownership import FORBIDDEN_MESSAGE
from agui_core.protocol import events as ev
from agui_core.protocol.codec import encode_input
from agui_core.protocol.framing import SSEReader
from agui_core.protocol.types import ResumeEntry, RunAgentInput, UserMessage
from agui_core.runtime import Host
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.runtime.policies import PolicyFile
from agui_core.store import MemoryThreadStore
from tests.transports import agents
from tests.transports.served import agui_serve

pytestmark = pytest.mark.anyio

LIMIT = 30.0
TOKENS = """\
ann   token-of-ann-0123456789   clerk
bob   token-of-bob-0123456789   manager,staff
carol token-of-carol-012345678
dave  token-of-dave-0123456789  manager
"""
ANN, BOB, CAROL = "token-of-ann-0123456789", "token-of-bob-0123456789", "token-of-carol-012345678"
DAVE = "token-of-dave-0123456789"
POLICY = """\
[tools.sendEmail]
roles = ["manager"]
owner = false
"""


def events_of(body: bytes) -> list[dict[str, Any]]:
    reader = SSEReader()
    return [orjson.loads(frame) for frame in [*reader.feed(body), *reader.close()]]


@asynccontextmanager
async def served(policy_file: Path, **host_options: Any) -> AsyncIterator[tuple[Host, httpx.AsyncClient]]:
    """A host with the token table and the policy in ``policy_file``, and an HTTP client on it."""
    authenticator = TokenAuthenticator.from_lines(TOKENS.splitlines())
    policy = PolicyFile(policy_file, check_every=0.0)
    host_options.setdefault("store", MemoryThreadStore())
    async with Host(
        agents.approval_agent, tools=agents.TOOLS, authenticator=authenticator, policy=policy, **host_options
    ) as host:
        transport = httpx.ASGITransport(app=HttpApp(host))
        async with httpx.AsyncClient(transport=transport, base_url="http://h") as client:
            yield host, client


async def post(client: httpx.AsyncClient, token: str, run_input: RunAgentInput) -> list[dict[str, Any]]:
    headers = {"authorization": f"Bearer {token}", "content-type": "application/json"}
    response = await client.post("/", content=encode_input(run_input), headers=headers)
    assert response.status_code == 200
    return events_of(response.content)


def first(thread_id: str) -> RunAgentInput:
    return RunAgentInput(
        thread_id=thread_id, run_id=f"{thread_id}-1", messages=(UserMessage(id="u1", content="Send it"),)
    )


def answer(thread_id: str, run_id: str, interrupt_id: str, **fields: Any) -> RunAgentInput:
    entry = ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload={"approved": True})
    return RunAgentInput(thread_id=thread_id, run_id=run_id, resume=(entry,), **fields)


def deny(thread_id: str, run_id: str, interrupt_id: str) -> RunAgentInput:
    entry = ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload={"approved": False})
    return RunAgentInput(thread_id=thread_id, run_id=run_id, resume=(entry,))


def policy_file(tmp_path: Path, text: str = POLICY) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


async def test_a_manager_approves_the_clerks_email_and_the_clerk_may_not(tmp_path: Path) -> None:
    agents.SENT.clear()
    with anyio.fail_after(LIMIT):
        async with served(policy_file(tmp_path)) as (host, client):
            asked = await post(client, ANN, first("mail"))
            (interrupt,) = asked[-1]["outcome"]["interrupts"]
            # The clerk may not approve her own agent's email (separation of duties).
            own = await post(client, ANN, answer("mail", "ann-2", interrupt["id"]))
            assert [(e["type"], e["code"], e["message"]) for e in own] == [
                ("RUN_ERROR", "FORBIDDEN", FORBIDDEN_MESSAGE)
            ]
            # Carol has no role the policy names: refused, told nothing, shown nothing.
            carol = await post(client, CAROL, answer("mail", "carol-2", interrupt["id"]))
            assert [(e["type"], e["code"], e["message"]) for e in carol] == [
                ("RUN_ERROR", "FORBIDDEN", FORBIDDEN_MESSAGE)
            ]
            carol_sees = await client.get("/threads/mail", headers={"authorization": f"Bearer {CAROL}"})
            assert carol_sees.status_code == 404
            assert (await client.get("/inbox", headers={"authorization": f"Bearer {CAROL}"})).json()["threads"] == []
            # Bob's inbox shows the request, whose it is and why; he reads the thread to decide.
            inbox = (await client.get("/inbox", headers={"authorization": f"Bearer {BOB}"})).json()
            (waiting,) = inbox["threads"]
            assert (waiting["threadId"], waiting["owner"], waiting["interrupts"][0]["id"]) == (
                "mail",
                "ann",
                interrupt["id"],
            )
            view = await client.get("/threads/mail", headers={"authorization": f"Bearer {BOB}"})
            assert view.status_code == 200 and view.json()["interrupts"][0]["id"] == interrupt["id"]
            # Bob approves with an ordinary resume, and sees the run's events.
            decided = await post(
                client,
                BOB,
                answer("mail", "bob-2", interrupt["id"], messages=(UserMessage(id="b1", content="from bob"),)),
            )
            assert decided[0]["type"] == "RUN_STARTED" and decided[-1]["type"] == "RUN_FINISHED"
            assert decided[-1]["result"] == {"email": "executed"}
            assert agents.SENT == [{"to": "ann@example.com", "subject": "Q3 report", "body": ""}]
            # Ann sees the outcome; the conversation is still hers alone (bob's message is not in it).
            mine = (await client.get("/threads/mail", headers={"authorization": f"Bearer {ANN}"})).json()
            assert mine["state"] == "idle" and "b1" not in {m["id"] for m in mine["messages"]}
            audit = (await client.get("/audit/mail", headers={"authorization": f"Bearer {ANN}"})).json()
            (line,) = audit["entries"]
            assert (line["decidedBy"], line["decidedRoles"], line["status"]) == (
                "bob",
                ["manager", "staff"],
                "resolved",
            )
            # Once decided, bob has nothing to read there.
            assert (await client.get("/threads/mail", headers={"authorization": f"Bearer {BOB}"})).status_code == 404
    assert [r.decided_by for r in await host.store.audit("mail")] == ["bob"]


QUORUM_POLICY = POLICY + "approvals = 2\n"


async def test_a_two_manager_quorum_one_denial_denies_and_two_approvals_run_the_tool_once(tmp_path: Path) -> None:
    agents.SENT.clear()
    with anyio.fail_after(LIMIT):
        async with served(policy_file(tmp_path, QUORUM_POLICY)) as (host, client):
            # One approves, the second denies: denied, nothing sent.
            asked = await post(client, ANN, first("split"))
            (interrupt,) = asked[-1]["outcome"]["interrupts"]
            voted = await post(client, BOB, answer("split", "bob-2", interrupt["id"]))
            assert [e["type"] for e in voted] == ["RUN_STARTED", "STATE_SNAPSHOT", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
            (still,) = voted[-1]["outcome"]["interrupts"]
            assert still["id"] == interrupt["id"]
            assert still["metadata"]["agui.quorum"] == {"approvals": 2, "approved": 1, "remaining": 1}
            # The owner sees the tally; bob's inbox no longer asks him, dave's does.
            ann_sees = (await client.get("/threads/split", headers={"authorization": f"Bearer {ANN}"})).json()
            assert ann_sees["state"] == "interrupted"
            # Not hers to decide: apart, as what others are to answer, with the tally.
            assert ann_sees["interrupts"] == []
            assert ann_sees["waitingOnOthers"][0]["metadata"]["agui.quorum"]["remaining"] == 1
            assert (await client.get("/inbox", headers={"authorization": f"Bearer {BOB}"})).json()["threads"] == []
            dave_inbox = (await client.get("/inbox", headers={"authorization": f"Bearer {DAVE}"})).json()
            assert [t["threadId"] for t in dave_inbox["threads"]] == ["split"]
            # bob's vote again is a replay; bob changing his mind is refused.
            assert (await post(client, BOB, answer("split", "bob-2", interrupt["id"])))[-1] == voted[-1]
            changed = await post(client, BOB, deny("split", "bob-3", interrupt["id"]))
            assert [(e["type"], e["code"]) for e in changed] == [("RUN_ERROR", "INTERRUPT_ALREADY_RESOLVED")]
            denied = await post(client, DAVE, deny("split", "dave-2", interrupt["id"]))
            assert denied[-1]["type"] == "RUN_FINISHED" and denied[-1]["result"] == {"email": "denied"}
            assert agents.SENT == []
            audit = (await client.get("/audit/split", headers={"authorization": f"Bearer {ANN}"})).json()
            (line,) = audit["entries"]
            assert (line["decidedBy"], line["payload"]) == ("dave", {"approved": False})
            assert [(v["principal"], v["payload"]["approved"]) for v in line["votes"]] == [
                ("bob", True),
                ("dave", False),
            ]

            # Two approve: the tool runs once, after the second.
            asked = await post(client, ANN, first("both"))
            (interrupt,) = asked[-1]["outcome"]["interrupts"]
            await post(client, DAVE, answer("both", "dave-2", interrupt["id"]))
            assert agents.SENT == []
            done = await post(client, BOB, answer("both", "bob-2", interrupt["id"]))
            assert done[-1]["type"] == "RUN_FINISHED" and done[-1]["result"] == {"email": "executed"}
            assert len(agents.SENT) == 1
            # The last approver's retry is a replay, and runs nothing again.
            again = await post(client, BOB, answer("both", "bob-2", interrupt["id"]))
            assert again[-1]["result"] == {"email": "executed"} and len(agents.SENT) == 1
    (line,) = await host.store.audit("both")
    assert [v.principal for v in line.votes] == ["dave", "bob"] and line.decided_by == "bob"


async def test_a_quorum_over_websocket_on_agui_serve_and_threads_show_prints_the_votes(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    tokens.chmod(0o600)
    database = tmp_path / "threads.db"
    options = ("--ws", "127.0.0.1:0", "--store", f"sqlite:{database}", "--auth-tokens", str(tokens))
    policy = str(policy_file(tmp_path, QUORUM_POLICY))
    with anyio.fail_after(LIMIT):
        async with agui_serve(
            "tests.transports.agents:approval_agent", *options, "--policy", policy, tmp=tmp_path
        ) as server:
            async with connect_websocket(server.url, token=ANN) as ann:
                asked = await ann.collect(ann.new_input("ws-quorum", "Send it"))
                assert isinstance(asked[-1], ev.RunFinishedEvent)
                (interrupt,) = ann.machine("ws-quorum").open_interrupts
            async with connect_websocket(server.url, token=BOB) as bob:
                voted = await bob.collect(answer("ws-quorum", "bob-2", interrupt.id))
                finished = voted[-1]
                assert isinstance(finished, ev.RunFinishedEvent) and finished.outcome is not None
                assert finished.outcome.type == "interrupt"
            async with connect_websocket(server.url, token=DAVE) as dave:
                decided = await dave.collect(answer("ws-quorum", "dave-2", interrupt.id))
                assert isinstance(decided[-1], ev.RunFinishedEvent) and decided[-1].result == {"email": "executed"}
    import subprocess
    import sys

    from tests.transports.served import ROOT

    store = f"sqlite:{database}"
    command = [sys.executable, "-m", "agui_core.app.cli", "threads", "--store", store, "show", "ws-quorum"]
    shown = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "resolved by dave (manager)" in shown.stdout
    assert "vote: approved by bob (manager, staff)" in shown.stdout and "(run bob-2)" in shown.stdout
    assert "vote: approved by dave (manager)" in shown.stdout


async def test_an_edited_policy_takes_effect_without_a_restart(tmp_path: Path) -> None:
    path = policy_file(tmp_path)
    with anyio.fail_after(LIMIT):
        async with served(path) as (_, client):
            asked = await post(client, ANN, first("again"))
            (interrupt,) = asked[-1]["outcome"]["interrupts"]
            refused = await post(client, ANN, answer("again", "ann-2", interrupt["id"]))
            assert refused[-1]["code"] == "FORBIDDEN"
            path.write_text(POLICY.replace("owner = false", "owner = true") + "\n# the clerk may approve now\n")
            allowed = await post(client, ANN, answer("again", "ann-3", interrupt["id"]))
            assert allowed[-1]["type"] == "RUN_FINISHED" and allowed[-1]["result"] == {"email": "executed"}


async def test_agui_serve_with_a_policy_over_websocket(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKENS)
    tokens.chmod(0o600)
    options = ("--ws", "127.0.0.1:0", "--store", "memory", "--auth-tokens", str(tokens))
    with anyio.fail_after(LIMIT):
        async with agui_serve(
            "tests.transports.agents:approval_agent", *options, "--policy", str(policy_file(tmp_path)), tmp=tmp_path
        ) as server:
            async with connect_websocket(server.url, token=ANN) as ann:
                asked = await ann.collect(ann.new_input("ws-mail", "Send it"))
                assert isinstance(asked[-1], ev.RunFinishedEvent)
                (interrupt,) = ann.machine("ws-mail").open_interrupts
                refused = await ann.collect(ann.resume("ws-mail", {interrupt.id: approve()}))
                assert [(e.type, e.code) for e in refused] == [("RUN_ERROR", "FORBIDDEN")]  # type: ignore[union-attr]
            async with connect_websocket(server.url, token=BOB) as bob:
                decided = await bob.collect(answer("ws-mail", "bob-2", interrupt.id))
                assert isinstance(decided[-1], ev.RunFinishedEvent) and decided[-1].result == {"email": "executed"}


async def test_agui_serve_refuses_a_policy_without_principals(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.transports.served import ROOT

    command = [
        sys.executable, "-m", "agui_core.app.cli", "serve", "tests.transports.agents:approval_agent",
        "--http", "127.0.0.1:0", "--store", "memory", "--policy", str(policy_file(tmp_path)),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--policy decides by principal and role" in done.stderr


def test_token_lines_carry_roles_and_refuse_odd_ones() -> None:
    authenticator = TokenAuthenticator.from_lines(TOKENS.splitlines())
    assert authenticator is not None
    with pytest.raises(ValueError, match="1 to 64 printable characters"):
        TokenAuthenticator.from_lines(["dan token-of-dan-0123456789 ops,,x"])
    with pytest.raises(ValueError, match="found 4 fields"):
        TokenAuthenticator.from_lines(["dan token-of-dan-0123456789 ops extra"])


async def test_a_principal_without_a_role_the_policy_names_costs_no_load(tmp_path: Path) -> None:
    class Counting(MemoryThreadStore):
        loads = 0

        async def load(self, thread_id: str) -> Any:
            Counting.loads += 1
            return await super().load(thread_id)

    with anyio.fail_after(LIMIT):
        async with served(policy_file(tmp_path), store=Counting()) as (host, _):
            events = [e async for e in host.run(first("quiet"), principal=await host.authenticate(_bearer(ANN)))]
            assert events[-1].type == "RUN_FINISHED"
            carol = await host.authenticate(_bearer(CAROL))
            before = Counting.loads
            assert await host.view("quiet", carol) is None and await host.view("nothing", carol) is None
            assert Counting.loads == before  # the same as for a thread that does not exist: nothing read
            assert list(await host.inbox(carol)) == []


def _bearer(token: str) -> Any:
    from agui_core.runtime.auth import Credentials

    return Credentials(bearer=token)


# -- signed decisions -------------------------------------------------------------------------

SIGNED_POLICY = POLICY + "signed = true\n"


def ed25519() -> tuple[Any, dict[str, Any]]:
    """A private key, and its public JWK."""
    import json

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from jwt.algorithms import OKPAlgorithm

    private = Ed25519PrivateKey.generate()
    return private, json.loads(OKPAlgorithm.to_jwk(private.public_key()))


def signed_answer(
    thread_id: str, run_id: str, interrupt_id: str, key: Any, kid: str, *, signed_for: str | None = None
) -> RunAgentInput:
    import jwt

    from agui_core.runtime.signatures import SIGNATURE_KEY, signed_content

    payload = {"approved": True}
    content = signed_content(thread_id, signed_for or interrupt_id, "resolved", payload)
    token = jwt.api_jws.encode(content, key, algorithm="EdDSA", headers={"kid": kid}, is_payload_detached=True)
    entry = ResumeEntry(interrupt_id=interrupt_id, status="resolved", payload=payload, metadata={SIGNATURE_KEY: token})
    return RunAgentInput(thread_id=thread_id, run_id=run_id, resume=(entry,))


async def test_a_signed_decision_runs_and_a_missing_forged_or_reused_signature_is_refused(tmp_path: Path) -> None:
    from agui_core.runtime.signatures import ApproverKeys

    bob_key, bob_public = ed25519()
    mallory_key, _ = ed25519()
    keys = ApproverKeys({"bob": [{**bob_public, "kid": "bob-1"}]})
    with anyio.fail_after(LIMIT):
        async with served(policy_file(tmp_path, SIGNED_POLICY), approver_keys=keys) as (_, client):
            (one,) = (await post(client, ANN, first("sig-1")))[-1]["outcome"]["interrupts"]
            (two,) = (await post(client, ANN, first("sig-2")))[-1]["outcome"]["interrupts"]
            refusals = [
                answer("sig-1", "b-1", one["id"]),  # no signature at all
                signed_answer("sig-1", "b-2", one["id"], mallory_key, "bob-1"),  # bob's kid, another key
                signed_answer("sig-1", "b-3", one["id"], bob_key, "bob-1", signed_for=two["id"]),  # bob's, for sig-2
            ]
            for refused_input in refusals:
                refused = await post(client, BOB, refused_input)
                assert [(e["type"], e["code"]) for e in refused] == [("RUN_ERROR", "INVALID_SIGNATURE")]
            decided = await post(client, BOB, signed_answer("sig-1", "b-4", one["id"], bob_key, "bob-1"))
            assert decided[-1]["type"] == "RUN_FINISHED" and decided[-1]["result"] == {"email": "executed"}
            (line,) = (await client.get("/audit/sig-1", headers={"authorization": f"Bearer {ANN}"})).json()["entries"]
            assert (line["decidedBy"], line["decidedKey"]) == ("bob", "bob-1")


def test_approver_keys_refuse_a_private_key_and_a_key_without_a_kid() -> None:
    from agui_core.runtime.signatures import ApproverKeys

    private, public = ed25519()
    with pytest.raises(ValueError, match="has a 'kid'"):
        ApproverKeys({"bob": [public]})
    with pytest.raises(ValueError, match="private key"):
        ApproverKeys({"bob": [{**public, "kid": "k", "d": "secret"}]})
    assert private is not None


async def test_an_approvers_feed_hears_of_the_requests_it_may_decide_and_of_nothing_else(tmp_path: Path) -> None:
    from agui_transports.http import HttpTransport
    from agui_transports.plugin import ServeOptions

    from agui_core.protocol.framing import SSEReader

    stop, found, where = anyio.Event(), anyio.Event(), []

    def ready(url: str) -> None:
        where.append(url)
        found.set()

    heard: dict[str, list[dict[str, Any]]] = {"bob": [], "carol": []}
    listening = {name: anyio.Event() for name in heard}

    async def feed(client: httpx.AsyncClient, name: str, token: str) -> None:
        async with client.stream("GET", "/inbox/events", headers={"authorization": f"Bearer {token}"}) as response:
            reader = SSEReader()
            async for chunk in response.aiter_raw():
                for frame in reader.feed(chunk):
                    event = orjson.loads(frame)
                    if event["type"] == "ready":
                        listening[name].set()
                    else:
                        heard[name].append(event)

    authenticator = TokenAuthenticator.from_lines(TOKENS.splitlines())
    policy = PolicyFile(policy_file(tmp_path), check_every=0.0)
    with anyio.fail_after(LIMIT):
        async with (
            Host(agents.approval_agent, tools=agents.TOOLS, authenticator=authenticator, policy=policy) as host,
            anyio.create_task_group() as group,
        ):
            group.start_soon(HttpTransport().serve, host, ServeOptions(address="127.0.0.1:0", stop=stop, ready=ready))
            await found.wait()
            async with httpx.AsyncClient(base_url=where[0]) as client, anyio.create_task_group() as feeds:
                feeds.start_soon(feed, client, "bob", BOB)
                feeds.start_soon(feed, client, "carol", CAROL)
                await listening["bob"].wait()
                await listening["carol"].wait()
                asked = await post(client, ANN, first("feed-mail"))
                (interrupt,) = asked[-1]["outcome"]["interrupts"]
                while not any(e["state"] == "interrupted" for e in heard["bob"]):
                    await anyio.sleep(0.01)
                told = len(heard["bob"])
                await post(client, BOB, answer("feed-mail", "bob-2", interrupt["id"]))
                while len(heard["bob"]) == told:
                    await anyio.sleep(0.01)  # decided: told once more, so the page drops it
                stop.set()
    assert {e["threadId"] for e in heard["bob"]} == {"feed-mail"}
    assert [e["state"] for e in heard["bob"]][:2] == ["interrupted", "resumed"]
    assert heard["carol"] == []  # no role the policy names: told nothing of ann's thread
