"""Signed decisions: a detached JWS over what a person decided, checked against their keys.

Where a decision policy says a rule's decisions are signed (``signed = true``, see
:mod:`agui_core.machine.policy`), each resume entry answering such an interrupt carries, in its
``metadata["ag-ui:signature"]``, a JWS with a detached payload (RFC 7515 appendix F; PyJWT
writes one with ``is_payload_detached=True``) whose header names the signing key (``kid``) and
its algorithm (``EdDSA`` with Ed25519, or ``ES256``). What is signed is the canonical JSON
(keys sorted, no spaces) of::

    {"interruptId": ..., "payload": ..., "status": ..., "threadId": ...}

so a signature answers one interrupt of one thread, once: sent with another interrupt, or with
another answer, it does not verify. The host checks it against the public keys registered for
the principal whose resume carries it (``agui serve --approver-keys FILE``, a JSON object from
principal to a list of public JWKs, each with a ``kid``); the thread machine refuses a signed
rule's answer that has no valid signature with ``RUN_ERROR INVALID_SIGNATURE``, and the audit
trail keeps the key id that verified each decision.

Needs PyJWT with its crypto extra (``pip install 'agui-core[signatures]'``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson

from agui_core.protocol.types import JSON, ResumeEntry

__all__ = ["ALGORITHMS", "SIGNATURE_KEY", "ApproverKeys", "signed_content"]

SIGNATURE_KEY: Final = "ag-ui:signature"
"""The resume entry's metadata key that holds a decision's signature."""

ALGORITHMS: Final = ("EdDSA", "ES256")
"""The signing algorithms a decision may use."""


def signed_content(thread_id: str, interrupt_id: str, status: str, payload: JSON) -> bytes:
    """The bytes a decision's signature covers (see the module docstring)."""
    document = {"interruptId": interrupt_id, "payload": payload, "status": status, "threadId": thread_id}
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)


class ApproverKeys:
    """The public keys each principal signs decisions with: ``{principal: [JWK, ...]}``."""

    def __init__(self, keys: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        import jwt  # an optional dependency: imported only where decisions are signed

        self._jwt = jwt
        self._keys: dict[str, dict[str, Any]] = {}
        for principal, jwks in keys.items():
            if not isinstance(jwks, Sequence) or isinstance(jwks, str):
                raise ValueError(f"approver keys: {principal!r} maps to a list of public JWKs")
            found: dict[str, Any] = {}
            for jwk in jwks:
                kid = jwk.get("kid") if isinstance(jwk, Mapping) else None
                if not isinstance(kid, str) or not kid:
                    raise ValueError(f"approver keys: every key of {principal!r} has a 'kid'")
                if "d" in jwk:
                    raise ValueError(
                        f"approver keys: key {kid!r} of {principal!r} is a private key; give its public half"
                    )
                try:
                    made = jwt.PyJWK(dict(jwk))
                except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError) as exc:
                    raise ValueError(f"approver keys: key {kid!r} of {principal!r} does not read ({exc})") from None
                if made.algorithm_name not in ALGORITHMS:
                    raise ValueError(f"approver keys: key {kid!r} of {principal!r} is not Ed25519 or P-256")
                found[kid] = made
            self._keys[principal] = found

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ApproverKeys:
        """The keys in the JSON file at ``path``; ``ValueError`` naming what is wrong."""
        try:
            with open(path, "rb") as file:
                document = orjson.loads(file.read())
        except OSError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc.strerror}") from None
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"{os.fspath(path)}: not JSON ({exc})") from None
        if not isinstance(document, dict):
            raise ValueError(f"{os.fspath(path)}: a JSON object from principal to its keys")
        return cls(document)

    def verify(self, principal: str, thread_id: str, entry: ResumeEntry) -> str | None:
        """The ``kid`` of ``principal``'s key that signed ``entry``'s decision on ``thread_id``;
        ``None`` when it carries no signature, or one that does not verify by such a key."""
        token = entry.metadata.get(SIGNATURE_KEY) if entry.metadata is not None else None
        keys = self._keys.get(str(principal))
        if not isinstance(token, str) or not keys:
            return None
        jwt = self._jwt
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError:
            return None
        kid = header.get("kid")
        if not isinstance(kid, str):
            return None
        key = keys.get(kid)
        if key is None or header.get("alg") != key.algorithm_name:
            return None
        content = signed_content(thread_id, entry.interrupt_id, entry.status, entry.payload)
        try:
            jwt.api_jws.PyJWS().decode_complete(
                token, key=key.key, algorithms=[key.algorithm_name], detached_payload=content
            )
        except jwt.InvalidTokenError:
            return None
        return kid

    def verified(self, principal: str, thread_id: str, entries: Iterable[ResumeEntry]) -> dict[str, str]:
        """By interrupt id, the key id that verified each of ``entries`` that carries a good signature."""
        found: dict[str, str] = {}
        for entry in entries:
            kid = self.verify(principal, thread_id, entry)
            if kid is not None:
                found[entry.interrupt_id] = kid
        return found
