"""What a client may say about a thread's history: the rules for the ``messages`` and ``state`` of an input.

Clients send ``messages`` and ``state`` with every run (the seed allows replay-style
continuation), but the server is the authority for everything it emitted (SPEC section 9):

- A client message whose id the thread knows must match the thread's copy (role, content,
  tool calls, the tool call a result answers); a client cannot rewrite what was said. A thread
  may hold two messages under one id (an agent that reused it): a copy of either is taken.
- Messages the client leaves out are kept: an input never deletes history.
- Messages the thread does not know are the client's own words when they are ``user``,
  ``system`` or ``developer`` messages, or ``tool`` results of calls the agent left to the
  client (a frontend tool: a call of this thread with no result yet, counted per id, as a
  provider may give a later call the id of an earlier one): those are appended, in the
  order the input gives them.
- Anything else the thread does not know is in the agent's voice (``assistant``, ``reasoning``,
  ``activity``, a result of a call the thread never made or one an interrupt gates, whose
  result is the host's to give once the resume answers the interrupt): the client may hold it
  from a run that failed (whose output the thread dropped) or have made it up. It is left out: the
  agent's words come only from the agent. A thread with no history yet takes any messages (a
  conversation moved from elsewhere), but for the agent's messages holding a call its tool
  journal keeps: those are its own failed run's, which a retry of that run proposes again.
- ``state``: absent or ``null`` keeps the thread's state, and so does ``{}`` (what a fresh
  client sends) on a thread that has a state; any other state replaces it, on a resume too
  (AG-UI's shared state is the client's to write). So an agent never routes by state: a
  resumed run learns what it was doing from the interrupts it answers and their
  continuation, which only the server holds.

A rule broken is ``HISTORY_CONFLICT``, naming the message and what differs; nothing changes.
Also here: the limits on the ids an input carries (:func:`check_input_ids`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import Any, Final

import attrs
import orjson

from agui_core.errors import RemoteProtocolError, RunErrorCode, format_path
from agui_core.protocol.codec import (
    MAX_DEPTH,
    depth_checked,
    input_to_dict,
    json_fault,
    parsed_messages,
    unstructure_message,
)
from agui_core.protocol.types import JSON, AssistantMessage, Message, RunAgentInput, ToolMessage

__all__ = [
    "CLIENT_ROLES",
    "MAX_DEPTH",
    "MAX_ID_LENGTH",
    "HistoryUpdate",
    "bad_id",
    "check_input_depth",
    "check_input_ids",
    "fitted_id",
    "merge_history",
    "message_id_fault",
    "tool_result_id",
]

MAX_ID_LENGTH: Final = 256
"""The longest id (thread, run, message, tool call, interrupt) an input may carry."""


CLIENT_ROLES: Final = frozenset({"user", "system", "developer"})
"""The roles a client may add to a thread that has history (``tool`` too, for frontend tools)."""


@attrs.frozen(kw_only=True)
class HistoryUpdate:
    """What an accepted input changes: messages to append, and the state to adopt (``None``: keep)."""

    added: tuple[Message, ...] = ()
    state: JSON = None
    wire: tuple[dict[str, Any], ...] = ()
    """The wire dicts of ``added``, in order (made while comparing them; measured against the thread's size limit)."""


def bad_id(value: object) -> str | None:
    """Why ``value`` is no id an input may carry (empty, too long, not printable ASCII, or
    holding a space), or ``None``: an id that is one, or no string at all (the wire schema's to
    refuse, and not this rule's).

    The thread machine asks it of the ids an agent gives the thread too: a client sends a
    thread's message, tool call and interrupt ids back in its later inputs, so an id the rule
    refuses there would leave the thread unable to take another input.
    """
    if not isinstance(value, str):
        return None
    if not value:
        return "an id cannot be empty"
    if len(value) > MAX_ID_LENGTH:
        return f"an id is at most {MAX_ID_LENGTH} characters, not {len(value)}"
    if not (value.isascii() and value.isprintable()) or " " in value:
        return "an id is printable ASCII without spaces"
    return None


_KEPT_OF_ID: Final = 200
"""How much of an id :func:`fitted_id` shortens it keeps, before its digest."""

_NOT_IN_AN_ID: Final = re.compile(r"[^!-~]")
"""A character :func:`bad_id` refuses in an id."""


def fitted_id(value: str) -> str:
    """``value`` if it is an id :func:`bad_id` takes; otherwise one it takes, made from it.

    For the ids the host and the adapters derive from others (a tool result's from its call's,
    an interrupt's from a framework's and the run's): the derived one must be an id too, since
    clients send it back. The same ``value`` always gives the same id (a replay retraces the
    ids the first run made): what ``value`` holds of the rule's characters, cut to
    :data:`_KEPT_OF_ID`, then ``~`` and a digest of the whole of it.
    """
    if bad_id(value) is None:
        return value
    kept = _NOT_IN_AN_ID.sub("", value)[:_KEPT_OF_ID]
    return f"{kept}~{hashlib.blake2b(value.encode('utf-8', 'surrogatepass'), digest_size=16).hexdigest()}"


def tool_result_id(tool_call_id: str) -> str:
    """The id the host gives the ``tool`` message of the result of ``tool_call_id``: predictable,
    so a retried run names it as the first attempt did, and always an id (:func:`fitted_id`)."""
    return fitted_id(f"result-{tool_call_id}")


_GOOD_IDS: Final = re.compile(rf"[!-~]{{1,{MAX_ID_LENGTH}}}+(?: [!-~]{{1,{MAX_ID_LENGTH}}}+)*+")
"""Ids :func:`bad_id` takes, joined by single spaces: printable ASCII but the space, 1 to
:data:`MAX_ID_LENGTH` characters each.

Possessive (``+`` after each repeat): an id ends only at a space, so nothing matched is ever
worth giving back, and a text that fails fails in one pass. Backtracking instead would try
every shorter length of every id before it: 10 to 18 times a passing text's cost for
thousands of long ids with a bad one last."""


def _all_fine(ids: list[Any]) -> bool:
    """Whether every one of ``ids`` (not empty) is a string :func:`bad_id` takes (the question
    without its answer): judged on them joined by spaces, in one pass of a compiled pattern,
    rather than one Python call an id (an input that sends a conversation again carries an id
    for each message and tool call). No good id holds a space, so the joined text holds exactly
    one space fewer than there are ids; the pattern then reads each id between them: not
    empty, not too long, printable ASCII."""
    try:
        joined = " ".join(ids)
    except TypeError:
        return False  # an id that is no string
    return joined.count(" ") == len(ids) - 1 and _GOOD_IDS.fullmatch(joined) is not None


_ID: Final = attrgetter("id")


def _gather_ids(messages: Sequence[Message], ids: list[Any]) -> None:
    """Add to ``ids`` every id of ``messages``: each message's, each tool result's
    ``toolCallId`` and each tool call's."""
    ids += map(_ID, messages)
    for message in messages:
        # By class, not getattr with a default: a slotted class without the field raises inside.
        if isinstance(message, ToolMessage):
            ids.append(message.tool_call_id)
        elif isinstance(message, AssistantMessage) and message.tool_calls:
            ids += map(_ID, message.tool_calls)


def check_input_ids(run_input: RunAgentInput) -> None:
    """Refuse (``INVALID_INPUT``, with the path) an id that is empty, too long or not printable ASCII."""
    # Every input goes through here: the ids are judged in one pass first, and the paths are
    # built only when one fails.
    ids = [run_input.thread_id, run_input.run_id]
    if run_input.parent_run_id is not None:
        ids.append(run_input.parent_run_id)
    ids += [entry.interrupt_id for entry in run_input.resume or ()]
    _gather_ids(run_input.messages, ids)
    if _all_fine(ids):
        return
    for name, value in (("threadId", run_input.thread_id), ("runId", run_input.run_id)):
        _check_id(value, name)
    if run_input.parent_run_id is not None:
        _check_id(run_input.parent_run_id, "parentRunId")
    for index, entry in enumerate(run_input.resume or ()):
        _check_id(entry.interrupt_id, "resume", index, "interruptId")
    fault = message_id_fault(run_input.messages, judged=True)
    if fault is not None:
        path, why = fault
        raise RemoteProtocolError(
            RunErrorCode.INVALID_INPUT, f"invalid RunAgentInput at {format_path(('messages', *path))}: {why}"
        )


def message_id_fault(
    messages: Sequence[Message], *, judged: bool = False, held: Callable[[str], bool] | None = None
) -> tuple[tuple[str | int, ...], str] | None:
    """The first id of ``messages`` :func:`bad_id` refuses (a message's, a tool result's
    ``toolCallId``, a tool call's), as its path within them and why; ``None``: none. With
    ``held``, an id it says the thread holds already is not judged (a thread saved before
    agents' ids were judged may hold one the rule refuses).

    The ids are judged joined first, in one pass, as :func:`check_input_ids` does; with
    ``judged`` (they failed that already), or once they fail it, an id at a time, to name the one.
    """
    if not judged:
        ids: list[Any] = []
        _gather_ids(messages, ids)
        if not ids or _all_fine(ids):
            return None
    for index, message in enumerate(messages):
        named: list[tuple[tuple[str | int, ...], object]] = [((index, "id"), message.id)]
        call_id = getattr(message, "tool_call_id", None)
        if call_id is not None:
            named.append(((index, "toolCallId"), call_id))
        for number, call in enumerate(getattr(message, "tool_calls", None) or ()):
            named.append(((index, "toolCalls", number, "id"), call.id))
        for path, value in named:
            why = bad_id(value)
            if why is not None and not (held is not None and isinstance(value, str) and held(value)):
                return path, why
    return None


def _check_id(value: object, *path: str | int) -> None:
    why = bad_id(value)
    if why is not None:
        raise RemoteProtocolError(RunErrorCode.INVALID_INPUT, f"invalid RunAgentInput at {format_path(path)}: {why}")


def check_input_depth(run_input: RunAgentInput) -> None:
    """Refuse (``INVALID_INPUT``, with the path) an input nested deeper than :data:`MAX_DEPTH`.

    Decoding refuses those already, and an input the codec decoded is not walked again
    (:func:`~agui_core.protocol.codec.depth_checked`); this covers inputs built in code, so
    that nothing an input brings into a thread is deeper than what the thread can save and
    announce.
    """
    if depth_checked(run_input):
        return
    fault = json_fault(input_to_dict(run_input))
    if fault is not None:
        at, why = fault
        raise RemoteProtocolError(RunErrorCode.INVALID_INPUT, f"invalid RunAgentInput at {format_path(at)}: {why}")


def _canonical(value: JSON) -> bytes:
    # check_input_depth has already refused anything nested past what JSON encoding allows.
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


_COMPARED = ("role", "content", "toolCalls", "toolCallId")
"""What a client's copy of a message must keep: what was said, by whom, and which calls.

Other fields (``metadata``, ``subagentRunId``, ``encryptedValue``, ...) are the client's own
bookkeeping: the reference client adds some from events the thread does not copy onto messages.
"""


def _normal(message: Mapping[str, Any]) -> bytes:
    """A message's identity for comparing a client's copy with the thread's.

    Absent, ``null`` and empty content are the same, and so are absent and empty tool calls;
    a tool call is its id, name and arguments.
    """
    out = {key: message[key] for key in _COMPARED if message.get(key) is not None}
    if out.get("content") in ("", []):
        del out["content"]
    calls = out.pop("toolCalls", None)
    if calls:
        try:
            out["toolCalls"] = [[c["id"], c["function"]["name"], c["function"]["arguments"]] for c in calls]
        except (KeyError, TypeError):
            out["toolCalls"] = calls  # not the agent's calls (an unknown key on another role): as they came
    return _canonical(out)


_TEXT: Final = (str, type(None))
"""A message's content (or its absence, ``None``) that compares as Python objects exactly as JSON does."""


def _same_copy(copy: Mapping[str, Any], server: Mapping[str, Any]) -> bool:
    """Whether ``copy`` (a message as an input's bytes carried it) is plainly ``server`` (the
    thread's wire dict of it): equal as Python dicts, compared at C speed, where every field
    :func:`_normal` compares is a string. To Python ``true``, ``1`` and ``1.0`` are equal, so
    not where one could be JSON of another kind: content that is not text, a ``toolCallId``
    that is no string, or ``toolCalls`` on a role other than the agent's (unknown keys there,
    kept as they came).
    """
    return (
        copy == server
        and copy.get("content").__class__ in _TEXT
        and copy.get("toolCallId").__class__ in _TEXT
        and ("toolCalls" not in copy or copy.get("role") == "assistant")
    )


def _said_the_same(message: Message, server: Mapping[str, Any]) -> bool:
    """Whether ``message`` says what ``server`` (the thread's wire dict of it) says, read off the
    structured message without building its wire dict: ``True`` only when :func:`_normal` of the
    two is the same. A message whose content is not text (content parts, an activity's JSON) is
    not judged here (``False``): its content is compared as JSON, where ``true`` is not ``1``.

    Asked where :func:`_same_copy` cannot tell: a copy carrying a client's own bookkeeping
    fields, or an input not decoded from bytes. A message with unknown keys is not judged here
    either: one may be a ``toolCallId`` or ``toolCalls`` its role does not have.
    """
    content = message.content
    if message.extra or (content is not None and content.__class__ is not str):
        return False
    theirs = server.get("content")
    if server.get("role") != message.role or (content or None) != (None if theirs in ("", []) else theirs):
        return False
    call_id = message.tool_call_id if isinstance(message, ToolMessage) else None
    if call_id != server.get("toolCallId"):
        return False
    mine = (message.tool_calls if isinstance(message, AssistantMessage) else None) or ()
    held = server.get("toolCalls") or ()
    if len(mine) != len(held):
        return False
    for call, kept in zip(mine, held, strict=True):
        function, known = call.function, kept["function"]
        if call.id != kept["id"] or function.name != known["name"] or function.arguments != known["arguments"]:
            return False
    return True


_ABSENT: Final = (None, "", ())
"""The contents that say nothing, which :func:`_normal` leaves out. ``in`` compares with ``==``,
and nothing else is equal to one of them: ``False``, ``0`` and ``{}`` are content."""


def _same_message(message: Message, server: Message) -> bool:
    """Whether ``message`` says what ``server`` (the thread's copy, held as a wire object) says:
    what :func:`_said_the_same` asks of a wire dict, asked of the object. Content that is not
    text and unknown keys (on either) are not judged here (``False``), as there."""
    if message.__class__ is not server.__class__ or message.extra or server.extra:
        return False  # the class is the role
    content, theirs = message.content, server.content
    if content != theirs:
        if content not in _ABSENT or theirs not in _ABSENT:
            return False  # other text, or content that is not text
    elif content is not None and content.__class__ is not str:
        return False  # equal to Python, where ``true`` is ``1``
    if isinstance(message, ToolMessage):
        return message.tool_call_id == server.tool_call_id  # type: ignore[union-attr]
    if not isinstance(message, AssistantMessage):
        return True
    mine, held = message.tool_calls, server.tool_calls  # type: ignore[union-attr]
    if not mine:
        return not held
    if not held or len(mine) != len(held):
        return False
    for index in range(len(mine)):
        call, kept = mine[index], held[index]
        function, known = call.function, kept.function
        if call.id != kept.id or function.name != known.name or function.arguments != known.arguments:
            return False
    return True


def _differs(client: Mapping[str, Any], server: Mapping[str, Any]) -> str:
    return next(key for key in _COMPARED if _normal({key: client.get(key)}) != _normal({key: server.get(key)}))


def _calls_any(message: Mapping[str, Any], calls: set[str]) -> bool:
    """Whether the wire dict of an agent's ``message`` holds a tool call of ``calls``."""
    return any(isinstance(call, Mapping) and call.get("id") in calls for call in message.get("toolCalls") or ())


def _open_calls(messages: Sequence[dict[str, Any] | Message]) -> dict[str, int]:
    """The tool calls ``messages`` (wire dicts and objects) hold, each with how many of its
    proposals no ``tool`` message answers yet. Counted, not collected: some model providers
    number their calls afresh every round (``call_0``), so a thread may hold one id twice, the
    first answered and the second open."""
    open_calls: dict[str, int] = {}
    for m in messages:
        if isinstance(m, AssistantMessage):
            for call in m.tool_calls or ():
                open_calls[call.id] = open_calls.get(call.id, 0) + 1
        elif isinstance(m, ToolMessage):
            open_calls[m.tool_call_id] = open_calls.get(m.tool_call_id, 0) - 1
        elif isinstance(m, dict):
            role = m.get("role")
            if role == "assistant":  # only the agent makes tool calls; a key on another role is inert
                for call in m.get("toolCalls") or ():
                    open_calls[call["id"]] = open_calls.get(call["id"], 0) + 1
            elif role == "tool":
                call_id = m.get("toolCallId", "")
                open_calls[call_id] = open_calls.get(call_id, 0) - 1
    return open_calls


def _held_copy(message: Message, copy: Mapping[str, Any] | None, held: dict[str, Any] | Message) -> bool:
    """Whether ``message`` of an input (``copy``: as the input's bytes carried it, when known)
    is the thread's ``held`` message sent back (see :func:`merge_history`)."""
    if isinstance(held, dict):
        if (copy is not None and _same_copy(copy, held)) or _said_the_same(message, held):
            return True
    elif _same_message(message, held):
        return True
    return _same_json(message, held)


def _same_json(message: Message, held: dict[str, Any] | Message) -> bool:
    """Whether ``message`` and the thread's ``held`` message are the same JSON: the question
    :func:`_held_copy` asks last, of the copies its quicker ones cannot tell."""
    server = held if isinstance(held, dict) else unstructure_message(held)
    data = unstructure_message(message)
    # A copy whose JSON is the thread's, byte for byte, is the same message without the
    # canonical forms. (Not ``==`` on the dicts: to Python, ``true``, ``1`` and ``1.0`` are equal.)
    return orjson.dumps(data) == orjson.dumps(server) or _normal(data) == _normal(server)


def _held_twice(thread_messages: Sequence[dict[str, Any] | Message]) -> dict[str, list[dict[str, Any] | Message]]:
    """The thread's messages whose id it holds more than once, by id, in the thread's order."""
    by_id: dict[str, list[dict[str, Any] | Message]] = {}
    for m in thread_messages:
        by_id.setdefault(m["id"] if m.__class__ is dict else m.id, []).append(m)  # type: ignore[union-attr]
    return {key: held for key, held in by_id.items() if len(held) > 1}


def merge_history(
    thread_messages: Sequence[dict[str, Any] | Message],
    thread_state: JSON,
    run_input: RunAgentInput,
    *,
    gated_calls: Iterable[str],
    host_results: Mapping[str, dict[str, Any]] = {},
) -> HistoryUpdate:
    """What ``run_input`` adds to a thread holding ``thread_messages`` (wire dicts, or wire
    objects where the thread holds them so: see :class:`~agui_core.machine.transcript.Transcript`)
    and ``thread_state``.

    ``gated_calls`` are the tool calls an interrupt gates (open or answered): their results
    are the host's to give, and a client's are left out. ``host_results`` are tool results the host sent that the thread
    no longer holds (their run failed and was rolled back; the tool journal keeps them, by
    message id): a client may send them back unchanged, and they are left out.
    Raises ``RemoteProtocolError`` (``HISTORY_CONFLICT``).
    """
    # Every message of a thread has an id (its wire dict's is required, as its object's is).
    # Told apart by class: the thread's dicts are plain dicts, and isinstance() would double
    # the cost of this line (12 us against 7 us for 100 messages).
    known = {(m["id"] if m.__class__ is dict else m.id): m for m in thread_messages}  # type: ignore[union-attr]
    # An agent may have given two of its messages one id (one it reuses every run, a result of
    # a call id its provider reuses): a copy of either is the thread's.
    twice = _held_twice(thread_messages) if len(known) != len(thread_messages) else None
    if host_results:
        known = {**host_results, **known}  # the thread's own message wins an id they share
    fresh = not thread_messages
    open_calls: dict[str, int] | None = None  # the thread's open tool calls, when first asked
    gated = set(gated_calls)
    unstructure = unstructure_message
    sent = parsed_messages(run_input)
    added: list[Message] = []
    added_ids: dict[str, dict[str, Any]] = {}
    for index, message in enumerate(run_input.messages):
        held = known.get(message.id)
        if held is not None:
            # A client sends the whole conversation with every input: the copies the thread has
            # are told apart without building their wire dicts where they can be (the fast
            # paths of _held_copy, without a call a message).
            if isinstance(held, dict):
                if (sent is not None and _same_copy(sent[index], held)) or _said_the_same(message, held):
                    continue
            elif _same_message(message, held):
                continue
            if _same_json(message, held):
                continue
            copy = sent[index] if sent is not None else None
            if twice is not None and any(_held_copy(message, copy, m) for m in twice.get(message.id, ())):
                continue
            server = held if isinstance(held, dict) else unstructure(held)
            where = f"messages[{index}] (id {message.id!r})"
            raise RemoteProtocolError(
                RunErrorCode.HISTORY_CONFLICT,
                f"{where}: its {_differs(unstructure(message), server)} differs from the thread's record of that "
                "message; a client cannot rewrite messages the thread has (send them unchanged, or leave them out)",
            )
        data = unstructure(message)
        where = f"messages[{index}] (id {message.id!r})"
        twin = added_ids.get(message.id)
        if twin is not None:
            if _normal(twin) != _normal(data):
                raise RemoteProtocolError(
                    RunErrorCode.HISTORY_CONFLICT, f"{where}: two different messages with the same id"
                )
            continue
        if fresh:
            if gated and data.get("role") == "assistant" and _calls_any(data, gated):
                # The host's own call, from this thread's run that failed (its journal keeps
                # the call): the run retried proposes it again, and finds what the tool did.
                continue
        else:
            role = data.get("role")
            if role != "assistant" and data.get("toolCalls"):
                raise RemoteProtocolError(
                    RunErrorCode.HISTORY_CONFLICT, f"{where}: only the agent's messages carry tool calls"
                )
            if role == "tool":
                if open_calls is None:
                    open_calls = _open_calls(thread_messages)
                call_id: str = data["toolCallId"]  # a tool message's, required
                if call_id in gated or open_calls.get(call_id, 0) <= 0:
                    # Not the client's to give: a gated call's result is the host's (a client may
                    # still hold one from a run that failed), and the others the thread never
                    # made or already has.
                    continue
                open_calls[call_id] -= 1
            elif role not in CLIENT_ROLES:
                continue  # in the agent's voice: only the agent writes those
        added_ids[message.id] = data
        added.append(message)
    state: JSON = None
    offered = run_input.state
    keeps = offered is None or (offered == {} and thread_state is not None)
    if not keeps and _canonical(offered) != _canonical(thread_state):
        state = offered
    return HistoryUpdate(added=tuple(added), state=state, wire=tuple(added_ids.values()))
