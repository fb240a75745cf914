"""ThreadChanges: a host's saves handed to the watchers of each thread's owner, never waiting."""

from __future__ import annotations

import anyio
import pytest

from agui_core.machine.record import ThreadRecord
from agui_core.machine.transitions import ThreadState
from agui_core.runtime.watch import ThreadChange, ThreadChanges

pytestmark = pytest.mark.anyio


def record(thread_id: str, owner: str, version: int = 1) -> ThreadRecord:
    return ThreadRecord(thread_id=thread_id, owner=owner, version=version, state=ThreadState.INTERRUPTED)


async def test_a_watcher_hears_of_its_principals_threads_only() -> None:
    changes = ThreadChanges()
    with changes.watch("ann") as ann, changes.watch("bob") as bob:
        changes.saved(record("t1", "ann"))
        changes.saved(record("t2", "bob"))
        changes.saved(record("t3", "carol"))  # nobody watches carol: nothing is made
        assert ann.receive_nowait() == ThreadChange(thread_id="t1", owner="ann", state="interrupted", version=1)
        assert bob.receive_nowait().thread_id == "t2"
        with pytest.raises(anyio.WouldBlock):
            ann.receive_nowait()
        assert len(changes) == 2
    assert len(changes) == 0


async def test_a_watcher_that_falls_behind_is_dropped_and_publishing_never_waits() -> None:
    changes = ThreadChanges(buffer=2)
    with changes.watch("ann") as slow, changes.watch("ann") as quick:
        for version in range(1, 4):
            changes.saved(record("t1", "ann", version))
            assert quick.receive_nowait().version == version
        # The slow one kept two, then was dropped: its stream ends after what it has.
        assert [slow.receive_nowait().version, slow.receive_nowait().version] == [1, 2]
        with pytest.raises(anyio.EndOfStream):
            slow.receive_nowait()
        assert len(changes) == 1


async def test_a_principal_past_its_limit_of_watchers_loses_its_oldest_and_nobody_elses() -> None:
    changes = ThreadChanges()
    with changes.watch("bob", limit=1) as bob, changes.watch("ann", limit=2) as first:
        with changes.watch("ann", limit=2) as second, changes.watch("ann", limit=2) as third:
            assert (changes.watching("ann"), changes.watching("bob")) == (2, 1)
            with pytest.raises(anyio.EndOfStream):
                first.receive_nowait()  # ended, with nothing lost: it held nothing
            changes.saved(record("t1", "ann"))
            changes.saved(record("t2", "bob"))
            assert second.receive_nowait().thread_id == third.receive_nowait().thread_id == "t1"
            assert bob.receive_nowait().thread_id == "t2"
        with changes.watch("bob", limit=1):
            with pytest.raises(anyio.EndOfStream):
                bob.receive_nowait()
    assert len(changes) == 0
    with pytest.raises(ValueError, match="1 or more"), changes.watch("ann", limit=0):
        pass
