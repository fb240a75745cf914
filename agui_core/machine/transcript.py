"""The transcript of a thread: its messages and agent state, as the events of its runs left them.

:class:`~agui_core.machine.thread.ThreadMachine` applies every event it lets through to its
:class:`Transcript`, so that it can emit the ``STATE_SNAPSHOT`` and ``MESSAGES_SNAPSHOT`` an
interrupt boundary needs, bind a tool-bound interrupt to the call as proposed, and hand a
store the conversation. The machine decides what may be applied (ordering, depth, JSON Patch);
the transcript only keeps the result. No I/O.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from agui_core.machine.record import Proposal, make_proposal
from agui_core.protocol import events as ev
from agui_core.protocol.codec import converter, structure_message, unstructure_message
from agui_core.protocol.types import JSON, AssistantMessage, Message

__all__ = ["Entry", "Transcript", "message_size", "own_json", "tool_message", "wire_size"]


Entry = dict[str, Any] | Message
"""A message as the transcript holds it: its wire dict, or the wire object it came as (see :class:`Transcript`)."""

_NO_TAIL: Final[tuple[str | None, list[str]]] = (None, [])
""":attr:`Transcript.text_tail` when no content stream is the last one added to (its list is never appended to)."""


def message_size(message: Message) -> int:
    """The size in bytes of ``message`` as its compact wire JSON: what a store keeps of it."""
    return len(orjson.dumps(unstructure_message(message)))


def wire_size(data: dict[str, Any]) -> int:
    """:func:`message_size` of a message from its wire dict (the JSON is the same)."""
    return len(orjson.dumps(data))


def own_json(value: JSON) -> JSON:
    """A copy of ``value`` whose containers are the machine's own.

    Agents keep editing the state objects they are handed or have emitted; without a copy,
    such an edit would change the machine's state, its records and what ``fail()`` rolls back to.
    """
    if isinstance(value, dict):
        return {key: own_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [own_json(item) for item in value]
    if isinstance(value, tuple):
        return tuple(own_json(item) for item in value)
    return value


def tool_message(event: ev.ToolCallResultEvent) -> dict[str, Any]:
    """The ``tool`` message a ``TOOL_CALL_RESULT`` adds to the thread, as a wire dict."""
    content = event.content
    return {
        "id": event.message_id,
        "role": "tool",
        "toolCallId": event.tool_call_id,
        "content": content if isinstance(content, str) else [converter.unstructure(p) for p in content],
    }


class Transcript:
    """A thread's messages and its agent state, as the events of its runs left them.

    Each message is held in one form at a time (:attr:`raw`): as the wire object it came as
    (a record's, a snapshot's, an input's), until something needs its wire dict; then as that
    dict, which events change. A conversation taken whole (a record loaded, a run rolled back)
    or extended costs what the list does, not one conversion a message; only the messages an
    event or a lookup finds (the one a stream goes into, the one a tool call joins, an activity
    replaced, a call proposed) become dicts. Reading :attr:`messages` structures only the dicts that changed since the
    last read (each dict's structured form is kept until it changes), so an interrupt's
    ``MESSAGES_SNAPSHOT`` and every saved record cost what the run changed, not the length of
    the conversation. Whatever changes a dict of ``raw`` says so through :meth:`touch` (the
    methods here do).

    :attr:`size` is kept the same way: a message is measured (:func:`message_size`) once when
    it joins and again after it changes, never the whole conversation per read; a conversation
    taken whole with its size known (a record's) is not measured at all.
    """

    def __init__(self) -> None:
        self.raw: list[Entry] = []
        """The messages: wire dicts (the form events are applied to) and wire objects not yet needed as dicts."""
        self.structured: tuple[Message, ...] | None = ()
        """``raw`` as wire objects, built when asked for and dropped (``None``) when they change."""
        self.typed: dict[int, tuple[dict[str, Any], Message]] = {}
        """The structured form of each wire dict of ``raw`` that has not changed since it was
        built (or since it was made from it), by the dict's ``id`` (the dict is kept with it,
        so that id is never reused)."""
        self.streams: dict[tuple[str, str], tuple[dict[str, Any], str, list[str], dict[str, Any]]] = {}
        """Text streamed into ``raw`` and not yet joined: by (field, id), the dict that holds
        the text, its key, the pieces and the message the dict belongs to. Appending each
        delta to a string would copy the whole text every time (quadratic in its length); the
        pieces are joined once, when the messages are read (:meth:`settle`)."""
        self.text_tail: tuple[str | None, list[str]] = _NO_TAIL
        """The message id and the pieces of the content stream :meth:`stream_text` last added
        to, while that stream is in ``streams`` (``_NO_TAIL`` otherwise): a message streamed a
        delta at a time finds its pieces here, not by a key built and hashed per delta.
        Whatever removes a stream from ``streams`` resets it."""
        self.state: JSON = None
        """The agent state."""
        self.measured: dict[int, tuple[dict[str, Any], int]] = {}
        """The size of each wire dict of ``raw`` measured since it was added or changed, by the
        dict's ``id`` (kept with it, as in ``typed``)."""
        self.unmeasured: dict[int, dict[str, Any]] = {}
        """The wire dicts added or changed since they were last measured, by ``id``."""
        self.uncounted: list[Message] = []
        """Wire objects taken (:meth:`replace`, :meth:`extend`) without their sizes, measured
        into ``counted`` when the size is next asked for (they never change, so it may go
        below their sum until then: a change to one of them takes its size off at once)."""
        self.counted = 0
        """The size of every message but the unmeasured and uncounted ones: the measured ones'
        and those of the wire objects taken with their sizes, not measured one by one."""

    @property
    def size(self) -> int:
        """The size of the messages in bytes: the sum of :func:`message_size` over them."""
        self.settle()  # text streamed and not yet joined changes the size of what it joins
        if self.uncounted:
            self.counted += sum(map(message_size, self.uncounted))
            self.uncounted.clear()
        unmeasured = self.unmeasured
        if unmeasured:
            measured = self.measured
            for key, message in unmeasured.items():
                # The wire dict is the message's compact wire JSON (the same members as its
                # structured form's, so the same length): measured as it stands, not built.
                size = len(orjson.dumps(message))
                measured[key] = (message, size)
                self.counted += size
            unmeasured.clear()
        return self.counted

    @property
    def messages(self) -> tuple[Message, ...]:
        """The messages as wire objects."""
        structured = self.structured
        if structured is None:
            self.settle()
            typed = self.typed
            structure = structure_message
            out: list[Message] = []
            for entry in self.raw:
                if entry.__class__ is not dict:
                    out.append(entry)  # type: ignore[arg-type]
                    continue
                known = typed.get(id(entry))
                if known is None:
                    known = typed[id(entry)] = (entry, structure(entry, Message))
                out.append(known[1])
            structured = self.structured = tuple(out)
        return structured

    def _wire(self, index: int) -> dict[str, Any]:
        """The message at ``index`` of ``raw`` as its wire dict, made from its wire object (and
        kept in its place) the first time it is needed: it counts as it did, and stays its
        structured form until it changes."""
        entry = self.raw[index]
        if isinstance(entry, dict):
            return entry
        data = unstructure_message(entry)
        self.raw[index] = data
        self.typed[id(data)] = (data, entry)
        return data

    def touch(self, message: dict[str, Any]) -> None:
        """Note that ``message`` (a wire dict of ``raw``) changed: its structured form and size are stale."""
        key = id(message)
        known = self.typed.pop(key, None)
        if key not in self.unmeasured:
            # What the message counted for goes: its measured size, or, for a message taken
            # as a wire object (counted in ``counted``, never measured alone), the size of its
            # form before the change (its structured form is that until now: every change
            # before this one popped it).
            measured = self.measured.pop(key, None)
            if measured is not None:
                self.counted -= measured[1]
            elif known is not None:
                self.counted -= message_size(known[1])
            self.unmeasured[key] = message
        self.structured = None

    def _append(self, message: dict[str, Any]) -> None:
        self.raw.append(message)
        self.unmeasured[id(message)] = message

    def replace(self, messages: tuple[Message, ...], size: int | None = None) -> None:
        """Take ``messages`` as the whole conversation (what is streamed and not joined is dropped).

        ``size`` is their :attr:`size` if known (``None``: they are measured when it is next asked for).
        """
        self.streams.clear()
        self.text_tail = _NO_TAIL
        self.raw = list(messages)
        self.typed = {}
        self.structured = tuple(messages)
        self.measured = {}
        self.unmeasured = {}
        self.uncounted = [] if size is not None else list(messages)
        self.counted = 0 if size is None else size

    def extend(self, messages: tuple[Message, ...], sizes: tuple[int, ...] | None = None) -> None:
        """Append ``messages`` to the conversation (``sizes``: their :func:`message_size`, if known)."""
        self.raw += messages
        if sizes is None:
            self.uncounted += messages
        else:
            self.counted += sum(sizes)
        self.structured = None

    def proposal(self, tool_call_id: str, parameters: Any) -> Proposal | None:
        """The tool call ``tool_call_id`` as the transcript holds it now, or ``None``."""
        self.settle()
        call = self.find_tool_call(tool_call_id)
        if call is None:
            return None
        function = call["function"]
        return make_proposal(
            tool_call_id=tool_call_id,
            name=function["name"],
            arguments=function["arguments"] or "",
            parameters=parameters,
        )

    def find_message(self, message_id: str) -> dict[str, Any] | None:
        """The wire dict of the last message ``message_id``, or ``None``."""
        raw = self.raw
        for index in range(len(raw) - 1, -1, -1):
            entry = raw[index]
            if entry.__class__ is dict:
                if entry.get("id") == message_id:
                    return entry
            elif entry.id == message_id:  # type: ignore[union-attr]
                return self._wire(index)
        return None

    def _find_call(self, tool_call_id: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The agent's tool call ``tool_call_id`` and the message that carries it, as wire dicts.

        Only an assistant message's calls are the agent's: a ``toolCalls`` key among another
        role's unknown keys (kept from a client's message) is not a call, and what is nested
        there is the client's JSON, which no event may change.
        """
        raw = self.raw
        for index in range(len(raw) - 1, -1, -1):
            entry = raw[index]
            if entry.__class__ is dict:
                if entry.get("role") != "assistant":
                    continue
            elif isinstance(entry, AssistantMessage):
                # Looked at as it is, and made a dict only when it holds the call.
                if not any(call.id == tool_call_id for call in entry.tool_calls or ()):
                    continue
                entry = self._wire(index)
            else:
                continue
            for call in entry.get("toolCalls") or ():
                if call.get("id") == tool_call_id:
                    return entry, call
        return None

    def find_tool_call(self, tool_call_id: str) -> dict[str, Any] | None:
        found = self._find_call(tool_call_id)
        return None if found is None else found[1]

    def stream(self, key: tuple[str, str], delta: str) -> None:
        """Add ``delta`` to the text ``key`` names: a message's content or a tool call's arguments."""
        stream = self.streams.get(key)
        if stream is None:
            field, ident = key
            if field == "content":
                owner = holder = self.find_message(ident)
            else:
                found = self._find_call(ident)
                owner, holder = (None, None) if found is None else (found[0], found[1]["function"])
            if holder is None or owner is None:
                return
            # The owner's structured form goes stale when the stream is joined (settle, end_stream).
            stream = self.streams[key] = (holder, field, [holder.get(field) or ""], owner)
        stream[2].append(delta)

    def stream_text(self, message_id: str, delta: str) -> None:
        """What a ``TEXT_MESSAGE_CONTENT`` of ``message_id`` does to the transcript, without the event."""
        self.structured = None
        tail = self.text_tail
        if tail[0] == message_id:
            tail[1].append(delta)
            return
        key = ("content", message_id)
        self.stream(key, delta)
        stream = self.streams.get(key)
        if stream is not None:  # None: no such message, nothing to stream into
            self.text_tail = (message_id, stream[2])

    def stream_delta(self, key: tuple[str, str], delta: str) -> None:
        """What a ``TEXT_MESSAGE_CONTENT`` or ``TOOL_CALL_ARGS`` does to the transcript: ``delta``
        added to the text ``key`` names (see :meth:`stream`)."""
        self.structured = None
        self.stream(key, delta)

    def settle(self) -> None:
        """Join the text streamed since the messages were last read into the messages."""
        for holder, field, pieces, owner in self.streams.values():
            holder[field] = "".join(pieces)
            self.touch(owner)
        self.streams.clear()
        self.text_tail = _NO_TAIL

    def end_stream(self, key: tuple[str, str]) -> None:
        """Join one stream: a new message or call with the same id must not receive its deltas."""
        stream = self.streams.pop(key, None)
        if stream is not None:
            self.text_tail = _NO_TAIL
            holder, field, pieces, owner = stream
            holder[field] = "".join(pieces)
            self.touch(owner)

    def apply_message_event(self, event: ev.Event) -> None:
        self.structured = None
        if isinstance(event, ev.TextMessageStartEvent):
            self.end_stream(("content", event.message_id))
            message: dict[str, Any] = {"id": event.message_id, "role": event.role or "assistant", "content": ""}
            if event.name is not None:
                message["name"] = event.name
            self._append(message)
        elif isinstance(event, ev.TextMessageContentEvent | ev.ReasoningMessageContentEvent):
            self.stream(("content", event.message_id), event.delta)
        elif isinstance(event, ev.ReasoningMessageStartEvent):
            self.end_stream(("content", event.message_id))
            self._append({"id": event.message_id, "role": "reasoning", "content": ""})
        elif isinstance(event, ev.ToolCallStartEvent):
            self.end_stream(("arguments", event.tool_call_id))
            call: dict[str, Any] = {
                "id": event.tool_call_id,
                "type": "function",
                "function": {"name": event.tool_call_name, "arguments": ""},
            }
            parent_id = event.parent_message_id
            parent = self.find_message(parent_id) if parent_id is not None else None
            if parent is None or parent.get("role") != "assistant":
                parent = {"id": parent_id or event.tool_call_id, "role": "assistant"}
                self._append(parent)
            else:
                self.touch(parent)
            parent.setdefault("toolCalls", []).append(call)
        elif isinstance(event, ev.ToolCallArgsEvent):
            self.stream(("arguments", event.tool_call_id), event.delta)
        elif isinstance(event, ev.ToolCallResultEvent):
            self._append(tool_message(event))
        elif isinstance(event, ev.ActivitySnapshotEvent):
            existing = self.find_message(event.message_id)
            if existing is not None and event.replace is False:
                return
            activity = {
                "id": event.message_id,
                "role": "activity",
                "activityType": event.activity_type,
                "content": dict(event.content),
            }
            if existing is not None:
                self.settle()  # nothing streamed into the message it replaces may land later
                existing.clear()
                existing.update(activity)
                self.touch(existing)
            else:
                self._append(activity)
