"""Signed decisions: a detached JWS over what a person decided, checked against their keys.

Where a decision policy says a rule's decisions are signed (``signed = true``, see
:mod:`agui_core.machine.policy`), each resume entry answering such an interrupt carries, in its
``metadata["ag-ui:signature"]``, a JWS with a detached, unencoded payload (RFC 7515 appendix F
with RFC 7797: ``"b64": false``, a critical header; PyJWT writes one with
``is_payload_detached=True``) whose header names the signing key (``kid``) and
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

import contextlib
import logging
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

import orjson

from agui_core.protocol.types import JSON, ResumeEntry

__all__ = ["ALGORITHMS", "SIGNATURE_KEY", "ApproverKeys", "KeyTaken", "KeysFileUnreadable", "signed_content"]

log = logging.getLogger(__name__)

_PUBLIC_MEMBERS: Final = frozenset({"kty", "crv", "x", "y", "kid", "alg", "use", "key_ops"})
"""The members of a public EC or OKP JWK a registration keeps (anything else is dropped)."""
_CURVES: Final = {("OKP", "Ed25519"): "EdDSA", ("EC", "P-256"): "ES256"}
"""The key types and curves a decision may be signed with, and the algorithm of each."""

SIGNATURE_KEY: Final = "ag-ui:signature"
"""The resume entry's metadata key that holds a decision's signature."""

ALGORITHMS: Final = ("EdDSA", "ES256")
"""The signing algorithms a decision may use."""


def signed_content(thread_id: str, interrupt_id: str, status: str, payload: JSON) -> bytes:
    """The bytes a decision's signature covers (see the module docstring)."""
    document = {"interruptId": interrupt_id, "payload": payload, "status": status, "threadId": thread_id}
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS)


class KeyTaken(Exception):
    """A principal registering a key already has one: only an operator changes it."""


class KeysFileUnreadable(Exception):
    """The keys file does not read (an operator's edit half-way, say): no key is registered."""


class ApproverKeys:
    """The public keys each principal signs decisions with: ``{principal: [JWK, ...]}``.

    With ``registration``, a principal that has no key yet may register one itself
    (:meth:`register`: the approval console does, with a key its browser holds); once it has
    one, only an operator adds or replaces keys, in the file. Trust on first use: whoever
    holds a principal's credentials before it registers can register for it, so a host that
    wants every key vouched for leaves registration off and keeps the file itself.
    """

    def __init__(
        self,
        keys: Mapping[str, Sequence[Mapping[str, Any]]],
        *,
        registration: bool = False,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        import jwt  # an optional dependency: imported only where decisions are signed

        self._jwt = jwt
        self.registration = registration
        """Whether a principal without a key may register one (:meth:`register`)."""
        self._path = None if path is None else os.fspath(path)
        self._stamp = _stamp(self._path)
        self._keys: dict[str, dict[str, Any]] = {}
        self._documents: dict[str, list[dict[str, Any]]] = {}
        self._take(keys)

    def _take(self, keys: Mapping[str, Sequence[Mapping[str, Any]]]) -> None:
        read: dict[str, dict[str, Any]] = {}
        documents: dict[str, list[dict[str, Any]]] = {}
        for principal, jwks in keys.items():
            if not isinstance(jwks, Sequence) or isinstance(jwks, str):
                raise ValueError(f"approver keys: {principal!r} maps to a list of public JWKs")
            read[principal] = {kid: made for kid, made in (self._read_key(principal, jwk) for jwk in jwks)}
            documents[principal] = [dict(jwk) for jwk in jwks]
        self._keys, self._documents = read, documents

    def _read_key(self, principal: str, jwk: object) -> tuple[str, Any]:
        jwt = self._jwt
        kid = jwk.get("kid") if isinstance(jwk, Mapping) else None
        if not isinstance(jwk, Mapping) or not isinstance(kid, str) or not kid:
            raise ValueError(f"approver keys: every key of {principal!r} has a 'kid'")
        if len(kid) > 128 or not kid.isprintable():
            raise ValueError(f"approver keys: a key id of {principal!r} is 1 to 128 printable characters")
        if "d" in jwk:
            raise ValueError(f"approver keys: key {kid!r} of {principal!r} is a private key; give its public half")
        try:
            made = jwt.PyJWK(dict(jwk))
        except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as exc:
            raise ValueError(f"approver keys: key {kid!r} of {principal!r} does not read ({exc})") from None
        # The curve, not the JWK's own "alg" label, says what the key is (a P-384 key labelled
        # ES256 would read, then fail every verification).
        curve = (jwk.get("kty"), jwk.get("crv"))
        if made.algorithm_name not in ALGORITHMS or curve not in _CURVES or _CURVES[curve] != made.algorithm_name:
            raise ValueError(f"approver keys: key {kid!r} of {principal!r} is not Ed25519 (EdDSA) or P-256 (ES256)")
        return kid, made

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], *, registration: bool = False) -> ApproverKeys:
        """The keys in the JSON file at ``path``; ``ValueError`` naming what is wrong.

        The file is read again when it changes (an operator's edit, another host's
        registration); keys registered here are written to it (``registration``)."""
        return cls(_read_file(os.fspath(path)), registration=registration, path=path)

    def _fresh(self) -> None:
        """Read the file again if it changed since it was read (a file that no longer reads
        leaves the keys read before, as a policy file does)."""
        if self._path is None:
            return
        stamp = _stamp(self._path)
        if stamp == self._stamp:
            return
        try:
            self._take(_read_file(self._path))
        except ValueError as exc:
            log.warning("approver keys: %s; the keys read before stay", exc)
        self._stamp = stamp

    def kids(self, principal: str) -> tuple[str, ...]:
        """The ids of the keys registered for ``principal``."""
        self._fresh()
        return tuple(self._keys.get(str(principal), ()))

    def register(self, principal: str, jwk: Mapping[str, Any]) -> str:
        """Register ``jwk``, a public JWK with a ``kid``, as ``principal``'s first key; its kid.

        Raises ``PermissionError`` when registration is off, :class:`KeyTaken` when the file
        names the principal already (with keys, or with none: revoked), ``ValueError`` for a
        key that does not read (private, no ``kid``, not an Ed25519 or P-256 key), and
        :class:`KeysFileUnreadable` when the file does not read. With a file, the key is
        written to it (replaced whole, so a reader never sees half of it) before it counts.
        """
        if not self.registration:
            raise PermissionError("this host takes no key registrations: its operator registers keys")
        principal = str(principal)
        kid, made = self._read_key(principal, jwk)
        public = {k: v for k, v in jwk.items() if k in _PUBLIC_MEMBERS}
        if self._path is None:
            self._check_unregistered(principal, self._documents)
            self._documents = {**self._documents, principal: [public]}
            self._keys = {**self._keys, principal: {kid: made}}
            return kid
        # Read, check and write under a lock other hosts on the file take too, from the file as
        # it is now (not as last read): an operator's edit since, or another host's
        # registration, is kept, and a file that does not read is left for its operator.
        with _locked(self._path):
            try:
                documents = _read_file(self._path)
                self._take(documents)
            except ValueError as exc:
                raise KeysFileUnreadable(f"the keys file does not read, so nothing is registered: {exc}") from None
            self._check_unregistered(principal, documents)
            written = {**documents, principal: [public]}
            _write_file(self._path, written)
            self._take(written)
            self._stamp = _stamp(self._path)
        return kid

    @staticmethod
    def _check_unregistered(principal: str, documents: Mapping[str, Any]) -> None:
        # Registered once: a principal the file names at all (with keys, or with none: revoked)
        # is the operator's to change.
        if principal in documents:
            kids = ", ".join(str(k.get("kid")) for k in documents[principal] if isinstance(k, Mapping))
            held = f"a signing key ({kids})" if kids else "its signing keys revoked"
            raise KeyTaken(f"{principal!r} already has {held}; only the host's operator adds or replaces keys")

    def verify(self, principal: str, thread_id: str, entry: ResumeEntry) -> str | None:
        """The ``kid`` of ``principal``'s key that signed ``entry``'s decision on ``thread_id``;
        ``None`` when it carries no signature, or one that does not verify by such a key."""
        self._fresh()
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
        except jwt.PyJWTError:  # a bad token, or a key that cannot check it: not verified either way
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


def _stamp(path: str | None) -> tuple[int, int] | None:
    if path is None:
        return None
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_mtime_ns, found.st_size


def _read_file(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            document = orjson.loads(file.read())
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror}") from None
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path}: a JSON object from principal to its keys")
    return document


@contextlib.contextmanager
def _locked(path: str) -> Iterator[None]:
    """Hold the lock beside the keys file (``FILE.lock``) that every host writing it takes."""
    import fcntl  # POSIX: where agui serve runs

    with open(os.path.realpath(path) + ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def _write_file(path: str, document: Mapping[str, Any]) -> None:
    """Replace the file at ``path`` with ``document``, whole (a temporary file renamed over it).

    A symbolic link is followed (its target is replaced, the link stays), and the file keeps
    its mode (an operator may let other hosts' users read it)."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600
    handle, temporary = tempfile.mkstemp(prefix=".approver-keys-", dir=os.path.dirname(target))
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
