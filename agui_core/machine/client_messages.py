"""The conversation as a client assembles it from the events it accepted. No I/O.

:class:`MessageAssembly` keeps the messages of a thread's stream the way the published spec
tells a consumer to build them (``docs/spec/1.1``: the streaming pattern, tool calls, state):

- text and reasoning messages from their start/content events, a chunk expanded into them (a
  chunk naming an id no message has starts one); a start naming a message the client already
  holds reopens it, and what follows is appended to it;
- tool calls on the assistant message their ``parentMessageId`` names (a message is made for a
  call whose parent the client does not hold), arguments appended, a reopened call appended to;
  a ``TOOL_CALL_RESULT`` adds the tool message it mints;
- activity messages from ``ACTIVITY_SNAPSHOT`` (``replace: false`` leaves an existing one) and
  ``ACTIVITY_DELTA`` (a JSON Patch on its content; one that does not apply is reported);
- a message or call opened by an event attributed to a subagent keeps its ``subagentRunId``;
- an event's ``metadata`` merged into the message it concerns, a tool call event's into the
  call (later keys win, no deep merge);
- ``MESSAGES_SNAPSHOT`` reconciled by id: a message the client holds is replaced in place, a new
  one appended in snapshot order, one the snapshot leaves out dropped, except activity and
  reasoning messages when the snapshot carries none of that role (client-only material).

Messages accumulate across the runs of a stream. The assembly only keeps what accepted events
say; the client machine decides what is accepted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agui_core.machine.jsonpatch import JsonPatchError, apply_patch
from agui_core.protocol import events as ev
from agui_core.protocol.codec import converter, structure_message, unstructure_message
from agui_core.protocol.types import JSON, Message

__all__ = ["MessageAssembly"]

_CLIENT_ONLY = ("activity", "reasoning")


class MessageAssembly:
    """The messages assembled so far (:attr:`messages`), fed by :meth:`apply`."""

    def __init__(self) -> None:
        self._raw: list[dict[str, Any]] = []
        self._structured: tuple[Message, ...] | None = ()

    @property
    def messages(self) -> tuple[Message, ...]:
        """The assembled messages, in order, as wire objects."""
        if self._structured is None:
            structure = structure_message
            self._structured = tuple(structure(message, Message) for message in self._raw)
        return self._structured

    def _find(self, message_id: str) -> dict[str, Any] | None:
        raw = self._raw
        for index in range(len(raw) - 1, -1, -1):
            message = raw[index]
            if message.get("id") == message_id:
                found: dict[str, Any] = message
                return found
        return None

    def _find_call(self, tool_call_id: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        raw = self._raw
        for index in range(len(raw) - 1, -1, -1):
            message = raw[index]
            for call in message.get("toolCalls") or ():
                if call.get("id") == tool_call_id:
                    return message, call
        return None

    def _message(self, message_id: str, role: str, **fields: Any) -> dict[str, Any]:
        """The message ``message_id`` (a reopened one), or a new one with ``role``."""
        found = self._find(message_id)
        if found is None:
            found = {"id": message_id, "role": role, **fields}
            self._raw.append(found)
        return found

    @staticmethod
    def _merge_metadata(message: dict[str, Any], metadata: Mapping[str, JSON] | None) -> None:
        if metadata:
            message["metadata"] = {**(message.get("metadata") or {}), **metadata}

    def _text(
        self,
        message_id: str,
        role: str,
        delta: str | None,
        metadata: Mapping[str, JSON] | None,
        owner: str | None = None,
    ) -> None:
        message = self._message(message_id, role, content="")
        if owner is not None:
            message.setdefault("subagentRunId", owner)
        if delta:
            message["content"] = (message.get("content") or "") + delta
        self._merge_metadata(message, metadata)

    def _call(
        self,
        call_id: str,
        name: str | None,
        parent_id: str | None,
        delta: str | None,
        metadata: Mapping[str, JSON] | None,
        owner: str | None = None,
    ) -> None:
        found = self._find_call(call_id)
        if found is None:
            parent = self._find(parent_id) if parent_id is not None else None
            if parent is None or parent.get("role") != "assistant":
                parent = {"id": parent_id or call_id, "role": "assistant"}
                self._raw.append(parent)
            if owner is not None and parent_id is None:
                parent.setdefault("subagentRunId", owner)
            call: dict[str, Any] = {
                "id": call_id,
                "type": "function",
                "function": {"name": name or "", "arguments": ""},
            }
            parent.setdefault("toolCalls", []).append(call)
            found = parent, call
        _, call = found
        if delta:
            call["function"]["arguments"] += delta
        self._merge_metadata(call, metadata)  # a tool call's metadata is the call's own

    def apply(self, event: ev.Event, *, tool_call_id: str | None = None) -> str | None:
        """Take an accepted event. Returns why a part of it could not be applied, else ``None``.

        ``tool_call_id`` is the call an id-less ``TOOL_CALL_CHUNK`` continues (the client
        machine knows its lane).
        """
        self._structured = None
        if isinstance(event, ev.TextMessageStartEvent):
            self._text(event.message_id, event.role or "assistant", None, event.metadata, event.subagent_run_id)
            if event.name is not None:
                self._message(event.message_id, "assistant")["name"] = event.name
        elif isinstance(event, ev.TextMessageContentEvent):
            self._text(event.message_id, "assistant", event.delta, event.metadata, event.subagent_run_id)
        elif isinstance(event, ev.TextMessageEndEvent):
            message = self._find(event.message_id)
            if message is not None:
                self._merge_metadata(message, event.metadata)
        elif isinstance(event, ev.TextMessageChunkEvent):
            if event.message_id is not None:
                self._text(
                    event.message_id, event.role or "assistant", event.delta, event.metadata, event.subagent_run_id
                )
        elif isinstance(event, ev.ReasoningMessageStartEvent):
            self._text(event.message_id, "reasoning", None, event.metadata)
        elif isinstance(event, ev.ReasoningMessageContentEvent):
            self._text(event.message_id, "reasoning", event.delta, event.metadata)
        elif isinstance(event, ev.ReasoningMessageChunkEvent):
            if event.message_id is not None:
                self._text(event.message_id, "reasoning", event.delta, event.metadata)
        elif isinstance(event, ev.ToolCallStartEvent):
            self._call(
                event.tool_call_id,
                event.tool_call_name,
                event.parent_message_id,
                None,
                event.metadata,
                event.subagent_run_id,
            )
        elif isinstance(event, ev.ToolCallArgsEvent):
            self._call(event.tool_call_id, None, None, event.delta, event.metadata)
        elif isinstance(event, ev.ToolCallEndEvent):
            found = self._find_call(event.tool_call_id)
            if found is not None:
                self._merge_metadata(found[1], event.metadata)
        elif isinstance(event, ev.ToolCallChunkEvent):
            call_id = event.tool_call_id or tool_call_id
            if call_id is not None:
                self._call(
                    call_id,
                    event.tool_call_name,
                    event.parent_message_id,
                    event.delta,
                    event.metadata,
                    event.subagent_run_id,
                )
        elif isinstance(event, ev.ToolCallResultEvent):
            content = event.content
            tool: dict[str, Any] = {
                "id": event.message_id,
                "role": "tool",
                "toolCallId": event.tool_call_id,
                "content": content if isinstance(content, str) else [converter.unstructure(p) for p in content],
            }
            existing = self._find(event.message_id)
            if existing is not None:
                existing.clear()
                existing.update(tool)
            else:
                self._raw.append(tool)
        elif isinstance(event, ev.ActivitySnapshotEvent):
            existing = self._find(event.message_id)
            if existing is not None and event.replace is False:
                return None
            activity = {
                "id": event.message_id,
                "role": "activity",
                "activityType": event.activity_type,
                "content": dict(event.content),
            }
            if existing is not None:
                existing.clear()
                existing.update(activity)
            else:
                self._raw.append(activity)
            self._merge_metadata(existing or activity, event.metadata)
        elif isinstance(event, ev.ActivityDeltaEvent):
            existing = self._find(event.message_id)
            if existing is None or existing.get("role") != "activity":
                return f"ACTIVITY_DELTA for activity {event.message_id!r}, which no ACTIVITY_SNAPSHOT opened"
            try:
                existing["content"] = apply_patch(existing.get("content"), event.patch)
            except JsonPatchError as exc:
                return f"ACTIVITY_DELTA for activity {event.message_id!r} does not apply: {exc}"
        elif isinstance(event, ev.MessagesSnapshotEvent):
            self.reconcile(event.messages)
        return None

    def reconcile(self, snapshot: Iterable[Message], *, keep_client_only: bool = False) -> None:
        """Take a ``MESSAGES_SNAPSHOT`` (or the messages of an input the client sends): replace
        by id in place, append new, drop the rest (client-only roles the snapshot carries none
        of are kept; ``keep_client_only``: kept whatever it carries)."""
        unstructure = unstructure_message
        incoming = [unstructure(message) for message in snapshot]
        by_id = {message["id"]: message for message in incoming}
        roles = set() if keep_client_only else {message.get("role") for message in incoming}
        kept: list[dict[str, Any]] = []
        placed: set[str] = set()
        for message in self._raw:
            mid = str(message.get("id"))
            if mid in by_id:
                if mid not in placed:
                    kept.append(by_id[mid])
                    placed.add(mid)
            elif message.get("role") in _CLIENT_ONLY and message.get("role") not in roles:
                kept.append(message)
        kept.extend(message for message in incoming if message["id"] not in placed)
        self._raw = kept
        self._structured = None
