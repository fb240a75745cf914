"""Transports for agui-core hosts: stdio (JSON lines) and WebSocket, their clients, and the
plugin interface ``agui serve`` finds transports through (import name: ``agui_transports``)."""

from agui_transports.client import (
    Client,
    ConnectionLost,
    FrameConnection,
    LinesConnection,
    WebSocketConnection,
    connect_websocket,
    open_stdio_client,
)
from agui_transports.plugin import (
    ENTRY_POINT_GROUP,
    ServeOptions,
    Transport,
    UnknownTransportError,
    available_transports,
    load_transport,
)
from agui_transports.stdio import StdioTransport, serve_json_lines, serve_stdio
from agui_transports.websocket import WebSocketServer, WebSocketTransport

__all__ = [
    "ENTRY_POINT_GROUP",
    "Client",
    "ConnectionLost",
    "FrameConnection",
    "LinesConnection",
    "ServeOptions",
    "StdioTransport",
    "Transport",
    "UnknownTransportError",
    "WebSocketConnection",
    "WebSocketServer",
    "WebSocketTransport",
    "available_transports",
    "connect_websocket",
    "load_transport",
    "open_stdio_client",
    "serve_json_lines",
    "serve_stdio",
]
