"""The capabilities document of a host: what its agent and its transports really do.

:func:`capabilities` derives the AG-UI 1.0 ``AgentCapabilities`` from what the host holds,
so the document cannot claim more than the host serves:

- ``humanInTheLoop``: interrupts always (every agui-core host carries the interrupt
  lifecycle); ``approvals`` when a registered tool needs approval; ``approveWithEdits`` when
  one of those also accepts edits (its approvals offer ``editedArgs``, SPEC section 5);
- ``tools``: the registered tools, with the JSON Schema of their parameters;
- ``state``: snapshots (the interrupt boundary emits them) and persistent state (the store);
- ``transport``: the flags the caller passes, the transport knowing what it serves;
- ``identity``: the agent's ``name`` and ``description`` attributes where it has them,
  otherwise its function name and the first line of its docstring;
- ``custom``: ``profile`` (the rules the host enforces on input, :data:`ENFORCED_PROFILE`) and
  ``protocolVersion`` (the version its ``RUN_STARTED`` declares).
"""

from __future__ import annotations

import inspect

import orjson

from agui_core.protocol import types as t
from agui_core.protocol.codec import converter
from agui_core.runtime.host import Host

__all__ = ["ENFORCED_PROFILE", "capabilities", "capabilities_json"]

ENFORCED_PROFILE = "seed"
"""The profile a host enforces, declared as ``custom.profile`` in its capabilities: ``seed``,
the concept page's strict rules (coverage, linkage, expiry, payload schemas refused with
``RUN_ERROR``), where the published spec leaves most of them to the client."""


def capabilities_json(host: Host, *, transport: t.TransportCapabilities | None = None) -> bytes:
    """:func:`capabilities` as the JSON document a transport serves."""
    return orjson.dumps(converter.unstructure(capabilities(host, transport=transport), t.AgentCapabilities))


def capabilities(host: Host, *, transport: t.TransportCapabilities | None = None) -> t.AgentCapabilities:
    """The ``AgentCapabilities`` of ``host``, served over ``transport`` (its flags as given)."""
    gated = [tool for tool in host.tools.values() if tool.needs_approval]
    items = tuple(
        t.Tool(name=tool.name, description=tool.description, parameters=dict(tool.parameters))
        for tool in host.tools.values()
    )
    return t.AgentCapabilities(
        identity=_identity(host.agent),
        transport=transport,
        tools=t.ToolsCapabilities(supported=bool(items), items=items or None),
        state=t.StateCapabilities(snapshots=True, persistent_state=True),
        human_in_the_loop=t.HumanInTheLoopCapabilities(
            supported=True,
            interrupts=True,
            approvals=bool(gated),
            approve_with_edits=any(tool.allow_edits for tool in gated),
        ),
        # Which rules the host enforces on input: the seed's eight contract rules, stricter
        # than the published spec asks of an agent (docs/conformance.md lists each rule).
        custom={"profile": ENFORCED_PROFILE, "protocolVersion": t.PROTOCOL_VERSION},
    )


def _identity(agent: object) -> t.IdentityCapabilities:
    name = getattr(agent, "name", None)
    if not isinstance(name, str) or not name:
        name = getattr(agent, "__name__", None) or type(agent).__name__
    description = getattr(agent, "description", None)
    if not isinstance(description, str) or not description:
        doc = inspect.getdoc(agent)
        description = doc.strip().splitlines()[0] if doc and doc.strip() else None
    return t.IdentityCapabilities(name=name, description=description)
