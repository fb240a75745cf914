"""OS pipes for serving stdio in process: the server's ends and the client's, as unbuffered files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

__all__ = ["pipes"]


@contextmanager
def pipes() -> Iterator[tuple[BinaryIO, BinaryIO, BinaryIO, BinaryIO]]:
    """The server's stdin and stdout, and the client's ends of them (feed, drain), as OS pipes."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    with (
        open(in_read, "rb", 0) as stdin,
        open(in_write, "wb", 0) as feed,
        open(out_read, "rb", 0) as drain,
        open(out_write, "wb", 0) as stdout,
    ):
        yield stdin, stdout, feed, drain
