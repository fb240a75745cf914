"""A principal's signing keys over HTTP: ``GET /keys`` says which it has, ``POST /keys`` registers
its first one (see :class:`~agui_core.runtime.signatures.ApproverKeys` and docs/approvers.md).

``GET /keys`` answers ``{"principal", "signing", "registration", "keys": [kid, ...]}``:
whether the host checks signed decisions at all, whether it takes registrations, and the ids of
the caller's registered keys. ``POST /keys`` takes one public JWK (``application/json``, at
most :data:`MAX_KEY_BODY` bytes) and answers ``201 {"principal", "kid"}``; ``409
key_registered`` when the caller already has a key (only the operator changes it), ``403
registration_off`` when the host takes none, ``404 not_found`` when the host checks no
signatures, ``400 invalid_key`` for a key that does not read (a private key included), ``503
keys_unavailable`` while the keys file does not read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import orjson
from agui_transports.http_asgi import Authenticate, Cors, Receive, Refused, Send, send_json
from agui_transports.http_runs import RunRoute

from agui_core.runtime.host import Host

__all__ = ["MAX_KEY_BODY", "KeyRoutes"]

MAX_KEY_BODY: Final = 8192
"""The largest ``POST /keys`` body: a public JWK is a few hundred bytes."""
_NO_STORE: Final = (b"cache-control", b"no-store")


class KeyRoutes:
    """``GET /keys`` and ``POST /keys`` of one application; bodies are read by ``runs``'s rules
    (its timeout), within :data:`MAX_KEY_BODY`."""

    def __init__(self, host: Host, authenticate: Authenticate, runs: RunRoute) -> None:
        self.host = host
        self._authenticate = authenticate
        self._runs = runs

    async def get(self, headers: Mapping[str, str], send: Send, cors: Cors) -> None:
        principal = await self._authenticate(headers)
        keys = self.host.approver_keys
        document = {
            "principal": principal,
            "signing": keys is not None,
            "registration": keys is not None and keys.registration,
            "keys": [] if keys is None else list(keys.kids(principal)),
        }
        await send_json(send, 200, orjson.dumps(document), [_NO_STORE, *cors])

    async def post(self, headers: Mapping[str, str], receive: Receive, send: Send, cors: Cors) -> None:
        # Only where keys are: an optional dependency.
        from agui_core.runtime.signatures import KeysFileUnreadable, KeyTaken

        media_type = headers.get("content-type", "").partition(";")[0].strip().lower()
        if media_type != "application/json":
            raise Refused(415, "unsupported_media_type", "send the public JWK as application/json")
        principal = await self._authenticate(headers)
        keys = self.host.approver_keys
        if keys is None:
            raise Refused(404, "not_found", "this host checks no signed decisions (agui serve --approver-keys)")
        body = await self._runs.read_body(headers, receive, limit=MAX_KEY_BODY)
        try:
            jwk = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise Refused(400, "invalid_key", "the body is not JSON: send one public JWK") from None
        if not isinstance(jwk, dict):
            raise Refused(400, "invalid_key", "send one public JWK, a JSON object")
        try:
            kid = keys.register(principal, jwk)
        except PermissionError as exc:
            raise Refused(403, "registration_off", str(exc)) from None
        except KeyTaken as exc:
            raise Refused(409, "key_registered", str(exc)) from None
        except KeysFileUnreadable as exc:
            raise Refused(503, "keys_unavailable", str(exc)) from None
        except ValueError as exc:
            raise Refused(400, "invalid_key", str(exc)) from None
        await send_json(send, 201, orjson.dumps({"principal": principal, "kid": kid}), [_NO_STORE, *cors])
