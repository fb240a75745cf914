"""The AG-UI 1.0 wire: types, events, the codec, framings, schemas and payload validators."""

from agui_core.protocol.codec import (
    decode_event,
    decode_input,
    encode_event,
    encode_input,
    event_from_dict,
    event_to_dict,
    input_from_dict,
    input_to_dict,
)
from agui_core.protocol.events import *  # noqa: F403
from agui_core.protocol.events import __all__ as _events_all
from agui_core.protocol.framing import SSE_CONTENT_TYPE, JsonLinesReader, SSEReader, jsonl_frame, sse_frame
from agui_core.protocol.payload import PayloadValidators
from agui_core.protocol.types import *  # noqa: F403
from agui_core.protocol.types import __all__ as _types_all

__all__ = [
    "SSE_CONTENT_TYPE",
    "JsonLinesReader",
    "PayloadValidators",
    "SSEReader",
    "decode_event",
    "decode_input",
    "encode_event",
    "encode_input",
    "event_from_dict",
    "event_to_dict",
    "input_from_dict",
    "input_to_dict",
    "jsonl_frame",
    "sse_frame",
    *_events_all,
    *_types_all,
]
