"""Framings of encoded events: Server-Sent Events and JSON lines, both ways, sans-IO.

Writers add the frame around bytes the codec produced. Readers are incremental: feed them
whatever bytes arrived and they return the complete frame bodies so far, so a transport, a
file reader and a test all share them.
"""

from __future__ import annotations

__all__ = [
    "SSE_CONTENT_TYPE",
    "JsonLinesReader",
    "SSEReader",
    "jsonl_frame",
    "sse_frame",
]

SSE_CONTENT_TYPE = "text/event-stream"


def sse_frame(body: bytes) -> bytes:
    """``data: <body>\\n\\n``. ``body`` is compact JSON, so it holds no newline."""
    return b"data: " + body + b"\n\n"


def jsonl_frame(body: bytes) -> bytes:
    """``<body>\\n``."""
    return body + b"\n"


class JsonLinesReader:
    """Splits a byte stream into lines; blank lines are skipped, ``\\r\\n`` is accepted.

    ``max_line`` bounds the bytes held for one unfinished line, so a peer that never sends a
    newline cannot grow memory without limit; past it :meth:`feed` raises ``ValueError``.
    """

    def __init__(self, *, max_line: int = 16 * 1024 * 1024) -> None:
        self._buffer = bytearray()
        self._max_line = max_line

    def feed(self, data: bytes) -> list[bytes]:
        """The complete lines in what has arrived so far, without their line ends."""
        self._buffer += data
        *lines, rest = self._buffer.split(b"\n")
        if len(rest) > self._max_line:
            raise ValueError(f"a line longer than {self._max_line} bytes")
        self._buffer = bytearray(rest)
        return [bytes(line.rstrip(b"\r")) for line in lines if line.strip()]

    def close(self) -> list[bytes]:
        """The last line, when the stream ended without a newline."""
        rest, self._buffer = bytes(self._buffer).strip(), bytearray()
        return [rest] if rest else []


class SSEReader:
    """Reads the ``data`` of Server-Sent Events, as the HTML standard's parser does.

    ``max_line`` bounds one unfinished line, as for :class:`JsonLinesReader`.

    Several ``data:`` lines of one event are joined with ``\\n``; comments (``:``) and the
    ``event``, ``id`` and ``retry`` fields are ignored; an event ends at a blank line.
    """

    def __init__(self, *, max_line: int = 16 * 1024 * 1024) -> None:
        self._max_line = max_line
        self._data: list[bytes] = []
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """The data of every event completed by what has arrived so far."""
        out: list[bytes] = []
        self._pending += data
        *lines, rest = self._pending.replace(b"\r\n", b"\n").split(b"\n")
        if len(rest) > self._max_line:
            raise ValueError(f"a line longer than {self._max_line} bytes")
        self._pending = bytearray(rest)
        for line in lines:
            self._line(bytes(line), out)
        return out

    def close(self) -> list[bytes]:
        """The data of an event left open when the stream ended."""
        out: list[bytes] = []
        if self._pending:
            self._line(bytes(self._pending), out)
            self._pending = bytearray()
        self._line(b"", out)
        return out

    def _line(self, line: bytes, out: list[bytes]) -> None:
        if not line:
            if self._data:
                out.append(b"\n".join(self._data))
                self._data = []
            return
        if line.startswith(b":"):
            return
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
