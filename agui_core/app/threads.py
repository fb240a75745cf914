"""``agui threads``: the operator's command, on any store URL (SQLite file or PostgreSQL).

``agui threads [--store URL | --store-dsn-file FILE] COMMAND [--json]``:

- ``list``: the open interrupts of every principal's threads, newest first, with their age,
  reason, owner and expiry (``--owner``, ``--reason``, ``--older-than 1h``, ``--limit``);
- ``show THREAD``: the thread's conversation, open interrupts and audit trail;
- ``purge --older-than 30d``: remove the threads at rest (no open interrupt, no run) not saved
  for that long, with their audit trails (``--keep-audit 1y`` keeps the trails apart that much
  longer), as a host's retention does;
- ``export-audit --since 2026-12-01`` (or ``--since 7d``): every thread's audit lines closed
  since then, one JSON object a line (``{"threadId", ...the line}``), oldest first;
- ``cancel THREAD [INTERRUPT...] --agent MODULE:AGENT``: an operator's cancel. It is a resume
  like any client's, carried out by a host of this process on the same store, so the thread
  machine's rules hold as they stand: it answers every open interrupt of the thread ``cancelled``
  (one resume answers them all: naming interrupts only checks that they are those), with
  ``metadata`` ``{"cancelledBy": OPERATOR, "via": "agui threads cancel"}`` (``--operator``,
  default the login name), which the audit trail keeps; the agent runs on it at once and hears
  ``cancelled`` (an approval-gated tool is left unrun), and the thread is free for its owner's
  next input. While another run holds the thread the cancel is refused (``THREAD_BUSY``), and
  a client's later resume of the cancelled interrupts is answered as any resume of closed ones.

``--json`` prints JSON (``list``: an array; ``show``: an object) instead of text. Times are
RFC 3339; ages are seconds. The command reads the store directly, never through a host's HTTP
routes, so it needs the store's credentials, not a principal's.
"""

from __future__ import annotations

import argparse
import getpass
import sys
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TextIO

import orjson

from agui_core.machine.quorum import approves
from agui_core.machine.record import (
    ANONYMOUS,
    OpenInterrupt,
    ResolvedInterrupt,
    ThreadRecord,
    Vote,
    record_to_dict,
    votes_to_json,
)
from agui_core.store.base import ThreadStore

__all__ = ["add_threads_parser", "run_threads"]

PURGE_BATCH = 500
LIST_LIMIT = 1000


def add_threads_parser(commands: Any) -> None:
    """Add ``threads`` and its commands to ``agui``'s ``commands`` (an argparse subparsers object)."""
    threads = commands.add_parser("threads", help="the operator's view of a store: list, show, cancel, purge, export")
    threads.add_argument(
        "--store", metavar="URL", help="sqlite:PATH or postgresql://... (default: sqlite:agui.sqlite3)"
    )
    threads.add_argument("--store-dsn-file", metavar="FILE", help="read the store's URL from FILE (mode 600)")
    threads.add_argument("--insecure", action="store_true", help="take a --store-dsn-file others may read")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON instead of text")
    which = threads.add_subparsers(dest="threads_command", required=True)
    listing = which.add_parser("list", parents=[as_json], help="open interrupts of every thread, newest first")
    listing.add_argument("--owner", metavar="PRINCIPAL", help="only this principal's threads")
    listing.add_argument("--reason", metavar="REASON", help="only interrupts of this reason (tool_call, ...)")
    listing.add_argument("--older-than", metavar="DURATION", help="only interrupts open longer than this (1h, 2d)")
    listing.add_argument("--limit", type=int, default=LIST_LIMIT, help=f"threads at most (default {LIST_LIMIT})")
    show = which.add_parser("show", parents=[as_json], help="a thread: conversation, open interrupts, audit trail")
    show.add_argument("thread", metavar="THREAD")
    purge = which.add_parser("purge", parents=[as_json], help="remove threads at rest not saved for a while")
    purge.add_argument("--older-than", metavar="DURATION", required=True, help="30d, 12h, ...")
    purge.add_argument("--keep-audit", metavar="DURATION", help="keep purged threads' audit trails this long")
    export = which.add_parser("export-audit", help="every audit line closed since an instant, as JSON lines")
    export.add_argument("--since", metavar="WHEN", required=True, help="an RFC 3339 instant or date, or 7d ago")
    cancel = which.add_parser("cancel", parents=[as_json], help="cancel a thread's open interrupts, as an operator")
    cancel.add_argument("thread", metavar="THREAD")
    cancel.add_argument("interrupts", metavar="INTERRUPT", nargs="*", help="the open interrupts (default: all)")
    cancel.add_argument("--agent", metavar="MODULE:AGENT", required=True, help="the thread's agent, to hear it")
    cancel.add_argument("--operator", metavar="NAME", help="who cancels, for the audit (default: the login name)")


def run_threads(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Carry out ``agui threads``; the exit status (2: a usage or store error, printed on stderr)."""
    import anyio

    from agui_core.app.cli import _usage_error

    try:
        return anyio.run(_run, args, out if out is not None else sys.stdout)
    except (ValueError, LookupError, ImportError, OSError, BaseExceptionGroup) as exc:
        usage = _usage_error(exc)
        if usage is None:
            raise
        print(f"agui threads: {usage}", file=sys.stderr)
        return 2


async def _run(args: argparse.Namespace, out: TextIO) -> int:
    from agui_core.app.cli import _open, _open_store, _refuse_open_secrets, _store_spec
    from agui_core.store.base import StoreError

    secrets = {"auth_tokens": None, "auth_jwt_key": None, "tls_key": None}
    _refuse_open_secrets(argparse.Namespace(**secrets, store_dsn_file=args.store_dsn_file, insecure=args.insecure))
    spec = _store_spec(args)
    store = _open_store(spec)
    async with store:
        await _open(store, spec)
        command = args.threads_command
        try:
            if command == "list":
                return await _list(store, args, out)
            if command == "show":
                return await _show(store, args, out)
            if command == "purge":
                return await _purge(store, args, out)
            if command == "export-audit":
                return await _export(store, args, out)
            return await _cancel(store, args, out)
        except StoreError as exc:
            raise ValueError(f"the store failed: {exc.message}") from None


def _now() -> datetime:
    return datetime.now(UTC)


def _age(raised_at: str | None, now: datetime) -> float | None:
    if raised_at is None:
        return None
    try:
        return round((now - datetime.fromisoformat(raised_at)).total_seconds(), 3)
    except (ValueError, TypeError):
        return None


def _shown_age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f}{unit}"
    return f"{seconds:.0f}s"


def _open_line(thread_id: str, owner: str | None, opened: OpenInterrupt, now: datetime) -> dict[str, Any]:
    interrupt = opened.interrupt
    line: dict[str, Any] = {
        "threadId": thread_id,
        "owner": owner,
        "interruptId": interrupt.id,
        "reason": interrupt.reason,
        "message": interrupt.message,
        "raisedAt": opened.raised_at,
        "ageSeconds": _age(opened.raised_at, now),
        "expiresAt": interrupt.expires_at,
        "runId": opened.run_id,
    }
    if interrupt.tool_call_id is not None:
        line["toolCallId"] = interrupt.tool_call_id
    if opened.votes:
        line["votes"] = votes_to_json(opened.votes)
    return line


def _vote_lines(votes: Sequence[Vote]) -> str:
    """Each vote of a quorum on a line of its own, for ``threads show``."""
    lines = []
    for vote in votes:
        said = (
            "cancelled"
            if vote.status == "cancelled"
            else "approved"
            if approves(vote.status, vote.payload)
            else "denied"
        )
        roles = f" ({', '.join(vote.roles)})" if vote.roles else ""
        key = f", signed with {vote.key}" if vote.key else ""
        lines.append(f"    vote: {said} by {vote.principal}{roles}{key} at {vote.at} (run {vote.run_id})\n")
    return "".join(lines)


async def _list(store: ThreadStore, args: argparse.Namespace, out: TextIO) -> int:
    from agui_core.app.cli import _duration

    older_than = _duration("--older-than", args.older_than)
    now = _now()
    if args.owner is not None:
        threads = [attrs_with_owner(w, args.owner) for w in await store.waiting(args.owner, limit=args.limit)]
    else:
        threads = list(await store.all_waiting(limit=args.limit))
    lines = []
    for thread in threads:
        for opened in thread.interrupts:
            line = _open_line(thread.thread_id, thread.owner, opened, now)
            if args.reason is not None and line["reason"] != args.reason:
                continue
            if older_than is not None and (line["ageSeconds"] is None or line["ageSeconds"] < older_than):
                continue
            lines.append(line)
    if args.json:
        out.write(orjson.dumps(lines, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    if not lines:
        out.write("no open interrupts\n")
        return 0
    rows = [("THREAD", "OWNER", "REASON", "INTERRUPT", "AGE", "EXPIRES")]
    rows += [
        (
            line["threadId"],
            str(line["owner"]),
            line["reason"],
            line["interruptId"],
            _shown_age(line["ageSeconds"]),
            line["expiresAt"] or "-",
        )
        for line in lines
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() + "\n")
    return 0


def attrs_with_owner(waiting: Any, owner: str) -> Any:
    """``waiting`` (a :class:`~agui_core.store.base.WaitingThread`) with its owner said."""
    import attrs

    return attrs.evolve(waiting, owner=owner)


def _resolved_json(thread_id: str, entries: Sequence[ResolvedInterrupt]) -> list[Any]:
    resolved: list[Any] = record_to_dict(ThreadRecord(thread_id=thread_id, resolved=tuple(entries)))["resolved"]
    return resolved


async def _show(store: ThreadStore, args: argparse.Namespace, out: TextIO) -> int:
    record = await store.load(args.thread)
    if record is None:
        raise LookupError(f"no thread {args.thread!r} in this store")
    audit = await store.audit(args.thread)
    whole = record_to_dict(record)
    now = _now()
    document = {
        "threadId": record.thread_id,
        "owner": record.owner if record.owner is not None else ANONYMOUS,
        "state": record.state.name.lower(),
        "version": record.version,
        "savedAt": record.saved_at,
        "runId": record.active_run.run_id if record.active_run is not None else None,
        "messages": whole["messages"],
        "open": [_open_line(record.thread_id, record.owner, o, now) for o in record.open_interrupts],
        "audit": _resolved_json(record.thread_id, audit),
    }
    if args.json:
        out.write(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    write = out.write
    write(f"thread {record.thread_id}: {document['state']}, owner {document['owner']}, version {record.version}")
    write(f", last saved {record.saved_at}\n" if record.saved_at else "\n")
    if document["runId"] is not None:
        write(f"run in progress: {document['runId']}\n")
    write(f"\nconversation ({len(whole['messages'])} messages):\n")
    for message in whole["messages"]:
        write(f"  {_message_line(message)}\n")
    write(f"\nopen interrupts ({len(record.open_interrupts)}):\n")
    for line in document["open"]:
        expires = f", expires {line['expiresAt']}" if line["expiresAt"] else ""
        write(f"  {line['interruptId']} {line['reason']}: {line['message'] or ''} ")
        write(f"(raised {line['raisedAt']}, {_shown_age(line['ageSeconds'])} ago{expires})\n")
    for opened in record.open_interrupts:
        if opened.votes:
            write(f"  {opened.interrupt.id}, answered so far:\n{_vote_lines(opened.votes)}")
    write(f"\naudit ({len(audit)}):\n")
    for entry in audit:
        by = ""
        if entry.metadata and "cancelledBy" in entry.metadata:
            by = f" by {entry.metadata['cancelledBy']}"
        elif entry.decided_by is not None:
            roles = f" ({', '.join(entry.decided_roles)})" if entry.decided_roles else ""
            key = f", signed with {entry.decided_key}" if entry.decided_key else ""
            by = f" by {entry.decided_by}{roles}{key}"
        write(f"  {entry.interrupt.id} {entry.interrupt.reason}: {entry.status}{by} at {entry.answered_at}")
        write(f" (raised {entry.raised_at}, answered in {entry.answered_in})\n")
        write(_vote_lines(entry.votes))
    return 0


def _message_line(message: Any) -> str:
    role = message.get("role", "?")
    content = message.get("content")
    text = content if isinstance(content, str) else orjson.dumps(content).decode() if content is not None else ""
    calls = message.get("toolCalls") or []
    named = [f"{c['function']['name']}({c['function']['arguments']})" for c in calls if "function" in c]
    if role == "tool":
        return f"tool [{message.get('toolCallId')}]: {text}"
    return f"{role}: {text}" + (f" -> {', '.join(named)}" if named else "")


async def _purge(store: ThreadStore, args: argparse.Namespace, out: TextIO) -> int:
    from agui_core.app.cli import _duration

    older = _duration("--older-than", args.older_than)
    keep = _duration("--keep-audit", args.keep_audit)
    assert older is not None
    now = _now()
    idle_before = now - timedelta(seconds=older)
    audit_before = None if keep is None else now - timedelta(seconds=older + keep)
    threads = trails = 0
    while True:
        purged = await store.purge(idle_before=idle_before, audit_before=audit_before, limit=PURGE_BATCH)
        if not purged.swept:
            raise ValueError("another host is purging this store now; try again later")
        threads += purged.threads
        trails += purged.audit_trails
        if purged.threads < PURGE_BATCH and purged.audit_trails < PURGE_BATCH:
            break
    if args.json:
        out.write(orjson.dumps({"threads": threads, "auditTrails": trails}).decode() + "\n")
    else:
        out.write(f"purged {threads} threads at rest and {trails} kept audit trails\n")
    return 0


def _since(text: str) -> datetime:
    from agui_core.app.cli import _DURATION, _duration

    if _DURATION.fullmatch(text.strip().lower()):
        seconds = _duration("--since", text)
        assert seconds is not None
        return _now() - timedelta(seconds=seconds)
    try:
        instant = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since {text!r} is not an RFC 3339 instant, a date, or a duration such as 7d") from None
    return instant if instant.tzinfo is not None else instant.replace(tzinfo=UTC)


async def _export(store: ThreadStore, args: argparse.Namespace, out: TextIO) -> int:
    since = _since(args.since)
    lines = await store.audit_since(since, limit=sys.maxsize)
    for thread_id, entry in lines:
        (written,) = _resolved_json(thread_id, (entry,))
        out.write(orjson.dumps({"threadId": thread_id, **written}).decode() + "\n")
    return 0


async def _cancel(store: ThreadStore, args: argparse.Namespace, out: TextIO) -> int:
    from agui_core.app.cli import load_agent
    from agui_core.protocol import events as ev
    from agui_core.protocol.types import ResumeEntry, RunAgentInput
    from agui_core.runtime.host import Host

    record = await store.load(args.thread)
    if record is None:
        raise LookupError(f"no thread {args.thread!r} in this store")
    opened = [o.interrupt.id for o in record.open_interrupts]
    if not opened:
        raise ValueError(f"thread {args.thread!r} has no open interrupt to cancel")
    if args.interrupts and sorted(set(args.interrupts)) != sorted(opened):
        raise ValueError(
            f"thread {args.thread!r} has open interrupts {', '.join(opened)}: one resume answers them all, "
            "so a cancel names all of them or none"
        )
    operator = args.operator or getpass.getuser()
    said: dict[str, Any] = {"cancelledBy": operator, "via": "agui threads cancel"}
    entries = tuple(ResumeEntry(interrupt_id=i, status="cancelled", metadata=said) for i in opened)
    run_input = RunAgentInput(thread_id=args.thread, run_id=f"cancel-{uuid.uuid4().hex[:12]}", resume=entries)
    agent, tools = load_agent(args.agent)
    owner = record.owner if record.owner is not None else ANONYMOUS
    async with Host(agent, store=store, tools=tools) as host:
        events = [event async for event in host.run(run_input, principal=owner)]
    last = events[-1] if events else None
    if isinstance(last, ev.RunErrorEvent):
        raise ValueError(f"the cancel was refused: {last.code}: {last.message}")
    outcome = last.outcome.type if isinstance(last, ev.RunFinishedEvent) and last.outcome is not None else "success"
    if args.json:
        document = {"threadId": args.thread, "cancelled": opened, "by": operator, "runId": run_input.run_id}
        out.write(orjson.dumps({**document, "outcome": outcome}).decode() + "\n")
    else:
        out.write(f"cancelled {', '.join(opened)} on thread {args.thread} as {operator}; ")
        out.write(f"the agent ran on it (run {run_input.run_id}): {outcome}\n")
    return 0
