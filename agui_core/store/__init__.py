"""Where threads live between runs: the ThreadStore interface, in memory and in SQLite.

The PostgreSQL store needs the ``postgres`` extra, so it is imported from its own module:
``from agui_core.store.postgres import PostgresThreadStore``.
"""

from agui_core.store.base import DeliveryLedger, Purged, StoreError, ThreadStore, VersionConflict
from agui_core.store.memory import MemoryThreadStore
from agui_core.store.sqlite import SqliteThreadStore

__all__ = [
    "DeliveryLedger",
    "MemoryThreadStore",
    "Purged",
    "SqliteThreadStore",
    "StoreError",
    "ThreadStore",
    "VersionConflict",
]
