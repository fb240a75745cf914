"""``agui conformance``: a black-box test of any AG-UI server's interrupt contract.

As Autobahn does for WebSocket and h2spec for HTTP/2, the kit drives a live server (HTTP + SSE
or WebSocket) through the rules of the interrupt lifecycle and reports each check as pass,
fail (with the events seen) or not applicable (with why), each labelled with its force (spec
MUST, spec SHOULD, seed profile) and source. Unless told to approve, it says yes to no
approval, so no gated tool runs, and it leaves no interrupt open on the threads it opened. See
:mod:`.suite` for how it works and :mod:`.checks` for what it checks.
"""

from agui_core.conformance.checks import CATALOGUE, CheckResult, CheckSpec, Force, Report, Status, check_spec
from agui_core.conformance.exchange import (
    Exchange,
    Frame,
    HttpProbeTransport,
    ProbeError,
    ProbeTransport,
    WebSocketProbeTransport,
    transport_for,
)
from agui_core.conformance.payloads import PayloadGenerationError, Violation, valid_payload, violating_payloads
from agui_core.conformance.suite import DEFAULT_PROMPT, Options, run_conformance

__all__ = [
    "CATALOGUE",
    "DEFAULT_PROMPT",
    "CheckResult",
    "CheckSpec",
    "Exchange",
    "Force",
    "Frame",
    "HttpProbeTransport",
    "Options",
    "PayloadGenerationError",
    "ProbeError",
    "ProbeTransport",
    "Report",
    "Status",
    "Violation",
    "WebSocketProbeTransport",
    "check_spec",
    "run_conformance",
    "transport_for",
    "valid_payload",
    "violating_payloads",
]
