"""Transports for agui-core hosts (import name: agui_transports)."""
