"""A Python API over the reference TypeScript packages (``@ag-ui/core``, ``@ag-ui/client``).

Each function hands a whole batch to one ``node`` process (JSON on stdin, JSON on stdout) and
returns one result per case, in order. The packages are the ones pinned in
``tests/interop/node/package.json``; when node or the installed packages are missing these
functions raise :class:`NodeBridgeError` (the interop tests fail, they never skip).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "ENFORCE_REMOVED",
    "NODE_DIR",
    "ClientCycle",
    "NodeBridgeError",
    "NodeResult",
    "ResumeResult",
    "json_equal",
    "node_agent_cycles",
    "node_http_agent",
    "node_resume",
    "node_validate",
    "node_verify",
    "node_ws_cycle",
]

NODE_DIR = Path(__file__).resolve().parent / "node"
"""The npm project holding the pinned reference packages and the bridge scripts."""

ENFORCE_REMOVED = "[ag-ui][enforce] Removed"
"""How ``enforceEvents`` starts the warning it prints when it strips something from an event."""

_PINNED = {"@ag-ui/core": "1.0.0", "@ag-ui/client": "1.0.0"}
_INSTALL_HINT = "run `npm ci --prefix tests/interop/node` from the repository root"
_TIMEOUT_SECONDS = 120


class NodeBridgeError(RuntimeError):
    """Node, the reference packages or a bridge script is missing or failed."""


@dataclass(frozen=True, slots=True)
class NodeResult:
    """One case's answer from a reference package.

    ``value`` is zod's parsed output for ``node_validate`` and, for ``node_verify``, the events
    that came out of the client pipeline (those before the error when ``ok`` is false).
    ``warnings`` is what ``console.warn`` received while a stream was verified.
    """

    ok: bool
    error: str | None
    value: Any = None
    warnings: tuple[str, ...] = ()

    @property
    def stripped(self) -> tuple[str, ...]:
        """The warnings in which ``enforceEvents`` reports removing material from an event."""
        return tuple(w for w in self.warnings if w.startswith(ENFORCE_REMOVED))


@dataclass(frozen=True, slots=True)
class ResumeResult:
    """``buildResumeArray`` and ``isInterruptExpired`` of ``@ag-ui/client`` for one case.

    ``value`` is the built resume array (``None`` when the build threw, with ``error`` set);
    ``expired`` holds ``isInterruptExpired`` for each interrupt, in order.
    """

    ok: bool
    error: str | None
    value: list[dict[str, Any]] | None
    expired: tuple[bool, ...] | None


def json_equal(a: Any, b: Any) -> bool:
    """Equality in JSON's data model, the one values crossing the bridge live in: 1 and 1.0
    are the same number (JavaScript cannot tell them apart), ``true`` is not 1, and arrays
    compare whatever Python sequence holds them."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=False))
    return type(a) is type(b) and a == b


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        raise NodeBridgeError(
            f"the interop tests need Node.js (`node` is not on PATH); install Node 20+, then {_INSTALL_HINT}"
        )
    modules = NODE_DIR / "node_modules"
    for package, version in _PINNED.items():
        manifest = modules / package / "package.json"
        if not manifest.is_file():
            raise NodeBridgeError(f"{package} is not installed in {modules}; {_INSTALL_HINT}")
        installed = json.loads(manifest.read_text(encoding="utf-8")).get("version")
        if installed != version:
            raise NodeBridgeError(
                f"{package} {installed} is installed in {modules}, the tests pin {version}; {_INSTALL_HINT}"
            )
    return node


def _run(script: str, request: Mapping[str, Any], expected: int) -> list[dict[str, Any]]:
    node = _node()
    # allow_nan=False: a NaN would reach node as a bare token and fail the whole batch.
    payload = json.dumps(request, allow_nan=False, ensure_ascii=False)
    try:
        done = subprocess.run(
            [node, str(NODE_DIR / script)],
            input=payload.encode("utf-8"),
            capture_output=True,
            cwd=NODE_DIR,
            timeout=_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise NodeBridgeError(f"node {script} did not answer within {_TIMEOUT_SECONDS} s") from exc
    stderr = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        raise NodeBridgeError(f"node {script} exited with {done.returncode}:\n{stderr}")
    try:
        results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    except (ValueError, KeyError, TypeError) as exc:
        raise NodeBridgeError(f"node {script} replied with something that is not a result list:\n{stderr}") from exc
    if len(results) != expected:
        raise NodeBridgeError(f"node {script} answered {len(results)} cases out of {expected}")
    return results


def node_validate(cases: Sequence[tuple[str, Any]]) -> list[NodeResult]:
    """Parse each ``(schema_name, value)`` with that zod schema of ``@ag-ui/core/schemas``.

    ``schema_name`` is an export such as ``"EventSchema"`` or ``"RunAgentInputSchema"``.
    """
    request = {"cases": [{"schema": name, "value": value} for name, value in cases]}
    return [
        NodeResult(ok=r["ok"], error=r["error"], value=r["value"]) for r in _run("validate.cjs", request, len(cases))
    ]


def node_verify(streams: Sequence[Iterable[Mapping[str, Any]]]) -> list[NodeResult]:
    """Run each stream through ``@ag-ui/client``'s ``enforceEvents()``, then ``verifyEvents()``."""
    request = {"streams": [list(stream) for stream in streams]}
    return [
        NodeResult(ok=r["ok"], error=r["error"], value=r["events"], warnings=tuple(r["warnings"]))
        for r in _run("verify.cjs", request, len(streams))
    ]


def node_resume(cases: Sequence[Mapping[str, Any]]) -> list[ResumeResult]:
    """Run ``buildResumeArray`` and ``isInterruptExpired`` of ``@ag-ui/client`` on each case.

    A case is ``{"interrupts": [...], "responses": {interruptId: {...}}, "now": iso?}``; without
    ``now`` the reference compares against the current time.
    """
    request = {"cases": [dict(case) for case in cases]}
    return [
        ResumeResult(
            ok=r["ok"],
            error=r["error"],
            value=r["value"],
            expired=None if r["expired"] is None else tuple(r["expired"]),
        )
        for r in _run("resume.cjs", request, len(cases))
    ]


@dataclass(frozen=True, slots=True)
class ClientCycle:
    """One interrupt -> resume cycle a reference client drove against one of our hosts.

    ``inputs`` are the ``RunAgentInput`` objects as they went on the wire; ``runs`` the events
    that came back, one list per run; ``interrupts`` the first run's interrupts and ``resume``
    what ``buildResumeArray`` built from them (``None`` when there were none). ``verified``
    (from ``node_ws_cycle``) holds the reference checks' verdict per run; ``results`` (from
    ``node_agent_cycles``) what ``runAgent`` returned per run, and ``pending``, ``messages``
    and ``state`` the agent's own view of the thread at the end. ``warnings`` is what
    ``console.warn`` received.
    """

    ok: bool
    error: str | None
    inputs: list[dict[str, Any]]
    runs: list[list[dict[str, Any]]]
    resume: list[dict[str, Any]] | None
    warnings: tuple[str, ...]
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    verified: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    state: Any = None

    @property
    def stripped(self) -> tuple[str, ...]:
        """The warnings in which enforcement reports removing material."""
        return tuple(w for w in self.warnings if w.startswith(ENFORCE_REMOVED))


def _exchange(script: str, request: Mapping[str, Any], timeout: float) -> dict[str, Any]:
    """Like :func:`_run`, for the end-to-end scripts: the whole reply, which holds more than results."""
    node = _node()
    try:
        done = subprocess.run(
            [node, str(NODE_DIR / script)],
            input=json.dumps(request, allow_nan=False).encode("utf-8"),
            capture_output=True,
            cwd=NODE_DIR,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise NodeBridgeError(f"node {script} did not answer within {timeout:g} s") from exc
    stderr = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        raise NodeBridgeError(f"node {script} exited with {done.returncode}:\n{stderr}")
    try:
        reply: dict[str, Any] = json.loads(done.stdout)
    except ValueError as exc:
        raise NodeBridgeError(f"node {script} replied with something that is not JSON:\n{stderr}") from exc
    return reply


def _cycle(raw: Mapping[str, Any]) -> ClientCycle:
    return ClientCycle(
        ok=raw["ok"],
        error=raw["error"],
        inputs=raw.get("inputs", []),
        runs=raw.get("runs", []),
        resume=raw.get("resume"),
        warnings=tuple(raw.get("warnings", ())),
        interrupts=raw.get("interrupts") or [],
        verified=raw.get("verified", []),
        results=raw.get("results", []),
        pending=raw.get("pending", []),
        messages=raw.get("messages", []),
        state=raw.get("state"),
    )


def node_agent_cycles(
    wire: Mapping[str, Any], cases: Sequence[Mapping[str, Any]], *, timeout: float = 60.0
) -> tuple[list[ClientCycle], dict[str, Any]]:
    """Drive interrupt -> resume cycles with ``@ag-ui/client``'s own ``AbstractAgent``.

    ``wire`` is ``{"kind": "ws", "url": ...}`` or ``{"kind": "stdio", "command": [...],
    "cwd": ...}`` (node starts that host process). A case is ``{"threadId", "forwardedProps",
    "answers": [response per interrupt, in order], "messages"?, "state"?, "tools"?,
    "context"?}``. Returns one :class:`ClientCycle` per case and how the wire ended
    (``{"closeCode": int}`` or ``{"exitCode": int}``).
    """
    request = {"wire": dict(wire), "cases": [dict(case) for case in cases]}
    reply = _exchange("agent_cycle.cjs", request, timeout)
    results = [_cycle(raw) for raw in reply.get("results", [])]
    if len(results) != len(cases):
        raise NodeBridgeError(f"node agent_cycle.cjs answered {len(results)} cases out of {len(cases)}")
    return results, reply.get("wire", {})


def node_ws_cycle(url: str, case: Mapping[str, Any], *, timeout: float = 60.0) -> tuple[ClientCycle, int | None]:
    """A plain Node WebSocket client (``ws``) runs one interrupt -> resume cycle on ``url``.

    ``case`` is ``{"threadId", "forwardedProps", "answers": [...], "messages"?}``. Returns the
    cycle and the close code the connection ended with.
    """
    reply = _exchange("ws_cycle.cjs", {"url": url, **case}, timeout)
    (raw,) = reply["results"]
    return _cycle(raw), raw.get("closeCode")


def node_http_agent(request: Mapping[str, Any], *, timeout: float = 60.0) -> dict[str, Any]:
    """The stock ``HttpAgent`` of ``@ag-ui/client`` through an interrupt journey on an HTTP host.

    See ``http_agent.cjs`` for the request and the steps; returns its one result as it came.
    """
    reply = _exchange("http_agent.cjs", dict(request), timeout)
    (result,) = reply["results"]
    return dict(result)
