"""Who may decide an interrupt: the owner of its thread, and approvers by role (sans-IO).

Without a policy, the one principal who may answer a thread's interrupts is the thread's owner
(:mod:`agui_core.machine.ownership`). A :class:`DecisionPolicy` lets others decide: per tool
name (for ``tool_call`` interrupts bound to a tool call), else per interrupt reason, else its
default, a :class:`Rule` says which roles may answer and whether the thread's owner may answer
their own agent's request (separation of duties: ``owner = false``).

An approver acts on the owner's thread through the same wire as the owner, with a resume and
nothing else: an input from someone who is not the owner is taken only when it carries a resume
whose every entry names an open interrupt that principal may decide, and adds no message to the
conversation. Anything else is ``FORBIDDEN``, naming nothing of the thread, as for any stranger.

A policy is read from TOML (:func:`policy_from_toml`)::

    [default]          # what no tool or reason below names
    roles = []         # roles that may answer, besides the owner
    owner = true       # whether the owner may answer their own agent's requests

    [tools.pay]        # tool_call interrupts of the tool "pay"
    roles = ["manager"]
    owner = false
    signed = true      # each decision signed by its decider (agui_core.runtime.signatures)
    approvals = 2      # two distinct deciders approve before the tool runs (a quorum)

    [reasons.input_required]
    roles = ["clerk"]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from agui_core.machine.quorum import deciding_vote, with_tally
from agui_core.machine.record import OpenInterrupt
from agui_core.protocol.types import Interrupt

__all__ = ["MAX_APPROVALS", "DecisionPolicy", "Rule", "policy_from_toml"]

MAX_APPROVALS = 16
"""The most deciders a rule may ask for: each one's vote is kept with the open interrupt."""


@attrs.frozen(kw_only=True)
class Rule:
    """Who may decide the interrupts a rule covers."""

    roles: frozenset[str] = frozenset()
    """Roles whose principals may answer (besides the owner, when ``owner``)."""
    owner: bool = True
    """Whether the thread's owner may answer (``False``: someone else must)."""
    signed: bool = False
    """Whether each decision must carry its decider's signature (``INVALID_SIGNATURE`` if not;
    see :mod:`agui_core.runtime.signatures`)."""
    approvals: int = 1
    """How many distinct deciders must approve before the answer is given (a quorum; see
    :mod:`agui_core.machine.quorum`). A denial or a cancel by any of them decides at once."""


@attrs.frozen(kw_only=True)
class DecisionPolicy:
    """The rule for each tool and reason, and the default (see the module docstring)."""

    default: Rule = Rule()
    tools: Mapping[str, Rule] = attrs.field(factory=dict)
    reasons: Mapping[str, Rule] = attrs.field(factory=dict)

    @property
    def roles(self) -> frozenset[str]:
        """Every role some rule lets decide: a principal with none of them decides nothing of others'."""
        rules = [self.default, *self.tools.values(), *self.reasons.values()]
        return frozenset().union(*(rule.roles for rule in rules))

    def rule_for(self, interrupt: Interrupt, tool_name: str | None) -> Rule:
        """The rule that covers ``interrupt`` (``tool_name``: the tool of the call it is bound to,
        if any: a tool's rule covers every interrupt bound to a call of it)."""
        if tool_name is not None and tool_name in self.tools:
            return self.tools[tool_name]
        return self.reasons.get(interrupt.reason, self.default)

    def rule_of(self, item: OpenInterrupt) -> Rule:
        """The rule that covers an open interrupt (by the tool of the call it gates, if any)."""
        return self.rule_for(item.interrupt, item.proposal.name if item.proposal is not None else None)

    def may_decide(
        self, interrupt: Interrupt, tool_name: str | None, *, principal: str, roles: Iterable[str], owner: str | None
    ) -> bool:
        """Whether ``principal`` (with ``roles``) may answer ``interrupt`` of a thread ``owner`` owns."""
        rule = self.rule_for(interrupt, tool_name)
        if principal == owner:
            return rule.owner
        return not rule.roles.isdisjoint(roles)

    def decidable(
        self, interrupts: Iterable[OpenInterrupt], *, principal: str, roles: Iterable[str], owner: str | None
    ) -> tuple[OpenInterrupt, ...]:
        """Those of a thread's open ``interrupts`` that ``principal`` may decide."""
        held = frozenset(roles)
        return tuple(
            o
            for o in interrupts
            if self.may_decide(
                o.interrupt,
                o.proposal.name if o.proposal is not None else None,
                principal=principal,
                roles=held,
                owner=owner,
            )
        )

    def undecided(self, interrupts: Iterable[OpenInterrupt]) -> tuple[OpenInterrupt, ...]:
        """Those of a thread's open ``interrupts`` still waiting for an answer: not yet decided
        by their quorum (:mod:`~agui_core.machine.quorum`), as any interrupt without one."""
        return tuple(o for o in interrupts if deciding_vote(o.votes, self.rule_of(o).approvals) is None)

    def awaiting(
        self, interrupts: Iterable[OpenInterrupt], *, principal: str, roles: Iterable[str], owner: str | None
    ) -> tuple[OpenInterrupt, ...]:
        """Those of a thread's open ``interrupts`` that ``principal`` is still to answer: it may
        decide them, they are undecided, and it has not answered them yet."""
        mine = self.decidable(self.undecided(interrupts), principal=principal, roles=roles, owner=owner)
        return tuple(o for o in mine if all(v.principal != principal for v in o.votes))

    def announced(self, item: OpenInterrupt) -> Interrupt:
        """The interrupt as it is shown while open: with its quorum's tally when it has one."""
        needed = self.rule_of(item).approvals
        return with_tally(item, needed) if needed > 1 or item.votes else item.interrupt


def _rule(table: object, where: str, base: Rule) -> Rule:
    if not isinstance(table, Mapping):
        raise ValueError(f"{where} is a table (roles, owner, signed, approvals), not {type(table).__name__}")
    unknown = set(table) - {"roles", "owner", "signed", "approvals"}
    if unknown:
        raise ValueError(
            f"{where} has no setting {', '.join(sorted(unknown))} (it takes roles, owner, signed and approvals)"
        )
    roles = table.get("roles", sorted(base.roles))
    if not isinstance(roles, list) or not all(isinstance(r, str) and r and not _odd(r) for r in roles):
        raise ValueError(f"{where}.roles is a list of role names (no spaces or commas in a name)")
    owner = table.get("owner", base.owner)
    if not isinstance(owner, bool):
        raise ValueError(f"{where}.owner is true or false")
    signed = table.get("signed", base.signed)
    if not isinstance(signed, bool):
        raise ValueError(f"{where}.signed is true or false")
    approvals = table.get("approvals", base.approvals)
    if type(approvals) is not int or not 1 <= approvals <= MAX_APPROVALS:
        raise ValueError(f"{where}.approvals is a whole number of deciders from 1 to {MAX_APPROVALS}")
    return Rule(roles=frozenset(roles), owner=owner, signed=signed, approvals=approvals)


def _odd(role: str) -> bool:
    return "," in role or any(c.isspace() for c in role) or not role.isprintable()


def policy_from_toml(document: Mapping[str, Any], *, name: str = "policy") -> DecisionPolicy:
    """The policy a parsed TOML document describes (see the module docstring).

    A tool's or reason's rule starts from the default's and changes what it names. Raises
    ``ValueError`` naming the setting at fault.
    """
    if not document:
        # A policy says something: an empty file is more likely a save caught half-way.
        raise ValueError(f"{name}: an empty policy (say [default] at least)")
    unknown = set(document) - {"default", "tools", "reasons"}
    if unknown:
        raise ValueError(f"{name}: no section {', '.join(sorted(unknown))} (sections: default, tools, reasons)")
    default = _rule(document.get("default", {}), f"{name}: [default]", Rule())
    found: dict[str, dict[str, Rule]] = {}
    for section in ("tools", "reasons"):
        tables = document.get(section, {})
        if not isinstance(tables, Mapping):
            raise ValueError(f"{name}: [{section}] holds one table per name")
        found[section] = {key: _rule(table, f"{name}: [{section}.{key}]", default) for key, table in tables.items()}
    return DecisionPolicy(default=default, tools=found["tools"], reasons=found["reasons"])
