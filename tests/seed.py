"""The JSON examples of the seed document (the AG-UI "Interrupts" concept page), kept once.

Four ``RUN_FINISHED`` events that end a run on interrupts, the four resume inputs that answer
them, and the ``responseSchema`` documents they carry. The page's e-mail addresses arrived
masked by an obfuscator as ``"[email protected]"`` (:data:`MASKED_ADDRESS`); they are only
strings here, kept as they are. The resume inputs are as printed: without ``messages``, which
both reference schemas require.

Treat everything here as read-only: the documents share the schema objects. A test that
wants to change one works on a ``copy.deepcopy``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "APPROVE_SCHEMA",
    "APPROVE_WITH_ANY_EDITS_SCHEMA",
    "APPROVE_WITH_EDITS_SCHEMA",
    "EMAIL_ARGS_SCHEMA",
    "MASKED_ADDRESS",
    "QUARTERLY_EXPIRES_AT",
    "QUARTERLY_SCHEMA",
    "SEED_RESUME_INPUTS",
    "SEED_RUN_FINISHED",
]

MASKED_ADDRESS = "[email protected]"
"""What the page's e-mail obfuscation left in place of every address."""

APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}},
    "required": ["approved"],
}
"""The minimal tool approval's ``responseSchema``: a yes/no."""

EMAIL_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "format": "email"},
        "subject": {"type": "string"},
        "body": {"type": "string"},
    },
}
"""The ``editedArgs`` of the approve-with-edits example: ``sendEmail``'s arguments."""

APPROVE_WITH_EDITS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": EMAIL_ARGS_SCHEMA},
    "required": ["approved"],
}
"""The approve-with-edits example's ``responseSchema``."""

APPROVE_WITH_ANY_EDITS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}},
    "required": ["approved"],
}
"""The page's approve-with-edits pattern, ``{approved: boolean (required), editedArgs: object}``."""

QUARTERLY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "quarter": {"type": "string", "enum": ["Q1", "Q2", "Q3", "Q4"]},
        "year": {"type": "integer", "minimum": 2000},
        "revenue": {"type": "number"},
    },
    "required": ["quarter", "year", "revenue"],
}
"""The non-tool input request's ``responseSchema``: the quarterly filing form."""

QUARTERLY_EXPIRES_AT = "2026-04-20T17:00:00Z"
"""The quarterly filing form's ``expiresAt``."""

SEED_RUN_FINISHED: dict[str, dict[str, Any]] = {
    "minimal-tool-approval": {
        "type": "RUN_FINISHED",
        "threadId": "thread-1",
        "runId": "run-1",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "int-abc123",
                    "reason": "tool_call",
                    "message": f"Send email to {MASKED_ADDRESS} with subject 'Hi'?",
                    "toolCallId": "tc-001",
                    "responseSchema": APPROVE_SCHEMA,
                }
            ],
        },
    },
    "approve-with-edits": {
        "type": "RUN_FINISHED",
        "threadId": "thread-2",
        "runId": "run-10",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "int-email-edit",
                    "reason": "tool_call",
                    "message": f"Send email to {MASKED_ADDRESS}? You can edit the body before approving.",
                    "toolCallId": "tc-42",
                    "responseSchema": APPROVE_WITH_EDITS_SCHEMA,
                    "metadata": {"langgraph": {"checkpointId": "ckpt-xyz", "nodeId": "tool_executor"}},
                }
            ],
        },
    },
    "parallel-interrupts": {
        "type": "RUN_FINISHED",
        "threadId": "thread-3",
        "runId": "run-20",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "i-1",
                    "reason": "tool_call",
                    "toolCallId": "tc-a",
                    "message": f"Approve sendEmail to {MASKED_ADDRESS}?",
                },
                {
                    "id": "i-2",
                    "reason": "tool_call",
                    "toolCallId": "tc-b",
                    "message": f"Approve sendEmail to {MASKED_ADDRESS}?",
                },
                {
                    "id": "i-3",
                    "reason": "tool_call",
                    "toolCallId": "tc-c",
                    "message": f"Approve sendEmail to {MASKED_ADDRESS}?",
                },
            ],
        },
    },
    "non-tool-input-request": {
        "type": "RUN_FINISHED",
        "threadId": "thread-4",
        "runId": "run-30",
        "outcome": {
            "type": "interrupt",
            "interrupts": [
                {
                    "id": "int-form",
                    "reason": "input_required",
                    "message": "Please provide the quarterly filing details.",
                    "responseSchema": QUARTERLY_SCHEMA,
                    "expiresAt": QUARTERLY_EXPIRES_AT,
                }
            ],
        },
    },
}
"""The page's four interrupting ``RUN_FINISHED`` events, by example."""

SEED_RESUME_INPUTS: dict[str, dict[str, Any]] = {
    "minimal-tool-approval": {
        "threadId": "thread-1",
        "runId": "run-2",
        "resume": [{"interruptId": "int-abc123", "status": "resolved", "payload": {"approved": True}}],
    },
    "approve-with-edits": {
        "threadId": "thread-2",
        "runId": "run-11",
        "resume": [
            {
                "interruptId": "int-email-edit",
                "status": "resolved",
                "payload": {
                    "approved": True,
                    "editedArgs": {"to": MASKED_ADDRESS, "subject": "Hi", "body": "Hi (revised per my note)"},
                },
            }
        ],
    },
    "parallel-interrupts": {
        "threadId": "thread-3",
        "runId": "run-21",
        "resume": [
            {"interruptId": "i-1", "status": "resolved", "payload": {"approved": True}},
            {"interruptId": "i-2", "status": "resolved", "payload": {"approved": True}},
            {"interruptId": "i-3", "status": "cancelled"},
        ],
    },
    "non-tool-input-request": {
        "threadId": "thread-4",
        "runId": "run-31",
        "resume": [
            {
                "interruptId": "int-form",
                "status": "resolved",
                "payload": {"quarter": "Q1", "year": 2026, "revenue": 4200000},
            }
        ],
    },
}
"""The page's four resume inputs answering them, by example, as printed (no ``messages``)."""
