"""The HTTP transport: a host as an ASGI application, each run answered with Server-Sent Events.

This is what every stock AG-UI client speaks (``@ag-ui/client``'s ``HttpAgent`` and the
frontends built on it). :class:`HttpApp` is a plain ASGI application, so it runs under any
ASGI server and mounts in Starlette or FastAPI under any path (``app.mount("/agent",
HttpApp(host))``); its routes are relative to where it is mounted:

- ``POST /`` with a ``RunAgentInput`` (``application/json``): ``200 text/event-stream``, one
  ``data: <event JSON>\\n\\n`` per event of the run. A refused run is a run: its refusal is a
  ``RUN_ERROR`` with its code in the stream (an input that is not a valid ``RunAgentInput``
  included, code ``INVALID_INPUT``), never an HTTP error;
- ``GET /capabilities``: the host's AG-UI ``AgentCapabilities`` document
  (:func:`~agui_core.runtime.capabilities.capabilities`), for clients the host's authenticator
  accepts, as every other route: it lists the tools and their parameter schemas
  (``public_capabilities=True`` serves it to anyone);
- ``GET /threads/{threadId}``: for the thread's owner only, its open interrupts and the
  snapshots needed to answer them (a page reloaded while interrupts were pending finds them
  here): ``{"threadId", "state", "interrupts", "messages", "agentState", "runId"}`` in wire
  camelCase, ``runId`` left out when there is none; under a decision policy, ``interrupts``
  are those the caller is to answer and ``waitingOnOthers`` (when any) the undecided rest,
  each with its quorum's tally (docs/approvers.md);
- ``GET /keys`` and ``POST /keys``: the caller's signing keys, and registering its first one
  (:mod:`agui_transports.http_keys`);
- ``GET /inbox``: the signed-in principal's threads with open interrupts, newest first, and
  ``GET /audit/{threadId}``: a thread's audit trail, for its owner
  (:mod:`agui_core.runtime.console` describes both documents);
- ``GET /inbox/events``: Server-Sent Events, one ``{"type": "changed", "threadId", "state"}``
  each time this host saves one of the principal's threads, or (under a decision policy) a
  thread that asks, or just asked, one of its roles to decide (after a first ``{"type":
  "ready"}``, and a comment line every 15 s while nothing happens). It carries this host's saves
  only; see :mod:`agui_core.runtime.watch`. One principal holds ``max_feeds_per_principal``
  feeds (4) at most: opening one more ends that principal's oldest, cleanly (its response
  completes; the console's page reconnects to it later), never anyone else's;
- ``GET /console/``: the approval console, a page (static files shipped in the package, no
  other origin contacted) where the principal answers its interrupts (``console=False``
  leaves it out). The page calls the routes above with the token its user signs in with.

HTTP errors are for what is not a run, each with a JSON body ``{"error", "message"}``: an
unknown path (404), a wrong method (405), a body that is not ``application/json`` (415) or
larger than ``max_body`` bytes (413, refused as soon as the ``Content-Length`` or the bytes
read so far say so, not after), a body not received within ``body_timeout`` seconds (408),
credentials the host's authenticator refuses (401; the ``Authorization: Bearer`` token is
read on every request), a request from a browser ``Origin`` not on the allow-list (403), a
thread never saved or another principal's, alike (404 ``{"error": "not_found", "message": "no
such thread"}``: a stranger learns nothing of which thread ids exist; see
:meth:`~agui_core.runtime.host.Host.view`).

Browsers: ``allow_origins`` (empty by default) lists the origins whose pages may call the
host. With the console on, the host's own origin (the request's scheme and ``Host``) is allowed
too, so that the console's page may call it, but only where that cannot be abused: when the
host has an authenticator (a page of another site that reached the host through a rebound
name has no token), or when the ``Host`` is a loopback address or ``localhost``. A request
carrying any other ``Origin`` is refused whatever it asks. A browser sends no ``Origin`` with a
``GET`` of its page's own origin, so when the plugin is told ``options.loopback_only`` (``agui
serve`` with no authenticator) every request must also name the host by a loopback address or
``localhost`` in its ``Host`` (``loopback_names_only``), or it is refused with 403
``host_not_allowed``: a page of another site rebound to 127.0.0.1 reads nothing; preflight
``OPTIONS`` requests are answered for allowed origins only, and only their responses carry
``Access-Control-Allow-Origin`` (the origin echoed, never ``*``). Clients that are not
browsers send no ``Origin`` and are not concerned.

A client that goes away mid-stream loses the rest of the stream, not the run: the
application stops sending at ``http.disconnect`` and returns, the run goes on in the host,
which saves its outcome; the same input sent again (same ``runId``) gets it. So does a client
that stops reading: a write waits ``send_timeout`` seconds (10 by default) at most, then the
application leaves the response unfinished (the server closes the connection) and the run
goes on unheard.

Limits: :class:`HttpTransport` admits each connection as it is accepted, before reading a
byte of it (a :class:`~agui_transports.connections.ConnectionGate`): 1,024 connections in all
and 64 per client address by default (``options.max_connections``,
``options.max_connections_per_client``); when full, a new connection takes the place of the
oldest one that has not yet carried an authenticated request (a client that never sends a
token cannot lock out those that do), and past that a connection is answered ``503`` and
closed. Every accepted socket gets ``TCP_NODELAY`` (without it, each response after the first
on a kept-alive connection waited 40 ms for the client's delayed ACK). A request head must
arrive whole within ``options.header_timeout`` seconds (10) of the connection, or of the first
byte of a later request on it, else the connection is closed (``408`` when part of a head
came); a connection idle between requests is closed after ``options.keepalive_timeout``
seconds (15). A run is one request, so there is no per-connection rate of inputs to limit;
what inputs cost the host is bounded per principal and per input:

- ``input_budget`` bytes a second (4 MiB) per principal, over all of its requests (the
  application keeps one :class:`~agui_transports.connections.InputBudget`; one can be shared with
  another transport), in bursts of one second's worth, a body larger than that passing on a
  full budget: each run's body is charged once read, before it is decoded, and one over the
  budget is not decoded but answered with a ``RUN_ERROR`` ``RATE_LIMITED``, once the budget
  would take it (a second at most), so that a client asking again at once is slowed down.
  Without an authenticator each client address has its own budget: under
  :class:`HttpTransport` the connection's peer, counted as the gate counts it (never an
  ``X-Forwarded-For`` header, which a client writes itself), so clients behind one proxy share
  one; under another ASGI server, the ``client`` of the request's scope;
- ``max_input_messages`` (2,000) messages per input, and as many tools, context entries, and
  content parts and tool calls in all its messages together; a resume of at most 100
  entries: an input over a limit gets ``INVALID_INPUT`` (``INVALID_RESUME``) naming the limit,
  decided as soon as it is parsed, before anything in it is validated (see
  :func:`~agui_transports.plugin.read_input`).

The inbox feeds, which stay open, are capped per principal too
(``options.max_feeds_per_principal``, 4 by default): one principal's feeds never fill the
connection cap for everyone. A client's mistake is logged in one line at most, never with a
traceback.

:class:`HttpTransport` is the ``http`` plugin of ``agui serve`` (``agui serve MODULE:AGENT
--http HOST:PORT``): the application under uvicorn (``pip install 'agui-core[http]'``).

This module gathers the public names; each job has a module of its own:
:mod:`~agui_transports.http_app` (the checks every request passes, and which route answers),
:mod:`~agui_transports.http_runs` (the run endpoint), :mod:`~agui_transports.http_reads` (a
thread, its audit trail, the inbox and its feed), :mod:`~agui_transports.http_console` (the
console's files), :mod:`~agui_transports.http_asgi` (what they share) and
:mod:`~agui_transports.http_server` (the plugin, under uvicorn).
"""

from __future__ import annotations

from agui_transports.http_app import DEFAULT_BODY_TIMEOUT, DEFAULT_MAX_BODY, HttpApp
from agui_transports.http_reads import DEFAULT_FEED_HEARTBEAT
from agui_transports.http_server import DEFAULT_PORT, HttpTransport

__all__ = [
    "DEFAULT_BODY_TIMEOUT",
    "DEFAULT_FEED_HEARTBEAT",
    "DEFAULT_MAX_BODY",
    "DEFAULT_PORT",
    "HttpApp",
    "HttpTransport",
]
