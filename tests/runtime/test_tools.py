"""The edits a tool's approval publishes are exactly the edits its host enforces.

A tool declared with typed parameters and no ``args_schema`` publishes, as ``editedArgs`` in
its approval's ``responseSchema``, the very schema the host holds edits to (read from the
signature, nested attrs classes, dataclasses and TypedDicts included); one with an
``args_schema`` publishes that schema as enforced (closed to unknown keys). Edits the published
schema refuses are refused by the host, and edits it accepts run, nested classes built.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any, Literal, TypedDict

import attrs
import fastjsonschema
import pytest

from agui_core.protocol.types import JSON
from agui_core.runtime import Host, RunContext, Tool, tool
from agui_core.store import ThreadStore
from tests.runtime.conversation import Clock, counter, make_input

pytestmark = pytest.mark.anyio


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


@dataclasses.dataclass
class Room:
    building: str
    floor: int
    size: Size = Size.SMALL


@attrs.define
class Guest:
    name: str
    email: str | None = None


class Catering(TypedDict, total=False):
    coffee: bool
    lunch: Literal["veg", "any"]


booked: list[dict[str, Any]] = []


@tool("bookRoom", needs_approval=True)
async def book_room(
    title: str, room: Room, guests: list[Guest], catering: Catering, hours: float = 1.0
) -> dict[str, JSON]:
    """Book a meeting room."""
    assert isinstance(room, Room) and all(isinstance(guest, Guest) for guest in guests)
    booked.append({"room": room, "guests": guests, "catering": catering, "hours": hours})
    return {"booked": title, "building": room.building, "guests": [guest.name for guest in guests]}


ROOM_SCHEMA = {
    "type": "object",
    "properties": {
        "building": {"type": "string"},
        "floor": {"type": "integer"},
        "size": {"enum": ["small", "large"]},
    },
    "additionalProperties": False,
    "required": ["building", "floor"],
}


def test_a_signature_with_nested_classes_is_read_as_closed_objects_all_the_way_down() -> None:
    assert book_room.parameters == {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "room": ROOM_SCHEMA,
            "guests": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "email": {"type": ["string", "null"]}},
                    "additionalProperties": False,
                    "required": ["name"],
                },
            },
            "catering": {
                "type": "object",
                "properties": {"coffee": {"type": "boolean"}, "lunch": {"enum": ["veg", "any"]}},
                "additionalProperties": False,
            },
            "hours": {"type": "number"},
        },
        "additionalProperties": False,
        "required": ["title", "room", "guests", "catering"],
    }


@pytest.mark.parametrize(
    "declared",
    [
        book_room,
        Tool(name="plain", function=lambda to, subject, body="": None, needs_approval=True),
        Tool(
            name="given",
            function=lambda **kwargs: None,
            needs_approval=True,
            args_schema={"type": "object", "properties": {"to": {"type": "string"}}},
        ),
    ],
    ids=["nested", "untyped", "args_schema"],
)
def test_the_published_edit_schema_is_the_enforced_one(declared: Tool) -> None:
    published = declared.approval_schema["properties"]
    assert isinstance(published, dict)
    assert published["editedArgs"] == declared.parameters
    assert declared.parameters.get("additionalProperties") is False


def test_a_tool_without_edits_publishes_no_edit_schema() -> None:
    closed = Tool(name="t", function=lambda x: None, needs_approval=True, allow_edits=False)
    published = closed.approval_schema["properties"]
    assert isinstance(published, dict) and "editedArgs" not in published


PROPOSED = {
    "title": "Planning",
    "room": {"building": "A", "floor": 2},
    "guests": [{"name": "Ann"}],
    "catering": {"coffee": True},
}


async def agent(ctx: RunContext) -> JSON:
    outcome = await ctx.call_tool("bookRoom", PROPOSED, tool_call_id="tc-1")
    return {"status": outcome.status, "result": outcome.result}


async def start(host: Host) -> tuple[str, dict[str, Any]]:
    events = [e async for e in host.run(make_input({"threadId": "t-1", "runId": "r-1"}))]
    finished = events[-1]
    assert finished.type == "RUN_FINISHED" and finished.outcome.type == "interrupt"
    (interrupt,) = finished.outcome.interrupts
    return interrupt.id, interrupt.response_schema


@pytest.mark.parametrize(
    ("edited", "where"),
    [
        ({**PROPOSED, "room": {"building": "A", "floor": "two"}}, "editedArgs.room.floor"),
        ({**PROPOSED, "room": {"building": "A", "floor": 2, "vip": True}}, "editedArgs.room"),
        ({**PROPOSED, "guests": [{"email": "x@example.com"}]}, "editedArgs.guests[0]"),
        ({**PROPOSED, "catering": {"lunch": "steak"}}, "editedArgs.catering.lunch"),
    ],
)
async def test_edits_the_published_schema_refuses_the_host_refuses(
    store: ThreadStore, edited: dict[str, Any], where: str
) -> None:
    async with Host(agent, store=store, tools=[book_room], clock=Clock(), new_id=counter()) as host:
        iid, schema = await start(host)
        payload = {"approved": True, "editedArgs": edited}
        with pytest.raises(fastjsonschema.JsonSchemaException):
            fastjsonschema.compile(schema)(payload)  # what a client checks before sending
        resume = [{"interruptId": iid, "status": "resolved", "payload": payload}]
        refused = [e async for e in host.run(make_input({"threadId": "t-1", "runId": "r-2", "resume": resume}))]
    assert [(e.type, e.code) for e in refused] == [("RUN_ERROR", "INVALID_PAYLOAD")]
    assert where in refused[0].message, refused[0].message


async def test_edits_the_published_schema_accepts_run_with_nested_classes_built(store: ThreadStore) -> None:
    booked.clear()
    async with Host(agent, store=store, tools=[book_room], clock=Clock(), new_id=counter()) as host:
        iid, schema = await start(host)
        record = await store.load("t-1")
        assert record is not None
        (waiting,) = record.open_interrupts
        assert waiting.proposal is not None and schema["properties"]["editedArgs"] == waiting.proposal.parameters
        edited = {
            **PROPOSED,
            "room": {"building": "B", "floor": 3, "size": "large"},
            "guests": [{"name": "Ann"}, {"name": "Bob", "email": "bob@example.com"}],
        }
        payload = {"approved": True, "editedArgs": edited}
        fastjsonschema.compile(schema)(payload)
        resume = [{"interruptId": iid, "status": "resolved", "payload": payload}]
        done = [e async for e in host.run(make_input({"threadId": "t-1", "runId": "r-2", "resume": resume}))]
    assert done[-1].type == "RUN_FINISHED" and done[-1].result == {
        "status": "executed",
        "result": {"booked": "Planning", "building": "B", "guests": ["Ann", "Bob"]},
    }
    (call,) = booked
    assert call["room"] == Room(building="B", floor=3, size=Size.LARGE)
    assert call["guests"] == [Guest(name="Ann"), Guest(name="Bob", email="bob@example.com")]


def test_tool_without_parentheses_makes_a_tool_as_with_them() -> None:
    def look_up(name: str) -> str:
        """Look up a person's address."""
        return name

    bare, called = tool(look_up), tool()(look_up)
    assert isinstance(bare, Tool) and bare == called
    assert (bare.name, bare.description, bare.needs_approval) == ("look_up", "Look up a person's address.", False)
    with pytest.raises(TypeError, match=r"@tool takes a tool's name \(a string\) or its function, not 42"):
        tool(42)  # type: ignore[call-overload]


def test_a_host_refuses_a_tool_list_holding_what_is_no_tool_naming_it() -> None:
    def look_up(name: str) -> str:
        return name

    with pytest.raises(TypeError, match=r"tools\[1\] is <function .*look_up.*>, not a Tool: make it one with @tool"):
        Host(lambda ctx: None, tools=[tool(look_up), look_up])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"tools\[0\] is 'look_up', not a Tool$"):
        Host(lambda ctx: None, tools=["look_up"])  # type: ignore[list-item]
