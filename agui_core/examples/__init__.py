"""Example agents shipped with agui-core: what ``agui demo`` hosts, and a start for your own.

``email_agent`` (one email behind an approval-gated ``sendEmail``), ``team_email_agent``
(three parallel approvals), ``filing_agent`` (a quarterly-filing form with ``expiresAt``, then
a confirmation), ``assistant``, which hands each thread to one of them, and ``expense_agent``
(a receipt form, two payments approved at once, a confirmation over a limit, the filing). All
are written straight through (``answer = await ctx.ask(...)``); see
:mod:`agui_core.runtime.context`.
"""

from agui_core.examples.assistant import AGENTS, TOOLS, assistant, pick_scenario
from agui_core.examples.expenses import RECEIPT_SCHEMA, expense_agent
from agui_core.examples.filing import FORM_TTL, QUARTERLY_FILING_SCHEMA, filing_agent
from agui_core.examples.mail import SEND_EMAIL_ARGS_SCHEMA, email_agent, send_email, team_email_agent

__all__ = [
    "AGENTS",
    "FORM_TTL",
    "QUARTERLY_FILING_SCHEMA",
    "RECEIPT_SCHEMA",
    "SEND_EMAIL_ARGS_SCHEMA",
    "TOOLS",
    "assistant",
    "email_agent",
    "expense_agent",
    "filing_agent",
    "pick_scenario",
    "send_email",
    "team_email_agent",
]
