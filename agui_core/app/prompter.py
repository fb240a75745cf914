"""Asking a person, one line at a time: the demo's terminal answers to interrupts.

:class:`TerminalPrompter` renders each interrupt by its reason, as :meth:`ClientMachine.route
<agui_core.machine.client.ClientMachine.route>` tells: an approval shows the tool call and
offers approve, deny, cancel and, when the schema offers edits, edit; a form asks for each field
of its ``responseSchema`` with type coercion; a confirmation asks yes or no; any other reason
shows its message and takes a raw JSON answer. Every answer is checked by the client machine
before it is returned, and asked again, with the reason, when it is refused.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any, Final, TextIO

import orjson

from agui_core.app.event_lines import as_json, show_value
from agui_core.errors import LocalProtocolError, PayloadError, RunErrorCode
from agui_core.machine.client import Reply, Route, approve, approve_with_edits, cancel, deny, resolve
from agui_core.protocol.types import JSON

__all__ = ["MISSING", "Check", "Missing", "Read", "TerminalPrompter", "refusal_text", "stdin_reader"]

Read = Callable[[str], str]
"""Show a prompt and return the line typed (without its newline); ``EOFError`` at end of input."""

Check = Callable[[Reply], LocalProtocolError | None]
"""What the client machine says of an answer before it is sent (``None``: it would be accepted)."""


class Missing:
    """No value (a blank answer to a field with no current value)."""


MISSING: Final = Missing()


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _hint(schema: Mapping[str, Any]) -> str:
    """What a field expects, in a few words (``integer, at least 2000``)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return "one of " + ", ".join(str(v) if isinstance(v, str) else as_json(v) for v in enum)
    types = _types(schema)
    words = [" or ".join(types) if types else "JSON"]
    if "boolean" in types and len(types) == 1:
        words = ["yes/no"]
    if isinstance(schema.get("minimum"), int | float):
        words.append(f"at least {schema['minimum']}")
    if isinstance(schema.get("maximum"), int | float):
        words.append(f"at most {schema['maximum']}")
    if isinstance(schema.get("format"), str):
        words.append(f"format {schema['format']}")
    return ", ".join(words)


def _coerce(text: str, schema: Mapping[str, Any]) -> JSON:
    """``text`` as the value ``schema`` asks for; ``ValueError`` says why it is not one."""
    types = _types(schema)
    enum = schema.get("enum")
    if not types and isinstance(enum, list) and all(isinstance(v, str) for v in enum):
        types = ["string"]
    # Strings last: "2026" for a field of type ["integer", "string"] means the number.
    for kind in sorted(types, key=lambda t: t == "string"):
        if kind == "integer":
            try:
                return int(text)
            except ValueError:
                continue
        if kind == "number":
            try:
                number = float(text)
            except ValueError:
                continue
            if number != number or number in (float("inf"), float("-inf")):
                continue
            return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
        if kind == "boolean":
            word = text.lower()
            if word in ("y", "yes", "true"):
                return True
            if word in ("n", "no", "false"):
                return False
            continue
        if kind == "null" and text == "null":
            return None
        if kind == "string":
            return text
        if kind in ("object", "array"):
            try:
                value = orjson.loads(text)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict if kind == "object" else list):
                return value
    if not types:
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    raise ValueError(f"{text!r} is not {' or '.join(('an ' if t[0] in 'aeiou' else 'a ') + t for t in types)}")


def refusal_text(error: LocalProtocolError) -> tuple[str, tuple[str | int, ...] | None]:
    """What to tell the person of a refused answer, and the payload path at fault, if known."""
    cause = error.__cause__
    if isinstance(cause, PayloadError):
        where = ".".join(str(part) for part in cause.path) or "the answer"
        return f"{where}: {cause.expected}", cause.path
    return error.message.removeprefix("resume refused: "), None


class TerminalPrompter:
    """Asks a person for the answer to each interrupt, one line at a time.

    ``read`` shows a prompt and returns the line typed (``EOFError`` at end of input, which
    is passed on); ``write`` prints a line. Every answer goes through ``check`` before it is
    returned, and is asked again, with the reason, when it is refused.
    """

    def __init__(self, read: Read, write: Callable[[str], None]) -> None:
        self._read = read
        self._write = write

    def answer(self, route: Route, check: Check) -> Reply:
        """The person's answer to the interrupt ``route`` renders."""
        if route.kind == "approval":
            return self._approval(route, check)
        if route.kind == "form" and _object_properties(route.schema) is not None:
            return self._form(route, check)
        if route.kind == "confirmation" and route.schema == {"type": "boolean"}:
            return self._confirmation(check)
        return self._json_answer(route, check)

    def _ask(self, prompt: str) -> str:
        return self._read(prompt).strip()

    def _refused(self, error: LocalProtocolError) -> tuple[str | int, ...] | None:
        message, path = refusal_text(error)
        self._write(f"     not accepted: {message}")
        return path

    def _approval(self, route: Route, check: Check) -> Reply:
        options = ["approve", "deny", *(["edit"] if route.editable else []), "cancel"]
        while True:
            choice = self._ask(f"     {', '.join(options)}? ").lower()
            reply: Reply
            if choice in ("a", "approve", "y", "yes"):
                reply = approve()
            elif choice in ("d", "deny", "n", "no"):
                reply = deny()
            elif choice in ("c", "cancel"):
                reply = cancel()
            elif route.editable and choice in ("e", "edit"):
                reply = self._edit(route, check)
            else:
                self._write(f"     please answer {', '.join(options)} (or the first letter)")
                continue
            error = check(reply)
            if error is None:
                return reply
            self._refused(error)

    def _edit(self, route: Route, check: Check) -> Reply:
        """Approve with edits: each argument asked again (Enter keeps it); the whole set replaces the args."""
        schema = route.schema or {}
        properties = schema.get("properties")
        edited_schema = properties.get("editedArgs") if isinstance(properties, Mapping) else None
        call = route.tool_call
        current = dict(call.args) if call is not None and isinstance(call.args, dict) else {}
        self._write("     edit the arguments (Enter keeps a value); they replace the proposed ones whole")
        return self._fill(
            edited_schema if isinstance(edited_schema, Mapping) else {},
            current,
            lambda values: approve_with_edits(values),
            check,
            prefix=("editedArgs",),
        )

    def _form(self, route: Route, check: Check) -> Reply:
        return self._fill(route.schema or {}, {}, lambda values: resolve(values), check, prefix=())

    def _fill(
        self,
        schema: Mapping[str, Any],
        current: Mapping[str, JSON],
        build: Callable[[dict[str, JSON]], Reply],
        check: Check,
        *,
        prefix: tuple[str, ...],
    ) -> Reply:
        """Ask each field of an object schema, then re-ask the field the client machine refused."""
        properties = _object_properties(schema) or {}
        required = {name for name in schema.get("required", ()) if isinstance(name, str)}
        names = [*properties, *(name for name in current if name not in properties)]
        values: dict[str, JSON] = dict(current)
        todo = names
        while True:
            for name in todo:
                field = properties.get(name)
                value = self._field(
                    name, field if isinstance(field, Mapping) else {}, values.get(name, MISSING), name in required
                )
                if isinstance(value, Missing):
                    values.pop(name, None)
                else:
                    values[name] = value
            reply = build(dict(values))
            error = check(reply)
            if error is None:
                return reply
            if error.code == RunErrorCode.INTERRUPT_EXPIRED:
                # No edit can fix that: the only answer left is to cancel.
                self._write(f"     not accepted: {refusal_text(error)[0]}; cancelled instead")
                return cancel()
            path = self._refused(error)
            at = path[len(prefix)] if path is not None and len(path) > len(prefix) else None
            todo = [at] if isinstance(at, str) and path is not None and path[: len(prefix)] == prefix else names

    def _field(self, name: str, schema: Mapping[str, Any], current: JSON | Missing, required: bool) -> JSON | Missing:
        keep = "" if isinstance(current, Missing) else f" [{show_value(current)}]"
        while True:
            text = self._ask(f"     {name} ({_hint(schema)}){keep}: ")
            if not text:
                if not isinstance(current, Missing):
                    return current
                if not required:
                    return MISSING
                self._write(f"     {name} is required")
                continue
            try:
                return _coerce(text, schema)
            except ValueError as exc:
                self._write(f"     {exc}")

    def _confirmation(self, check: Check) -> Reply:
        while True:
            choice = self._ask("     yes, no or cancel? ").lower()
            reply: Reply
            if choice in ("y", "yes"):
                reply = resolve(True)
            elif choice in ("n", "no"):
                reply = resolve(False)
            elif choice in ("c", "cancel"):
                reply = cancel()
            else:
                self._write("     please answer yes, no or cancel")
                continue
            error = check(reply)
            if error is None:
                return reply
            self._refused(error)

    def _json_answer(self, route: Route, check: Check) -> Reply:
        """The fallback: the answer typed as JSON (or ``cancel``), checked against the schema."""
        while True:
            text = self._ask("     answer as JSON, or cancel: ")
            reply: Reply
            if text.lower() in ("c", "cancel"):
                reply = cancel()
            else:
                try:
                    reply = resolve(orjson.loads(text))
                except orjson.JSONDecodeError:
                    self._write("     that is not JSON (a string is written in double quotes)")
                    continue
            error = check(reply)
            if error is None:
                return reply
            self._refused(error)


def _object_properties(schema: object) -> Mapping[str, Any] | None:
    if not isinstance(schema, Mapping):
        return None
    properties = schema.get("properties")
    if schema.get("type") not in (None, "object") or not isinstance(properties, Mapping) or not properties:
        return None
    return properties


def stdin_reader(out: TextIO) -> Read:
    """Read answers from standard input; when it is not a terminal, the answer is echoed to
    ``out`` after its prompt, so a piped session reads like a typed one."""
    interactive = sys.stdin.isatty()

    def read(prompt: str) -> str:
        if interactive:
            return input(prompt)
        out.write(prompt)
        out.flush()
        line = sys.stdin.readline()
        if not line:
            out.write("\n")
            raise EOFError
        line = line.rstrip("\r\n")
        out.write(line + "\n")
        return line

    return read


# --- the host ----------------------------------------------------------------------------
