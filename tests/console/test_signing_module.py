"""The console's signing module (``transports/console/signing.mjs``) signs what the host checks.

Node runs the module's own ``newKey`` and ``sign`` (WebCrypto, as in the browser) over
decisions whose payloads exercise the canonical JSON both sides must agree on (nested objects
with keys out of order, arrays, numbers, text beyond ASCII, escapes, no payload at all);
:class:`~agui_core.runtime.signatures.ApproverKeys` verifies each, and refuses each one moved to
another interrupt or thread, or carrying another answer. Node is required, as for the interop
tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from agui_core.protocol.types import ResumeEntry
from agui_core.runtime.signatures import ApproverKeys

MODULE = Path(__file__).resolve().parents[2] / "transports" / "console" / "signing.mjs"
DECISIONS: list[dict[str, Any]] = [
    {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}},
    {
        "interruptId": "i-2",
        "status": "resolved",
        "payload": {"approved": True, "editedArgs": {"to": "zoë@example.com", "amount": 120, "cc": ["b", "a"]}},
    },
    {"interruptId": "i-3", "status": "resolved", "payload": {"z": {"y": 1.5, "x": -2}, "a": 'quote " \\ \n tab\t'}},
    {"interruptId": "i-4", "status": "cancelled"},
    {"interruptId": "i-5", "status": "resolved", "payload": "日本語 and emoji 🙂"},
]
SCRIPT = """
const { newKey, sign } = await import(process.argv[1]);
const decisions = JSON.parse(process.argv[2]);
const held = await newKey("bob");
const tokens = [];
for (const entry of decisions) tokens.push(await sign(held, "thread-7", entry));
console.log(JSON.stringify({ jwk: held.publicJwk, tokens }));
"""


def signed_by_the_console() -> tuple[dict[str, Any], list[str]]:
    node = shutil.which("node")
    assert node, "the console's signing test needs Node.js (`node` on PATH), as the interop tests do"
    done = subprocess.run(
        [node, "--input-type=module", "-e", SCRIPT, MODULE.as_uri(), json.dumps(DECISIONS)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    out = json.loads(done.stdout)
    return out["jwk"], out["tokens"]


def entry(decision: dict[str, Any], token: str, **changes: Any) -> ResumeEntry:
    fields = {**decision, **changes}
    return ResumeEntry(
        interrupt_id=fields["interruptId"],
        status=fields["status"],
        payload=fields.get("payload"),
        metadata={"ag-ui:signature": token},
    )


def test_what_the_console_signs_the_host_verifies_and_nothing_else() -> None:
    jwk, tokens = signed_by_the_console()
    assert jwk["kty"] == "EC" and jwk["crv"] == "P-256" and "d" not in jwk
    keys = ApproverKeys({"bob": [jwk]})
    for decision, token in zip(DECISIONS, tokens, strict=True):
        assert keys.verify("bob", "thread-7", entry(decision, token)) == jwk["kid"], decision
        assert keys.verify("bob", "thread-8", entry(decision, token)) is None
        assert keys.verify("bob", "thread-7", entry(decision, token, interruptId="other")) is None
        assert keys.verify("carol", "thread-7", entry(decision, token)) is None
    answered = DECISIONS[0]
    assert keys.verify("bob", "thread-7", entry(answered, tokens[0], payload={"approved": False})) is None
