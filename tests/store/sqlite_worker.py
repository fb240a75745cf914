"""A host-like process on a SQLite thread store, for ``test_sqlite_processes.py``.

Run as ``python -m tests.store.sqlite_worker COMMAND ...`` from the repository root:

``race DB DIR NAME OTHER ROUNDS``
    for each round ``r``: load thread ``race-r`` (interrupted), resume it with a ThreadMachine,
    wait until process ``OTHER`` has loaded it too (barrier files in ``DIR``), then save; print
    one JSON line per round: ``{"round": r, "result": "won" | "conflict", ...}``.
``save-and-hang DB THREAD UPTO``
    save the first ``UPTO`` records of the scenario for ``THREAD``, print the last one's JSON
    once ``save()`` has returned, then sleep until killed.
``load DB THREAD``
    print the JSON of the thread's record as loaded (``null`` for none).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio
import orjson

from agui_core.machine.record import record_to_dict
from agui_core.machine.thread import ThreadMachine
from agui_core.store import SqliteThreadStore, VersionConflict
from tests.machine.driver import NOW
from tests.store.scenario import approval_resume, persisted, scenario_records

__all__ = ["main"]

BARRIER_TIMEOUT = 30.0


def _say(value: object) -> None:
    sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
    sys.stdout.flush()


def _barrier(directory: Path, name: str, other: str, round_: int) -> None:
    (directory / f"{name}-{round_}").touch()
    deadline = time.monotonic() + BARRIER_TIMEOUT
    mark = directory / f"{other}-{round_}"
    while not mark.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"{name}: {other} never reached round {round_}")
        time.sleep(0.0002)


async def race(db: str, directory: str, name: str, other: str, rounds: int) -> None:
    async with SqliteThreadStore(db) as store:
        for round_ in range(rounds):
            thread_id = f"race-{round_}"
            loaded = await store.load(thread_id)
            assert loaded is not None
            machine = ThreadMachine.from_record(loaded)
            (record,) = persisted(machine.receive_input(approval_resume(thread_id, f"{name}-run-{round_}"), now=NOW))
            _barrier(Path(directory), name, other, round_)
            try:
                await store.save(record)
            except VersionConflict as conflict:
                _say(
                    {
                        "round": round_,
                        "result": "conflict",
                        "expected": conflict.expected,
                        "found": conflict.found,
                    }
                )
            else:
                _say({"round": round_, "result": "won", "version": record.version})


async def save_and_hang(db: str, thread_id: str, upto: int) -> None:
    store = SqliteThreadStore(db)
    records = scenario_records(thread_id)[:upto]
    for record in records:
        await store.save(record)
    _say(record_to_dict(records[-1]))
    await anyio.sleep(600)  # killed long before; never closes the store


async def load(db: str, thread_id: str) -> None:
    async with SqliteThreadStore(db) as store:
        record = await store.load(thread_id)
        _say(None if record is None else record_to_dict(record))


def main(argv: list[str]) -> None:
    command, *args = argv
    if command == "race":
        db, directory, name, other, rounds = args
        anyio.run(race, db, directory, name, other, int(rounds))
    elif command == "save-and-hang":
        db, thread_id, upto = args
        anyio.run(save_and_hang, db, thread_id, int(upto))
    elif command == "load":
        db, thread_id = args
        anyio.run(load, db, thread_id)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
