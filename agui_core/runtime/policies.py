"""A decision policy read from a TOML file, and read again when the file changes.

``agui serve --policy FILE`` (``Host(policy=PolicyFile(path))`` embedded): the file says who may
decide which interrupts (:mod:`agui_core.machine.policy`). A host looks at the file's size and
modification time at most once a second, when it needs the policy, and reads it again when
either changed: an operator edits the policy without restarting the host. A file that no
longer reads as a policy is logged, and the last good policy stays in force; at start it is an
error.
"""

from __future__ import annotations

import logging
import os
import time
import tomllib
from collections.abc import Callable

from agui_core.machine.policy import DecisionPolicy, policy_from_toml

__all__ = ["PolicyFile", "read_policy"]

log = logging.getLogger("agui_core.runtime.policies")


def read_policy(path: str | os.PathLike[str]) -> DecisionPolicy:
    """The policy in the TOML file at ``path``; ``ValueError`` naming what is wrong."""
    name = os.fspath(path)
    try:
        with open(path, "rb") as file:
            document = tomllib.load(file)
    except OSError as exc:
        raise ValueError(f"{name}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{name}: not TOML ({exc})") from None
    return policy_from_toml(document, name=name)


class PolicyFile:
    """The policy in the file at ``path``, as it stands (see the module docstring)."""

    def __init__(
        self, path: str | os.PathLike[str], *, check_every: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.path = os.fspath(path)
        self._check_every = check_every
        self._clock = clock
        self._seen = self._stamp()
        self._policy = read_policy(self.path)
        self._checked = clock()

    def _stamp(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except OSError:
            return None
        return found.st_mtime_ns, found.st_size

    def current(self) -> DecisionPolicy:
        """The policy in force now: the file's, read again if it changed since it was last read."""
        now = self._clock()
        if now - self._checked < self._check_every:
            return self._policy
        self._checked = now
        stamp = self._stamp()
        if stamp == self._seen:
            return self._policy
        self._seen = stamp
        try:
            self._policy = read_policy(self.path)
        except ValueError as exc:
            log.error("the policy file did not read (%s); the policy read before stays in force", exc)
        else:
            log.info("read the policy again from %s", self.path)
        return self._policy
