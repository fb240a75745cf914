"""The ``agui`` command: ``serve`` an agent, play the ``demo``, ``check`` a stream, run ``conformance`` or
``episodes``, look after ``threads``.

``agui serve MODULE:NAME [--ws HOST:PORT | --http HOST:PORT | --stdio | --transport NAME]
[--store sqlite:PATH | postgresql://... | memory | --store-dsn-file FILE] [-o KEY=VALUE ...]
[--grace SECONDS] [run options] [limits] [trust options]`` hosts an
agent. ``MODULE:NAME`` is imported from the current directory or the installed packages;
``NAME`` (dots reach into objects) is

- an agent function, ``async def agent(ctx) -> result``; the tools the host runs for it are
  the module's ``TOOLS`` (a sequence of :class:`~agui_core.runtime.tools.Tool`), if it has one;
- or any object with an ``agent`` attribute and, optionally, a ``tools`` one (a small class,
  a ``types.SimpleNamespace``, a module);
- or a compiled LangGraph graph (``StateGraph(...).compile(checkpointer=...)``), hosted through
  :mod:`agui_core.adapters.langgraph` with its own checkpointer (needs ``agui-core[langgraph]``).
- or a Strands ``Agent`` (recognised, never called: calling one runs it), or a plain function
  of no arguments returning a fresh one (called once at load) (needs ``agui-core[strands]``):
  it is hosted by :class:`~agui_core.adapters.strands.StrandsAdapter`.
- or an OpenAI Agents SDK ``Agent`` (``agents.Agent``; recognised, never called), hosted by
  :class:`~agui_core.adapters.openai_agents.OpenAIAgentsAdapter` (needs ``agui-core[openai-agents]``).
- or a Pydantic AI ``Agent`` (``pydantic_ai.Agent``; recognised, never called), hosted by
  :class:`~agui_core.adapters.pydantic_ai.PydanticAIAdapter` (needs ``agui-core[pydantic-ai]``).

The transport is ``ws`` (the default, on ``127.0.0.1:8765``), ``http`` (HTTP + Server-Sent
Events under uvicorn, the transport of stock AG-UI clients), ``stdio``, or any transport
installed under the entry-point group ``agui.transports``; ``-o KEY=VALUE`` passes it its own
settings. The store defaults to the SQLite file ``agui.sqlite3``; hosts on several machines
share a PostgreSQL database, ``postgresql://USER@HOST/DATABASE[?schema=NAME]`` (needs
``agui-core[postgres]``). Its password is best kept off the command line (which every user of
the machine can read): in ``PGPASSWORD`` or a ``PGPASSFILE`` (libpq's variables, which asyncpg
reads), or with the whole URL in a file, ``--store-dsn-file FILE``. The store is opened at
start-up: a database that cannot be reached (or a SQLite file that cannot be opened) stops
``agui serve`` there, with one line saying why and exit status 2. SIGTERM or SIGINT stops
the server gracefully: runs in flight get ``--grace`` seconds to finish; a second signal
stops at once. Logs go to standard error.

Runs. ``--run-timeout SECONDS`` (default 300) bounds every run. A run holds its thread by a
lease in the store, renewed every ``--lease-renew SECONDS`` (default 2) to ``--lease SECONDS``
ahead (default 10): when a host dies mid-run, another host on the same store (or the same one
restarted) takes the thread over once the lease has run out. ``--legacy-resume`` also takes
the legacy LangGraph resume channel, ``forwardedProps.command.resume``, translated into
``resume[]`` when it is unambiguous, else refused with ``AMBIGUOUS_LEGACY_RESUME`` (see
:func:`agui_core.adapters.langgraph.translate_legacy_resume`). Every ``--expire-every SECONDS``
(default 30; 0: never) the host closes the interrupts whose ``expiresAt`` has passed, by
itself (:meth:`~agui_core.runtime.host.Host.expire`): the thread is free again without waiting
for an input.

Trust (SPEC section 9). ``--auth-tokens FILE`` (one ``PRINCIPAL TOKEN`` per line) or
``--auth-jwt-key FILE`` (signed tokens; ``--auth-jwt-algorithm``, default ``HS256``,
``--auth-jwt-audience``, ``--auth-jwt-issuer``; needs ``pyjwt``) give the host an
authenticator: every client then presents a bearer token and acts as its principal, which
owns the threads it creates. Without one every client is the same anonymous principal, so
the transport is told to listen only on a loopback address (``127.0.0.0/8``, ``::1``,
``localhost``; ``ServeOptions.loopback_only``) unless ``--insecure`` is given.
``--allow-origin ORIGIN`` (repeatable) lets web pages of that origin connect (by default none
may); ``--tls-cert FILE --tls-key FILE`` serve TLS (``wss://``, ``https://``). stdio takes none of these:
a pipe is local, and runs as the anonymous principal. ``GET /capabilities`` (which names the
tools and their parameter schemas) needs credentials like every other request, unless
``--public-capabilities``. An HMAC JWT key (``HS256``, ``HS384``, ``HS512``) shorter than 32
bytes is refused. A secret file (``--auth-tokens``, ``--auth-jwt-key``, ``--store-dsn-file``,
``--tls-key``) that its group or others may read or write is refused (``chmod 600 FILE``),
unless ``--insecure``.

Limits (the ``limits`` group of ``agui serve --help``; the table in docs/security.md lists every one)
bound what one client may take of the server: connections (``--max-connections``, and
``--max-connections-per-client`` per client address), how long a request head or an idle
connection may take (``--header-timeout``, ``--keepalive-timeout``), what one input may carry
(``--max-input-messages``) and one principal send (``--input-budget``), what clients may make
one thread hold (``--max-thread-messages``, ``--max-thread-bytes``). Among them too:
``--max-feeds-per-principal N`` (default 4; 0: no cap), how many live
inbox feeds one principal may hold open over HTTP (one more ends its oldest); ``--retain
DURATION`` (``30d``, ``12h``, ``90m``, ``45s``; default: keep every thread), which purges the
threads at rest (no open interrupt, no run in progress) that nobody has used for that long,
by a periodic sweep (see :class:`~agui_core.runtime.host.Host`); their audit trails go with
them unless ``--retain-audit DURATION`` (not less than ``--retain``) keeps those longer.

Operations (docs/operations.md). ``--metrics`` serves Prometheus metrics at ``GET /metrics`` on
the HTTP transport and on the WebSocket port's plain side (needs ``agui-core[metrics]``; see
:mod:`agui_core.runtime.metrics`), behind the authenticator unless ``--public-metrics``;
``--traces`` makes OpenTelemetry spans of runs, tools and interrupts, set up by the ``OTEL_*``
variables (needs ``agui-core[otel]``; see :mod:`agui_core.runtime.tracing`). ``agui threads``
is the operator's command on a store: see :mod:`agui_core.app.threads`.

``agui demo [--auto] [--store PATH] [--port PORT] [--transport ws|http]`` plays the main job: a
WebSocket (or HTTP) host on localhost over a SQLite file (default ``agui-demo.sqlite3``) serving the example agents, and
a terminal client that answers their interrupts (you, or the demo itself with ``--auto``);
see :mod:`agui_core.app.demo`. It exits with 0 when every scenario ended as expected. ``agui demo
--console`` serves the approval console instead (at ``http://127.0.0.1:8770/console/`` unless
``--port`` says otherwise), with a thread of each scenario waiting there.

``agui check FILE [--profile spec|seed] [--format text|json|sarif|junit]`` lints a recorded
stream (JSON lines or Server-Sent Events, told apart by their first line; ``-`` reads standard
input) as a client would read it (:func:`lint_recording`, :mod:`agui_core.machine.stream_lint`).
Every finding names its rule, its severity (error, warning, info) and its force and source
(spec MUST, spec SHOULD or the seed's profile, :mod:`agui_core.machine.rulebook`); ``--profile
spec`` (the default, for a stream from someone else) makes only the spec's MUSTs errors,
``--profile seed`` the seed's rules too. The report goes to standard output in every format
(:mod:`agui_core.app.check_report`; the text one also says how each run ended,
:func:`run_endings`, and ends with a summary line), and the exit status is 1 only when there is
an error (0 otherwise, 2 when the file cannot be read).

``agui conformance URL [--prompt TEXT | --input FILE] [--answers FILE] [--approve] [--profile spec|seed]
[--header K:V ...] [--json FILE] [--expiry-wait SECONDS] [--timeout SECONDS]`` drives a live AG-UI server
(``http(s)://``: HTTP + SSE; ``ws(s)://``: WebSocket) through the interrupt contract and prints
each check as pass, fail (with the events seen) or n/a (with why); see
:mod:`agui_core.conformance`. Without ``--approve`` it approves nothing: it denies or cancels
every approval, so no gated tool runs, and skips the checks that need one to run. At its end,
also after a failure or Ctrl-C, it cancels every interrupt it left open. Each check names its
force (spec MUST, spec SHOULD, seed profile) and source; the summary separates what breaks the
published spec from what misses only the seed's stricter profile. It exits with 1 when a check
fails that the profile counts (``spec``, the default: a spec MUST; ``seed``: any), 2 when the
server cannot be tested (unreachable, bad options), 130 when interrupted, 0 otherwise.

``agui episodes URL --tasks FILE --humans HUMAN [--trials K] [--concurrency N] ...`` runs an
agent through a task file's episodes with a scripted human and scores them (pass^k, actions
run without an approval, replays, refusals, latencies); see :mod:`agui_core.app.episodes`.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import logging
import math
import os
import re
import signal
import stat
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agui_core.app.check_report import CheckReport, Format
    from agui_core.machine.rulebook import Profile
    from agui_core.runtime.observe import Observer
    from agui_core.runtime.policies import PolicyFile
    from agui_core.runtime.webhooks import Webhooks

__all__ = ["check_recording", "lint_recording", "load_agent", "main", "run_endings"]

log = logging.getLogger("agui")

_SSE_FIELDS = (b"data:", b"data\n", b"event:", b"id:", b"retry:", b":")

# (flag, attribute) of the serve options that only a network transport can honour.
_NETWORK_OPTIONS = (
    ("--auth-tokens", "auth_tokens"),
    ("--auth-jwt-key", "auth_jwt_key"),
    ("--allow-origin", "allow_origin"),
    ("--tls-cert", "tls_cert"),
    ("--tls-key", "tls_key"),
    ("--insecure", "insecure"),
    ("--public-capabilities", "public_capabilities"),
    ("--metrics", "metrics"),
    ("--public-metrics", "public_metrics"),
)

# (flag, attribute) of the options that name a file holding a secret.
_SECRET_FILES = (
    ("--auth-tokens", "auth_tokens"),
    ("--auth-jwt-key", "auth_jwt_key"),
    ("--store-dsn-file", "store_dsn_file"),
    ("--tls-key", "tls_key"),
    ("--webhook-secret-file", "webhook_secret_file"),
)

_DEFAULT_STORE = "sqlite:agui.sqlite3"
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhd])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def load_agent(target: str) -> tuple[Any, Sequence[Any]]:
    """The agent and tools ``MODULE:NAME`` names (see the module docstring)."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{target!r} is not MODULE:NAME (for example my_agents:agent)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does, so local modules are found
    module = importlib.import_module(module_name)
    found: Any = module
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise ValueError(f"{module_name!r} has no {attribute!r}") from None
    from agui_core.adapters.langgraph import is_compiled_graph, langgraph_agent  # imports no LangGraph

    if is_compiled_graph(found):
        return langgraph_agent(found), ()
    framework = _framework_agent(found)
    if framework is not None:
        return framework, ()
    if hasattr(found, "agent"):
        agent, tools = found.agent, getattr(found, "tools", ())
    elif callable(found):
        agent, tools = found, getattr(module, "TOOLS", ())
    else:
        raise ValueError(f"{target!r} is neither an agent function nor an object with an agent attribute")
    if not callable(agent):
        raise ValueError(f"{target!r}: its agent is not callable")
    return agent, tuple(tools or ())


def _legacy_resume() -> Any:
    from agui_core.adapters.langgraph import translate_legacy_resume  # imports no LangGraph

    return translate_legacy_resume


def _framework_agent(found: Any) -> Any:
    """``found`` hosted by a framework adapter: an OpenAI Agents SDK agent, a Strands agent or a factory of one.

    A framework's agent object is recognised as it is, never called: a Strands ``Agent`` is
    callable with no arguments (``agent()`` runs it on an empty prompt, tools included). Only
    a plain function or a class that takes no arguments is called, once, to see what it
    builds (an agent function takes the run's context). Strands is looked for only once the
    module, or that factory, loaded it: serving a plain agent never imports a framework.
    """
    if _instance_of(found, "agents.agent", "Agent"):
        from agui_core.adapters.openai_agents import OpenAIAgentsAdapter

        return OpenAIAgentsAdapter(found)
    if _instance_of(found, "pydantic_ai.agent", "Agent"):
        from agui_core.adapters.pydantic_ai import PydanticAIAdapter

        return PydanticAIAdapter(found)
    if "strands" in sys.modules:
        from agui_core.adapters.strands import StrandsAdapter, is_strands_agent

        if is_strands_agent(found):
            return StrandsAdapter(found)
    built = found() if _is_factory(found) else None
    if "strands" not in sys.modules:
        return None
    from agui_core.adapters.strands import StrandsAdapter, is_strands_agent

    if is_strands_agent(built):
        return StrandsAdapter(found)
    return None


def _instance_of(found: Any, module: str, name: str) -> bool:
    """Whether ``found`` is an instance of the class ``module.name`` (nothing is imported to tell)."""
    return any(cls.__module__ == module and cls.__name__ == name for cls in type(found).__mro__)


def _is_factory(found: Any) -> bool:
    """Whether ``found`` is a plain function or a class that can be called with no arguments.

    An instance with ``__call__`` is never a factory here: calling it may run it.
    """
    if not (inspect.isfunction(found) or inspect.isclass(found)) or inspect.iscoroutinefunction(found):
        return False
    if hasattr(found, "agent"):
        return False
    try:
        parameters = inspect.signature(found).parameters.values()
    except (TypeError, ValueError):
        return False
    return not any(p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters)


def _open_store(spec: str) -> Any:
    from agui_core.store import MemoryThreadStore, SqliteThreadStore

    if spec == "memory":
        return MemoryThreadStore()
    if spec.startswith(("postgresql://", "postgres://")):
        from agui_core.store.postgres import PostgresThreadStore  # needs the postgres extra

        return PostgresThreadStore(spec)
    kind, _, path = spec.partition(":")
    if kind == "sqlite" and path:
        return SqliteThreadStore(path)
    raise ValueError(f"store {spec!r}: use sqlite:PATH, postgresql://... or memory")


def _store_spec(args: argparse.Namespace) -> str:
    """The store ``--store`` names, or the one in the file ``--store-dsn-file`` names."""
    if args.store_dsn_file is None:
        return str(args.store or _DEFAULT_STORE)
    if args.store is not None:
        raise ValueError("give --store or --store-dsn-file, not both")
    spec = Path(args.store_dsn_file).read_text(encoding="utf-8").strip()
    if not spec or "\n" in spec:
        raise ValueError(f"--store-dsn-file {args.store_dsn_file}: the file holds one line, the store's URL")
    return spec


def _shown(spec: str) -> str:
    """``spec`` as it may be printed: a PostgreSQL URL without its password."""
    if not spec.startswith(("postgresql://", "postgres://")):
        return spec
    scheme, _, rest = spec.partition("://")
    rest = re.sub(r"(?i)(password=)[^&]*", r"\1***", rest)
    where, at, place = rest.rpartition("@")
    if not at:
        return f"{scheme}://{rest}"
    user, colon, _ = where.partition(":")
    return f"{scheme}://{user}{':***' if colon else ''}@{place}"


def _refuse_open_secrets(args: argparse.Namespace) -> None:
    """Refuse a secret file its group or others may read or write, unless ``--insecure``."""
    if args.insecure or os.name != "posix":
        return
    for flag, attribute in _SECRET_FILES:
        path = getattr(args, attribute, None)  # a command without the option has no such file
        if path is None:
            continue
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except OSError:
            continue  # reading it says what is wrong, in its own words
        if mode & 0o077:
            raise ValueError(
                f"{flag} {path}: the file is open to its group or others (mode {mode:04o}); "
                f"make it yours alone with chmod 600 {path}, or pass --insecure"
            )


def _duration(flag: str, text: str | None) -> float | None:
    """Seconds in ``30d``, ``12h``, ``90m`` or ``45s`` (``None`` for ``None``)."""
    if text is None:
        return None
    found = _DURATION.fullmatch(text.strip().lower())
    seconds = float(found.group(1)) * _UNIT_SECONDS[found.group(2)] if found else math.nan
    if not 0 < seconds < math.inf:
        raise ValueError(f"{flag} {text!r} is not a duration such as 30d, 12h, 90m or 45s")
    return seconds


async def _open(store: Any, spec: str) -> None:
    """Open ``store`` now, so that one that cannot be reached stops ``agui serve`` at start-up."""
    from agui_core.store.base import StoreError

    try:
        await store.open()
    except StoreError as exc:
        reason = " ".join(str(exc).split())  # one line, whatever the driver's message spans
        raise ValueError(f"the thread store {_shown(spec)} cannot be opened: {reason}") from None


def _authenticator(args: argparse.Namespace) -> Any:
    """The authenticator the ``--auth-*`` options describe, or ``None``."""
    from agui_core.runtime.auth import JwtAuthenticator, TokenAuthenticator

    if args.auth_tokens is not None:
        return TokenAuthenticator.from_file(args.auth_tokens)
    if args.auth_jwt_key is None:
        for option in ("auth_jwt_audience", "auth_jwt_issuer"):
            if getattr(args, option) is not None:
                raise ValueError(f"--{option.replace('_', '-')} needs --auth-jwt-key")
        return None
    key = Path(args.auth_jwt_key).read_bytes().strip()  # a secret file usually ends in a newline
    if not key:
        raise ValueError(f"--auth-jwt-key {args.auth_jwt_key}: the file is empty")
    try:
        return JwtAuthenticator(
            key,
            algorithms=[args.auth_jwt_algorithm],
            audience=args.auth_jwt_audience,
            issuer=args.auth_jwt_issuer,
            roles_claim=args.auth_jwt_roles_claim,
        )
    except ImportError:
        raise ValueError("--auth-jwt-key needs pyjwt: pip install 'agui-core[jwt]'") from None


def _tls(args: argparse.Namespace) -> Any:
    """The server's TLS context from ``--tls-cert`` and ``--tls-key``, or ``None``."""
    import ssl

    if (args.tls_cert is None) != (args.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    if args.tls_cert is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.tls_cert, args.tls_key)
    return context


def _limits(args: argparse.Namespace) -> dict[str, Any]:
    """The transport limits given on the command line (0: none); the others keep their defaults."""
    for flag, value in (
        ("--send-timeout", args.send_timeout),
        ("--rate-burst", args.rate_burst),
        ("--header-timeout", args.header_timeout),
        ("--keepalive-timeout", args.keepalive_timeout),
    ):
        if value is not None and not 0 < value < float("inf"):
            raise ValueError(f"{flag} {value:g} is not a positive number")
    for flag, value in (
        ("--max-connections", args.max_connections),
        ("--max-connections-per-client", args.max_connections_per_client),
        ("--rate-limit", args.rate_limit),
        ("--max-input-messages", args.max_input_messages),
        ("--input-budget", args.input_budget),
        ("--max-feeds-per-principal", args.max_feeds_per_principal),
    ):
        if value is not None and value < 0:
            raise ValueError(f"{flag} {value:g} is negative (0 means none)")
    limits: dict[str, Any] = {}
    if args.max_feeds_per_principal is not None:
        limits["max_feeds_per_principal"] = args.max_feeds_per_principal or None
    if args.max_connections is not None:
        limits["max_connections"] = args.max_connections or None
    if args.max_connections_per_client is not None:
        limits["max_connections_per_client"] = args.max_connections_per_client or None
    if args.header_timeout is not None:
        limits["header_timeout"] = args.header_timeout
    if args.keepalive_timeout is not None:
        limits["keepalive_timeout"] = args.keepalive_timeout
    if args.rate_limit is not None:
        limits["rate_limit"] = args.rate_limit or None
    if args.rate_burst is not None:
        limits["rate_burst"] = args.rate_burst
    if args.max_input_messages is not None:
        limits["max_input_messages"] = args.max_input_messages or None
    if args.input_budget is not None:
        limits["input_budget"] = args.input_budget or None
    return limits


def _thread_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The host's thread limits given on the command line (0: none); the others keep their defaults."""
    limits: dict[str, Any] = {}
    for flag, name in (("--max-thread-messages", "max_thread_messages"), ("--max-thread-bytes", "max_thread_bytes")):
        value = getattr(args, name)
        if value is None:
            continue
        if value < 0:
            raise ValueError(f"{flag} {value} is negative (0 means no limit)")
        limits[name] = value or None
    return limits


def _settings(pairs: Sequence[str]) -> dict[str, str]:
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"option {pair!r} is not KEY=VALUE")
        settings[key] = value
    return settings


async def _serve(args: argparse.Namespace) -> int:
    import anyio
    from agui_transports.plugin import ServeOptions, load_transport

    from agui_core.runtime.host import Host
    from agui_core.runtime.observe import ObservedStore

    if args.transport == "stdio":
        given = [flag for flag, value in _NETWORK_OPTIONS if getattr(args, value)]
        if given:
            raise ValueError(f"{', '.join(given)}: stdio is a local pipe; it runs every input as anonymous")
    thread_limits = _thread_limits(args)
    _refuse_open_secrets(args)
    retain = _duration("--retain", args.retain)
    retain_audit = _duration("--retain-audit", args.retain_audit)
    if retain_audit is not None and (retain is None or retain_audit < retain):
        raise ValueError("--retain-audit keeps audit trails longer than their threads: it needs --retain, and no less")
    authenticator = _authenticator(args)
    if authenticator is None and args.insecure:
        log.warning("--insecure: no authenticator, and any address; every client acts as the same principal")
    tls = _tls(args)
    webhooks = _webhooks(args)
    policy = _policy(args, authenticator)
    agent, tools = load_agent(args.target)
    transport = load_transport(args.transport)
    spec = _store_spec(args)
    store = _open_store(spec)
    observer = _observer(args)
    stop = anyio.Event()
    stopped_at: list[float] = []
    host_scope = anyio.CancelScope()

    async def watch_signals() -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                if stop.is_set():
                    log.warning("%s again: stopping now", signal.Signals(signum).name)
                    host_scope.cancel()
                    return
                log.info("%s: stopping (runs in flight have %g s to finish)", signal.Signals(signum).name, args.grace)
                stopped_at.append(anyio.current_time())
                stop.set()

    options = ServeOptions(
        address=args.address,
        settings=_settings(args.option),
        stop=stop,
        grace=args.grace,
        ready=lambda where: log.info("serving %s over %s: %s", args.target, transport.name, where),
        allow_origins=tuple(args.allow_origin),
        ssl=tls,
        loopback_only=authenticator is None and not args.insecure,
        public_capabilities=args.public_capabilities,
        public_metrics=args.public_metrics,
        **_limits(args),
    )
    async with anyio.create_task_group() as group:
        group.start_soon(watch_signals)
        with host_scope:
            async with AsyncExitStack() as stack:
                await stack.enter_async_context(store)
                await _open(store, spec)
                host = await stack.enter_async_context(
                    Host(
                        agent,
                        store=store if observer is None else ObservedStore(store, observer),
                        observer=observer,
                        tools=tools,
                        authenticator=authenticator,
                        run_timeout=args.run_timeout,
                        lease=args.lease,
                        lease_renew=args.lease_renew,
                        translate_input=_legacy_resume() if args.legacy_resume else None,
                        **thread_limits,
                        retain=retain,
                        retain_audit=retain_audit,
                        expire_every=args.expire_every or None,
                        webhooks=webhooks,
                        policy=policy,
                        approver_keys=_approver_keys(args),
                    )
                )
                host.send_timeout = args.send_timeout
                await transport.serve(host, options)
                # Runs whose client left may still go on in the host: they get what is left
                # of the grace period, then they are cut off (the store recovers them later).
                host_scope.deadline = (stopped_at[0] if stopped_at else anyio.current_time()) + args.grace
        if host_scope.cancelled_caught:
            log.warning("runs still in flight were cut off")
        group.cancel_scope.cancel()
    return 0


def _policy(args: argparse.Namespace, authenticator: Any) -> PolicyFile | None:
    """The decision policy ``--policy`` names, read now (a file that does not read stops the host)."""
    if args.policy is None:
        return None
    if authenticator is None:
        raise ValueError("--policy decides by principal and role: give --auth-tokens or --auth-jwt-key too")
    from agui_core.runtime.policies import PolicyFile

    return PolicyFile(args.policy)


def _approver_keys(args: argparse.Namespace) -> Any:
    """The keys ``--approver-keys`` names, or ``None``."""
    if args.approver_keys is None:
        if args.approver_key_registration:
            raise ValueError("--approver-key-registration writes to the --approver-keys file: give it too")
        return None
    if args.policy is None:
        raise ValueError("--approver-keys checks the signatures a --policy asks for: give --policy too")
    try:
        from agui_core.runtime.signatures import ApproverKeys

        return ApproverKeys.from_file(args.approver_keys, registration=args.approver_key_registration)
    except ImportError:
        raise ValueError("--approver-keys needs pyjwt[crypto]: pip install 'agui-core[signatures]'") from None


def _webhooks(args: argparse.Namespace) -> Webhooks | None:
    """The host's webhooks as ``--webhook`` and its companions ask, or ``None``."""
    from agui_core.runtime.webhooks import Webhooks

    urls = list(args.webhook)
    if args.webhooks_file is not None:
        try:
            lines = Path(args.webhooks_file).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ValueError(f"--webhooks-file {args.webhooks_file}: {exc.strerror}") from None
        urls += [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not urls:
        if args.webhook_secret_file is not None:
            raise ValueError("--webhook-secret-file signs the notices of --webhook: give --webhook too")
        return None
    if args.webhook_secret_file is None:
        raise ValueError("--webhook needs --webhook-secret-file FILE: receivers check each notice's signature")
    try:
        secret = Path(args.webhook_secret_file).read_bytes().strip()
    except OSError as exc:
        raise ValueError(f"--webhook-secret-file {args.webhook_secret_file}: {exc.strerror}") from None
    if args.transport == "stdio":
        raise ValueError("--webhook: stdio is a local pipe; serve over --ws or --http to notify anyone")
    return Webhooks(urls, secret=secret, console_url=args.webhook_console, remind_before=args.webhook_remind)


def _observer(args: argparse.Namespace) -> Observer | None:
    """The host's observer as the options ask (``--metrics``, ``--traces``), or ``None``."""
    from agui_core.runtime.observe import Observers

    if args.public_metrics and not args.metrics:
        raise ValueError("--public-metrics opens the metrics of --metrics: give --metrics too")
    observers: list[Observer] = []
    if args.metrics:
        try:
            from agui_core.runtime.metrics import PrometheusObserver
        except ImportError:
            raise ValueError("--metrics needs prometheus-client: pip install 'agui-core[metrics]'") from None
        observers.append(PrometheusObserver())
    if args.traces:
        try:
            from agui_core.runtime.tracing import TracingObserver, provider_from_environment
        except ImportError:
            raise ValueError("--traces needs opentelemetry: pip install 'agui-core[otel]'") from None
        observers.append(TracingObserver(provider_from_environment()))
    if not observers:
        return None
    return observers[0] if len(observers) == 1 else Observers(observers)


def _frames(data: bytes) -> tuple[str, list[tuple[int, bytes]]]:
    """The recording's format and its frames, each with the line it starts on (1-based)."""
    from agui_core.protocol.framing import SSEReader

    lines = data.split(b"\n")
    first = next((line.strip() for line in lines if line.strip()), b"")
    if not first.startswith(_SSE_FIELDS) and first != b"data":
        return "jsonl", [(n, line.strip()) for n, line in enumerate(lines, 1) if line.strip()]
    reader = SSEReader(max_line=len(data) + 1)
    frames: list[tuple[int, bytes]] = []
    start: int | None = None
    for number, line in enumerate(lines, 1):
        if start is None and line.startswith(b"data"):
            start = number
        for body in reader.feed(line + b"\n"):
            frames.append((start or number, body))
            start = None
    frames.extend((start or len(lines), body) for body in reader.close())
    return "sse", frames


def lint_recording(
    data: bytes, *, name: str = "-", profile: Profile = "spec", now: datetime | None = None
) -> CheckReport:
    """Every finding about a recorded stream (see :mod:`agui_core.machine.stream_lint`), each
    with the line its event starts on; a frame that is not an event is ``invalid-event``."""
    from agui_core.app.check_report import CheckReport, LocatedFinding
    from agui_core.errors import InvalidEventError
    from agui_core.machine.client_strip import decode_client_event
    from agui_core.machine.stream_lint import finding, lint_stream

    framing, frames = _frames(data)
    found: list[LocatedFinding] = []
    events, places, stripped = [], [], []
    for line, body in frames:
        try:
            event, removed = decode_client_event(body)
        except InvalidEventError as exc:
            found.append(LocatedFinding(finding=finding("invalid-event", profile, None, exc.message), line=line))
            continue
        events.append(event)
        places.append(line)
        stripped.append(removed)
    for item in lint_stream(events, now=now or datetime.now(UTC), profile=profile, stripped=stripped):
        line = places[item.index] if item.index is not None and item.index < len(places) else 0
        found.append(LocatedFinding(finding=item, line=line))
    found.sort(key=lambda located: located.line)
    return CheckReport(
        file=name,
        profile=profile,
        framing=framing,
        frames=len(frames),
        findings=tuple(found),
        runs=tuple(run_endings(data, now=now)),
    )


def check_recording(
    data: bytes, *, name: str = "-", now: datetime | None = None, profile: Profile = "spec"
) -> list[str]:
    """Every finding about a recorded stream, one text line each, in the order of the stream."""
    from agui_core.app.check_report import render

    report = lint_recording(data, name=name, now=now, profile=profile)
    return render(report, "text").splitlines()[: len(report.findings)]


def run_endings(data: bytes, *, now: datetime | None = None) -> list[str]:
    """How each run of a recorded stream ended, one line each, as a client following it sees it.

    ``run RUN (line N): success``, ``run RUN (line N): interrupt, pending ID, ...`` (with
    ``(legacy on_interrupt, no outcome)`` when announced the legacy way), ``... cancelled``,
    ``... RUN_ERROR CODE``, ``refused (line N): RUN_ERROR CODE`` for an input refused before
    any run started, and ``run RUN: no end`` for a stream that breaks off. Events a client
    refuses are passed over (:func:`check_recording` reports them).
    """
    from agui_core.errors import InvalidEventError, OrderingError
    from agui_core.machine.client import ClientMachine
    from agui_core.machine.client_strip import decode_client_event
    from agui_core.protocol import events as ev

    at = now or datetime.now(UTC)
    client: ClientMachine | None = None
    endings: list[str] = []
    running: str | None = None
    for line, body in _frames(data)[1]:
        try:
            event, stripped = decode_client_event(body)
        except InvalidEventError:
            continue
        if client is None:
            thread = getattr(event, "thread_id", None)
            client = ClientMachine(thread if isinstance(thread, str) else "")
        try:
            client.receive_event(event, now=at, stripped=stripped)
        except OrderingError:
            continue
        if isinstance(event, ev.RunStartedEvent):
            running = event.run_id
        elif isinstance(event, ev.RunErrorEvent):
            where = f"run {running}" if running is not None else "refused"
            endings.append(f"{where} (line {line}): RUN_ERROR {event.code or '(no code)'}")
            running = None
        elif isinstance(event, ev.RunFinishedEvent):
            outcome = client.outcome
            kind = outcome.type if outcome is not None else "success"
            text = f"run {event.run_id} (line {line}): {kind}"
            if client.open_interrupts:
                text += ", pending " + ", ".join(i.id for i in client.open_interrupts)
                if client.legacy_interrupts:
                    text += " (legacy on_interrupt, no outcome)"
            endings.append(text)
            running = None
    if running is not None:
        endings.append(f"run {running}: no end (the stream breaks off)")
    return endings


def _check(path: str, *, profile: Profile = "spec", fmt: Format = "text") -> int:
    """``agui check``: the report on standard output in every format; 1 only on errors."""
    from agui_core.app.check_report import render
    from agui_core.machine.rulebook import Severity

    try:
        data = sys.stdin.buffer.read() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        print(f"agui check: {exc}", file=sys.stderr)
        return 2
    report = lint_recording(data, name="<stdin>" if path == "-" else path, profile=profile)
    sys.stdout.write(render(report, fmt))
    return 1 if report.count(Severity.ERROR) else 0


def _conformance(args: argparse.Namespace) -> int:
    """``agui conformance``: the kit against the server at ``args.url``."""
    import anyio
    import orjson

    from agui_core.conformance import Options, ProbeError, run_conformance, transport_for

    def fail(message: str) -> int:
        print(f"agui conformance: {message}", file=sys.stderr)
        return 2

    headers: dict[str, str] = {}
    for pair in args.header:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            return fail(f"--header {pair!r} is not NAME:VALUE")
        headers[name.strip()] = value.strip()
    try:
        template = orjson.loads(Path(args.input).read_bytes()) if args.input else None
        answers = orjson.loads(Path(args.answers).read_bytes()) if args.answers else None
    except (OSError, orjson.JSONDecodeError) as exc:
        return fail(str(exc))
    if template is not None and not isinstance(template, dict):
        return fail("--input holds a RunAgentInput: a JSON object")
    if answers is not None and not isinstance(answers, dict):
        return fail("--answers holds a JSON object: interrupt id, position, reason or * -> payload")
    options = Options(
        prompt=args.prompt if args.prompt is not None else Options().prompt,
        input=template,
        answers=answers,
        expiry_wait=args.expiry_wait,
        timeout=args.timeout,
        approve=args.approve,
    )

    async def drive() -> Any:
        transport = transport_for(args.url, headers=headers)
        found: list[Any] = []
        try:
            async with anyio.create_task_group() as group:

                async def on_sigterm() -> None:
                    # Stopped as a service is (SIGTERM): cancelled like Ctrl-C, so the suite
                    # still cancels the interrupts it opened before the command ends.
                    with anyio.open_signal_receiver(signal.SIGTERM) as received:
                        async for _ in received:
                            group.cancel_scope.cancel()
                            return

                group.start_soon(on_sigterm)
                try:
                    found.append(await run_conformance(transport, options))
                except (ValueError, ProbeError) as exc:
                    found.append(exc)  # raised below, not wrapped in the task group's ExceptionGroup
                group.cancel_scope.cancel()
        finally:
            await transport.aclose()
        if found and isinstance(found[0], Exception):
            raise found[0]
        return found[0] if found else None

    try:
        report = anyio.run(drive)
    except (ValueError, ProbeError) as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        # The suite cancelled what it had opened before the interrupt came through.
        print("agui conformance: interrupted; the interrupts the kit opened were cancelled", file=sys.stderr)
        return 130
    if report is None:
        print("agui conformance: terminated; the interrupts the kit opened were cancelled", file=sys.stderr)
        return 128 + signal.SIGTERM
    print(report.table(), end="")
    if args.json:
        Path(args.json).write_bytes(orjson.dumps(report.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
    failed = report.breaks_spec if args.profile == "spec" else not report.ok
    return 1 if failed else 0


def _usage_error(exc: BaseException) -> BaseException | None:
    """The mistake of the command line (a bad target, store or option) ``exc`` stands for."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]  # task groups wrap what their tasks raise
    return exc if isinstance(exc, (ValueError, LookupError, ImportError, OSError)) else None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agui", description="AG-UI interrupt-aware runs.")
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "demo", help="host the example agents and answer their interrupts: approval, form, parallel approvals"
    )
    demo.add_argument("--auto", action="store_true", help="answer every interrupt without asking, for scripts and CI")
    demo.add_argument(
        "--store",
        default="agui-demo.sqlite3",
        metavar="PATH",
        help="the SQLite file the host keeps threads in (default: agui-demo.sqlite3)",
    )
    demo.add_argument(
        "--port",
        type=int,
        default=None,
        help="the port on 127.0.0.1 (default: any free port; with --console, 8770; 0: any free port)",
    )
    demo.add_argument(
        "--transport",
        choices=["ws", "http"],
        default="ws",
        help="WebSocket (the default) or HTTP + Server-Sent Events (needs agui-core[http])",
    )
    demo.add_argument(
        "--console",
        action="store_true",
        help="serve the approval console (a web page) with a thread of each scenario waiting, until Ctrl-C",
    )

    serve = commands.add_parser("serve", help="host an agent over a transport")
    serve.add_argument("target", metavar="MODULE:AGENT", help="an agent function, or an object with .agent and .tools")
    where = serve.add_mutually_exclusive_group()
    where.add_argument(
        "--ws",
        metavar="HOST:PORT",
        nargs="?",
        const="127.0.0.1:8765",
        help="WebSocket (the default, on 127.0.0.1:8765)",
    )
    where.add_argument("--stdio", action="store_true", help="JSON lines on stdin and stdout")
    where.add_argument(
        "--http",
        metavar="HOST:PORT",
        nargs="?",
        const="127.0.0.1:8000",
        help="HTTP + Server-Sent Events under uvicorn (needs agui-core[http]; default 127.0.0.1:8000)",
    )
    where.add_argument(
        "--transport", metavar="NAME", help="any installed transport (entry-point group agui.transports)"
    )
    serve.add_argument("--address", metavar="ADDRESS", help="where --transport NAME listens, in its own notation")
    serve.add_argument(
        "--store",
        metavar="sqlite:PATH|postgresql://...|memory",
        help="where threads are kept (default: sqlite:agui.sqlite3); postgresql://USER@HOST/DB[?schema=NAME] "
        "lets hosts on many machines share threads (needs agui-core[postgres]; its password from PGPASSWORD, "
        "PGPASSFILE or --store-dsn-file, never the command line)",
    )
    serve.add_argument(
        "-o",
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a setting of the transport (repeatable)",
    )
    serve.add_argument(
        "--grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long runs in flight may take to finish on stop (default 10)",
    )
    serve.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    runs = serve.add_argument_group("runs", "how long a run may take, and how long its thread outlives a dead host")
    runs.add_argument(
        "--expire-every",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="look for interrupts past their expiresAt this often and close them (default 30; 0: only "
        "when an input comes)",
    )
    runs.add_argument(
        "--run-timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="the longest a run may take; it fails then (default 300)",
    )
    runs.add_argument(
        "--lease",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a run holds its thread past each renewal: a dead host's threads are free after it (default 10)",
    )
    runs.add_argument(
        "--lease-renew",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often a running host renews its runs' leases; less than --lease (default 2)",
    )
    runs.add_argument(
        "--legacy-resume",
        action="store_true",
        help="also take LangGraph's legacy forwardedProps.command.resume, as resume[] when unambiguous",
    )
    limits = serve.add_argument_group("limits", "what one client may take of the server")
    limits.add_argument(
        "--send-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="how long a client may read nothing before it is dropped; its run goes on (default 10)",
    )
    limits.add_argument(
        "--max-connections",
        type=int,
        metavar="N",
        help="connections open at once; when full, a new one takes the place of the oldest that has not yet"
        " carried an authenticated request, else it gets HTTP 503 (default 1024; 0: no cap)",
    )
    limits.add_argument(
        "--max-connections-per-client",
        type=int,
        metavar="N",
        help="connections one client address (an IPv6 /64) may hold at once; behind a proxy on this machine"
        " every client has the proxy's address (default 64; 0: no cap)",
    )
    limits.add_argument(
        "--header-timeout",
        type=float,
        metavar="SECONDS",
        help="how long a client may take to send a whole request head or WebSocket handshake (default 10)",
    )
    limits.add_argument(
        "--keepalive-timeout",
        type=float,
        metavar="SECONDS",
        help="how long an idle connection is kept: HTTP between requests, WebSocket before its first input"
        " (default 15)",
    )
    limits.add_argument(
        "--rate-limit",
        type=float,
        metavar="INPUTS_PER_SECOND",
        help="inputs per second one WebSocket connection may send (default 20; 0: no limit)",
    )
    limits.add_argument(
        "--rate-burst", type=int, metavar="N", help="inputs at once within the rate limit (default: twice the rate)"
    )
    limits.add_argument(
        "--max-thread-messages",
        type=int,
        metavar="N",
        help="messages clients' inputs may bring one thread to; an input past it gets THREAD_TOO_LARGE "
        "(default 10000; 0: no limit)",
    )
    limits.add_argument(
        "--max-thread-bytes",
        type=int,
        metavar="BYTES",
        help="bytes of messages (each as its JSON) clients' inputs may bring one thread to; an input past it "
        "gets THREAD_TOO_LARGE (default 33554432, 32 MiB; 0: no limit)",
    )
    limits.add_argument(
        "--max-input-messages",
        type=int,
        metavar="N",
        help="messages one input may carry, and as many tools, context entries, and content parts and tool calls "
        "in all; more get INVALID_INPUT before anything in it is validated (default 2000; 0: no limit)",
    )
    limits.add_argument(
        "--input-budget",
        type=int,
        metavar="BYTES_PER_SECOND",
        help="bytes of input a second one principal (without an authenticator: one client address) may send over "
        "HTTP and WebSocket, all its connections together; more get RATE_LIMITED unread "
        "(default 4194304, 4 MiB; 0: no limit)",
    )
    limits.add_argument(
        "--max-feeds-per-principal",
        type=int,
        metavar="N",
        help="live inbox feeds (HTTP /inbox/events) one principal may hold open; one more ends its oldest "
        "(default 4; 0: no cap)",
    )
    limits.add_argument(
        "--retain",
        metavar="DURATION",
        help="purge threads at rest (no open interrupt, no run) unused for this long, audit included: "
        "30d, 12h, 90m, 45s (default: keep every thread)",
    )
    limits.add_argument(
        "--retain-audit",
        metavar="DURATION",
        help="keep a purged thread's audit trail this long after its last use; at least --retain "
        "(default: it goes with its thread)",
    )
    trust = serve.add_argument_group("trust", "who may connect, and as whom (SPEC section 9)")
    auth = trust.add_mutually_exclusive_group()
    auth.add_argument(
        "--auth-tokens", metavar="FILE", help="bearer tokens, one 'PRINCIPAL TOKEN' per line ('#' comments)"
    )
    auth.add_argument("--auth-jwt-key", metavar="FILE", help="the key that signs JWT bearer tokens (needs pyjwt)")
    trust.add_argument(
        "--auth-jwt-algorithm", default="HS256", metavar="NAME", help="the JWT signing algorithm (default HS256)"
    )
    trust.add_argument("--auth-jwt-audience", metavar="AUD", help="the 'aud' a JWT must carry")
    trust.add_argument("--auth-jwt-issuer", metavar="ISS", help="the 'iss' a JWT must carry")
    trust.add_argument(
        "--auth-jwt-roles-claim",
        default="roles",
        metavar="CLAIM",
        help="the JWT claim listing the principal's roles, for --policy (default roles)",
    )
    trust.add_argument(
        "--approver-keys",
        metavar="FILE",
        help="the public keys (JWKs, by principal) that sign decisions where the policy says signed = true "
        "(needs agui-core[signatures]; docs/approvers.md)",
    )
    trust.add_argument(
        "--approver-key-registration",
        action="store_true",
        help="let a principal without a key register one (the console's, held in the browser), written to the "
        "--approver-keys file; later keys are the operator's to add (trust on first use: docs/approvers.md)",
    )
    trust.add_argument(
        "--policy",
        metavar="FILE",
        help="who besides a thread's owner may decide its interrupts, by role (TOML; read again when it "
        "changes; docs/approvers.md). Without it, the owner alone",
    )
    trust.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin (https://app.example) whose pages may connect (repeatable; default: none)",
    )
    trust.add_argument("--tls-cert", metavar="FILE", help="the TLS certificate chain (PEM), with --tls-key")
    trust.add_argument("--tls-key", metavar="FILE", help="the TLS private key (PEM), with --tls-cert")
    trust.add_argument(
        "--store-dsn-file",
        metavar="FILE",
        help="read the store's URL (postgresql://USER:PASSWORD@...) from FILE, mode 600, not the command line",
    )
    trust.add_argument(
        "--public-capabilities",
        action="store_true",
        help="answer GET /capabilities (tool names and schemas) without credentials (default: behind auth)",
    )
    trust.add_argument(
        "--public-metrics",
        action="store_true",
        help="with --metrics, answer GET /metrics without credentials (default: behind auth)",
    )
    notify = serve.add_argument_group(
        "webhooks", "a signed POST when an interrupt is raised, nears expiry, is decided or expires"
    )
    notify.add_argument(
        "--webhook",
        action="append",
        default=[],
        metavar="URL",
        help="send notices to this URL (repeatable; needs agui-core[webhooks]; docs/operations.md)",
    )
    notify.add_argument("--webhooks-file", metavar="FILE", help="a file of webhook URLs, one a line")
    notify.add_argument(
        "--webhook-secret-file",
        metavar="FILE",
        help="the file holding the secret that signs every notice (16 bytes or more; mode 600)",
    )
    notify.add_argument(
        "--webhook-remind",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="send interrupt.expiring this long before an interrupt's expiresAt (default 3600)",
    )
    notify.add_argument(
        "--webhook-console",
        metavar="URL",
        help="the approval console's address as people reach it, for the link in each notice "
        "(for example https://agents.example.com/console/)",
    )
    serve.add_argument(
        "--metrics",
        action="store_true",
        help="serve Prometheus metrics at GET /metrics (needs agui-core[metrics]; docs/operations.md)",
    )
    serve.add_argument(
        "--traces",
        action="store_true",
        help="OpenTelemetry spans of runs, tools and interrupts, set up by the OTEL_* variables "
        "(needs agui-core[otel]; docs/operations.md)",
    )
    trust.add_argument(
        "--insecure",
        action="store_true",
        help="serve without an authenticator on an address other than loopback (every client is one principal); "
        "also take secret files their group or others may read",
    )

    conformance = commands.add_parser(
        "conformance",
        help="test a live AG-UI server's interrupt contract (http(s):// or ws(s)://)",
        description="Test a live AG-UI server's interrupt contract. What the kit sends: runs of the "
        "interrupting input (--prompt or --input) on fresh threads of its own (ids conformance-...), and "
        "resumes that answer the interrupts: forms with a payload made from their responseSchema (or "
        '--answers), approvals with a denial ({"approved": false}, false) or a cancellation, never a yes '
        "unless --approve; malformed resumes the server should refuse; and at the end a cancelled entry for "
        "every interrupt still open, so no thread is left waiting in the operator's inbox (also after a "
        "failure or Ctrl-C). Run it against a server whose agent may be driven this way.",
    )
    conformance.add_argument("url", metavar="URL", help="the agent's endpoint: http(s):// (HTTP + SSE) or ws(s)://")
    said = conformance.add_mutually_exclusive_group()
    said.add_argument("--prompt", metavar="TEXT", help="the user message that makes the agent interrupt")
    said.add_argument("--input", metavar="FILE", help="a RunAgentInput (JSON) that makes the agent interrupt")
    conformance.add_argument(
        "--answers",
        metavar="FILE",
        help="payloads to resolve interrupts with (JSON: id, position, reason or * -> payload); "
        "one that approves a gate is sent as a denial unless --approve",
    )
    conformance.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="sent with every request (repeatable)"
    )
    conformance.add_argument(
        "--approve",
        action="store_true",
        help="let the kit approve tool calls and confirmations, so the server RUNS its gated tools: needed by "
        "the checks that judge a tool's execution (resume.tool-results, r5.concurrent; r8.missing-payload "
        "when only approvals declare a schema); off by default",
    )
    conformance.add_argument(
        "--profile",
        choices=("spec", "seed"),
        default="spec",
        help="what fails the command (exit 1): spec (default) a broken MUST of the published AG-UI 1.1 spec; "
        "seed also a miss of the seed's stricter profile, which agui-core's own host keeps",
    )
    conformance.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    conformance.add_argument(
        "--expiry-wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for an expiresAt to pass (R7; default 30)",
    )
    conformance.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS", help="bound on one response (default 30)"
    )

    from agui_core.app.episodes import add_parser as add_episodes

    add_episodes(commands)
    from agui_core.app.threads import add_threads_parser

    add_threads_parser(commands)
    check = commands.add_parser(
        "check", help="lint a recorded event stream (JSON lines or SSE) as a client would read it"
    )
    check.add_argument("file", metavar="FILE", help="the recording; - for standard input")
    check.add_argument(
        "--profile",
        choices=["spec", "seed"],
        default="spec",
        help="which rules are errors: spec (its MUSTs; default, for a stream from someone else) or seed "
        "(the seed's stricter profile too, as agui-core's host keeps it)",
    )
    check.add_argument(
        "--format",
        choices=["text", "json", "sarif", "junit"],
        default="text",
        help="the report's format on standard output (default text)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the ``agui`` command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        from agui_core.app.demo import run_demo

        if args.port is not None and not 0 <= args.port <= 65535:
            parser.error(f"--port {args.port} is outside 0-65535")
        if args.console:
            from agui_core.app.demo_console import CONSOLE_PORT, run_console

            return run_console(store=args.store, port=CONSOLE_PORT if args.port is None else args.port)
        return run_demo(auto=args.auto, store=args.store, port=args.port or 0, transport=args.transport)
    if args.command == "check":
        return _check(args.file, profile=args.profile, fmt=args.format)
    if args.command == "conformance":
        return _conformance(args)
    if args.command == "threads":
        from agui_core.app.threads import run_threads

        return run_threads(args)
    if args.command == "episodes":
        from agui_core.app import episodes

        return episodes.main(args)
    if args.command == "serve":
        import anyio

        logging.basicConfig(
            stream=sys.stderr, level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
        )
        if args.log_level != "DEBUG":
            # websockets logs every connection opened and closed at INFO: too much for a server.
            logging.getLogger("websockets").setLevel(logging.WARNING)
        if args.stdio:
            args.transport, args.address = "stdio", None
        elif args.http is not None:
            args.transport, args.address = "http", args.http
        elif args.transport is None:
            args.transport, args.address = "ws", args.ws or "127.0.0.1:8765"
        try:
            return anyio.run(_serve, args)
        except (ValueError, LookupError, ImportError, OSError, BaseExceptionGroup) as exc:
            usage = _usage_error(exc)
            if usage is None:
                raise
            print(f"agui serve: {usage}", file=sys.stderr)
            return 2
    parser.error(f"unknown command {args.command!r}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
