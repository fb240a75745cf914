"""The expense example served by ``agui serve`` for the straight-line crash tests.

``agui serve tests.e2e.expense_served:served`` hosts :func:`~agui_core.examples.expense_agent`
with its tools, each of which also appends what it ran with to the file ``$AGUI_TEST_EFFECTS``
(so a tool run twice shows as two lines). With ``$AGUI_TEST_KILL_STEP=N`` the process kills
itself (SIGKILL) as the agent is about to take the N-th new step this process takes: after
every step before it, before anything of that one.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

from agui_core.examples import expenses
from agui_core.machine.journal import Step
from agui_core.runtime import RunContext, Tool, tool

__all__ = ["served"]

_kill_at = int(os.environ.get("AGUI_TEST_KILL_STEP", "0"))
_new_steps = 0
_take = RunContext._take


async def _take_or_die(self: RunContext, kind: str, key: str, prefix: str) -> tuple[int, Step, bool]:
    global _new_steps
    taken = await _take(self, kind, key, prefix)
    if not taken[2]:
        _new_steps += 1
        if _new_steps == _kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
    return taken


RunContext._take = _take_or_die  # type: ignore[method-assign]


def _logged(original: Tool) -> Tool:
    async def run(**kwargs: Any) -> Any:
        with Path(os.environ["AGUI_TEST_EFFECTS"]).open("ab") as file:
            file.write(orjson.dumps([original.name, kwargs]) + b"\n")
            file.flush()
            os.fsync(file.fileno())
        return await original.invoke(kwargs)

    return tool(
        original.name,
        needs_approval=original.needs_approval,
        allow_edits=original.allow_edits,
        args_schema=original.parameters,
    )(run)


served = SimpleNamespace(agent=expenses.expense_agent, tools=[_logged(t) for t in expenses.TOOLS])
