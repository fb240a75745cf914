"""One reading of expiresAt for both machines."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agui_core.errors import LocalProtocolError
from agui_core.machine.expiry import read_expires_at
from agui_core.machine.thread import ThreadMachine
from agui_core.protocol.types import Interrupt
from tests.machine.driver import NOW, make_input


@pytest.mark.parametrize(
    ("value", "instant"),
    [
        ("2026-04-20T17:00:00Z", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20t17:00:00z", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20T19:00:00+02:00", datetime(2026, 4, 20, 17, tzinfo=UTC)),
        ("2026-04-20T17:00:00.123999Z", datetime(2026, 4, 20, 17, 0, 0, 123000, tzinfo=UTC)),
    ],
)
def test_rfc3339_with_a_time_zone_reads_to_the_millisecond(value: str, instant: datetime) -> None:
    assert read_expires_at(value) == instant


@pytest.mark.parametrize(
    "value", ["2026-04-20T17:00:00", "20260420T170000Z", "2026-04-20", "2026-04-20T24:00:00Z", "2026-02-30T00:00:00Z"]
)
def test_anything_else_is_refused_in_the_same_words(value: str) -> None:
    with pytest.raises(ValueError, match="is not an RFC 3339 date-time with a time zone"):
        read_expires_at(value)


def test_the_thread_machine_refuses_what_a_client_could_not_read() -> None:
    machine = ThreadMachine("t")
    machine.receive_input(make_input("t", "run-1"), now=NOW)
    with pytest.raises(LocalProtocolError, match="not an RFC 3339"):
        machine.interrupt([Interrupt(id="i", reason="input_required", expires_at="20260420T170000Z")], now=NOW)
