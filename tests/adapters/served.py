"""A compiled graph as ``agui serve tests.adapters.served:graph`` loads it (its own InMemorySaver)."""

from __future__ import annotations

from tests.adapters.graphs import approval_graph

__all__ = ["graph"]

graph = approval_graph()
