"""Who is asking: authenticators turn a client's credentials into a principal.

A principal is a plain string naming whoever a host acts for (a user id, a service name).
Every thread belongs to the principal whose input created it (SPEC section 9): the host hands
the principal of each input to the thread machine, which refuses any other with ``FORBIDDEN``.

A transport gathers :class:`Credentials` from its connection (the ``Authorization: Bearer``
header, or the bearer token a browser puts in the WebSocket subprotocol list, since browsers
cannot set headers on a WebSocket handshake) and asks the host's authenticator for the
principal before any input is read. An authenticator is any object with
``async def authenticate(credentials) -> str`` that raises :class:`AuthenticationError` for
credentials it does not accept. Built in:

- :class:`TokenAuthenticator`: a fixed table of bearer tokens, one principal each
  (``agui serve --auth-tokens FILE``, one ``PRINCIPAL TOKEN [ROLE,ROLE...]`` per line);
- :class:`JwtAuthenticator`: signed JSON Web Tokens (``pyjwt``), the principal in a claim
  (``sub`` by default). An HMAC secret (``HS256``, ``HS384``, ``HS512``) shorter than
  :data:`MIN_HMAC_KEY_BYTES` (32 bytes) is refused when the authenticator is made: a short
  secret is found by trying every one against a single token anyone can get signed.

Without an authenticator every client is :data:`ANONYMOUS`, so every thread belongs to the
same principal; ``agui serve`` then listens on loopback addresses only.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol, runtime_checkable

import attrs

from agui_core.errors import AguiError
from agui_core.machine.record import ANONYMOUS

__all__ = [
    "ANONYMOUS",
    "MIN_HMAC_KEY_BYTES",
    "AuthenticationError",
    "Authenticator",
    "Credentials",
    "JwtAuthenticator",
    "Principal",
    "TokenAuthenticator",
    "roles_of",
]

MIN_HMAC_KEY_BYTES: Final = 32
"""The shortest HMAC secret :class:`JwtAuthenticator` takes, in bytes (256 bits, as HS256 needs)."""

_HMAC_ALGORITHMS: Final = frozenset({"HS256", "HS384", "HS512"})


class Principal(str):
    """A principal (a ``str``, as every principal is) with the roles its credentials carry.

    What an authenticator returns when it knows roles (the token file's third column, a JWT's
    roles claim): everything that takes a principal takes it, and :func:`roles_of` reads its
    roles where a decision policy asks (:mod:`agui_core.machine.policy`). Roles are the
    credentials' of this request, never remembered for the principal.
    """

    roles: frozenset[str]

    def __new__(cls, name: str, roles: Iterable[str] = ()) -> Principal:
        made = super().__new__(cls, name)
        object.__setattr__(made, "roles", frozenset(roles))
        return made

    def __setattr__(self, name: str, value: object) -> None:
        # One object may stand for every request with the same token: nothing may change it.
        raise AttributeError(f"a Principal cannot be changed (its {name})")


def roles_of(principal: str) -> frozenset[str]:
    """The roles ``principal`` carries (none for a plain string)."""
    return principal.roles if isinstance(principal, Principal) else frozenset()


def _check_roles(roles: Iterable[str], where: str) -> frozenset[str]:
    found = frozenset(roles)
    for role in found:
        if not role or len(role) > 64 or not role.isprintable() or "," in role or any(c.isspace() for c in role):
            raise ValueError(f"{where}: a role is 1 to 64 printable characters without commas or spaces, not {role!r}")
    return found


class AuthenticationError(AguiError):
    """The credentials were missing or not accepted. The message is safe to show the client."""


@attrs.frozen(kw_only=True)
class Credentials:
    """What a client presented: its bearer token, if any, and the request's headers.

    ``headers`` has lower-case names. ``bearer`` is the token of ``Authorization: Bearer``
    or of the WebSocket subprotocol ``agui.bearer.TOKEN``, as the transport found it.
    """

    bearer: str | None = None
    headers: Mapping[str, str] = attrs.field(factory=dict)


@runtime_checkable
class Authenticator(Protocol):
    """Credentials in, principal out (or :class:`AuthenticationError`)."""

    async def authenticate(self, credentials: Credentials) -> str:
        """The principal ``credentials`` stand for; raises ``AuthenticationError`` if none."""


def _check_principal(principal: str, where: str) -> str:
    if not principal or len(principal) > 256 or not principal.isprintable():
        raise ValueError(f"{where}: a principal is 1 to 256 printable characters, not {principal!r}")
    if principal == ANONYMOUS:
        raise ValueError(f"{where}: {ANONYMOUS!r} is reserved for clients of a host without an authenticator")
    return principal


class TokenAuthenticator:
    """A fixed table of bearer tokens; each stands for one principal.

    Tokens are compared in constant time; one principal may have several tokens.
    """

    def __init__(self, tokens: Mapping[str, str], roles: Mapping[str, Iterable[str]] | None = None) -> None:
        """``tokens`` maps each token to its principal; ``roles``, each token to the roles it carries."""
        for token, principal in tokens.items():
            if len(token) < 16:
                raise ValueError(f"the token of principal {principal!r} is shorter than 16 characters")
            _check_principal(principal, "token table")
        given = roles or {}
        self._tokens = [
            (token.encode(), Principal(principal, _check_roles(given.get(token, ()), "token table")))
            for token, principal in tokens.items()
        ]

    @classmethod
    def from_lines(cls, lines: Iterable[str], *, name: str = "tokens") -> TokenAuthenticator:
        """Read ``PRINCIPAL TOKEN [ROLE,ROLE...]`` lines; blank lines and ``#`` comments are skipped."""
        tokens: dict[str, str] = {}
        roles: dict[str, frozenset[str]] = {}
        for number, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if len(parts) not in (2, 3):
                raise ValueError(
                    f"{name}:{number}: expected 'PRINCIPAL TOKEN [ROLE,ROLE...]', found {len(parts)} fields"
                )
            principal, token = parts[:2]
            if token in tokens:
                raise ValueError(f"{name}:{number}: this token is already given to another principal")
            tokens[token] = _check_principal(principal, f"{name}:{number}")
            if len(parts) == 3:
                roles[token] = _check_roles(parts[2].split(","), f"{name}:{number}")
        if not tokens:
            raise ValueError(f"{name}: no tokens")
        return cls(tokens, roles)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TokenAuthenticator:
        """Read the token file at ``path`` (see :meth:`from_lines`)."""
        with open(path, encoding="utf-8") as file:
            return cls.from_lines(file, name=os.fspath(path))

    async def authenticate(self, credentials: Credentials) -> str:
        if not credentials.bearer:
            raise AuthenticationError("a bearer token is required")
        offered = credentials.bearer.encode()
        found: Principal | None = None
        for token, principal in self._tokens:  # every token is compared: no early exit to time
            if hmac.compare_digest(offered, token):
                found = principal
        if found is None:
            raise AuthenticationError("the bearer token is not valid")
        return found


class JwtAuthenticator:
    """Signed JSON Web Tokens: a valid signature and expiry, the principal in ``claim``.

    ``key`` is the HMAC secret or the public key (PEM) for ``algorithms``; ``audience`` and
    ``issuer``, when given, must match the token's ``aud`` and ``iss``. Tokens must carry
    ``exp``. The principal's roles are in ``roles_claim`` (a list, or a space-separated
    string; none when it is absent). Needs ``pyjwt`` (``pip install 'agui-core[jwt]'``). With an HMAC algorithm
    (``HS256``, ``HS384``, ``HS512``), a ``key`` shorter than :data:`MIN_HMAC_KEY_BYTES` bytes
    (UTF-8 for a ``str``) is a ``ValueError``.
    """

    def __init__(
        self,
        key: str | bytes,
        *,
        algorithms: Sequence[str] = ("HS256",),
        audience: str | None = None,
        issuer: str | None = None,
        claim: str = "sub",
        leeway: float = 0.0,
        roles_claim: str = "roles",
    ) -> None:
        import jwt  # an optional dependency: imported only by those who use it

        if not algorithms or "none" in (a.lower() for a in algorithms):
            raise ValueError("name the signing algorithms to accept; 'none' is never accepted")
        hmac_algorithms = sorted({a.upper() for a in algorithms} & _HMAC_ALGORITHMS)
        size = len(key.encode() if isinstance(key, str) else key)
        if hmac_algorithms and size < MIN_HMAC_KEY_BYTES:
            raise ValueError(
                f"the {'/'.join(hmac_algorithms)} key is {size} bytes; an HMAC key must be at least "
                f"{MIN_HMAC_KEY_BYTES} random bytes (for example: openssl rand -hex 32)"
            )
        self._jwt = jwt
        self._key = key
        self._algorithms = list(algorithms)
        self._audience = audience
        self._issuer = issuer
        self._claim = claim
        self._leeway = leeway
        self._roles_claim = roles_claim

    async def authenticate(self, credentials: Credentials) -> str:
        if not credentials.bearer:
            raise AuthenticationError("a bearer token is required")
        options: Any = {"require": ["exp"]}
        try:
            claims = self._jwt.decode(
                credentials.bearer,
                self._key,
                algorithms=self._algorithms,
                audience=self._audience,
                issuer=self._issuer,
                leeway=self._leeway,
                options=options,
            )
        except self._jwt.InvalidTokenError as exc:
            raise AuthenticationError(f"the bearer token is not valid ({type(exc).__name__})") from None
        principal = claims.get(self._claim)
        if not isinstance(principal, str) or not principal:
            raise AuthenticationError(f"the bearer token has no {self._claim!r} claim naming a principal")
        try:
            name = _check_principal(principal, "token")
        except ValueError:
            raise AuthenticationError(f"the {self._claim!r} claim is not a usable principal") from None
        granted = claims.get(self._roles_claim)
        if granted is None:
            return Principal(name)
        if isinstance(granted, str):
            granted = granted.replace(",", " ").split()  # a space- (as OAuth's scope) or comma-separated list
        if not isinstance(granted, list) or not all(isinstance(role, str) for role in granted):
            raise AuthenticationError(f"the {self._roles_claim!r} claim is not a list of roles")
        try:
            return Principal(name, _check_roles(granted, "token"))
        except ValueError:
            raise AuthenticationError(f"the {self._roles_claim!r} claim names a role that cannot be one") from None
