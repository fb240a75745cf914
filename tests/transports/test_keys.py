"""``GET /keys`` and ``POST /keys`` (agui_transports.http_keys) through the HTTP application: a
principal registers its first signing key once, written to the keys file; a second key, a
private key, a key that does not read, a body that is not one, and a host that takes no
registrations are each refused with their own error; an operator's edit of the file counts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from agui_transports.http import HttpApp
from agui_transports.http_keys import MAX_KEY_BODY

from agui_core.runtime import Host
from agui_core.runtime.auth import TokenAuthenticator
from agui_core.runtime.signatures import ApproverKeys
from tests.transports import agents

pytestmark = pytest.mark.anyio

TOKENS = ["ann token-of-ann-0123456789 clerk", "bob token-of-bob-0123456789 manager"]
ANN, BOB = "token-of-ann-0123456789", "token-of-bob-0123456789"


def p256(kid: str, *, private: bool = False) -> dict[str, Any]:
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    key = ec.generate_private_key(ec.SECP256R1())
    jwk: dict[str, Any] = json.loads(ECAlgorithm.to_jwk(key if private else key.public_key()))
    return {**jwk, "kid": kid}


@asynccontextmanager
async def served(keys: ApproverKeys | None) -> AsyncIterator[httpx.AsyncClient]:
    authenticator = TokenAuthenticator.from_lines(TOKENS)
    async with Host(agents.approval_agent, authenticator=authenticator, approver_keys=keys) as host:
        transport = httpx.ASGITransport(app=HttpApp(host))
        async with httpx.AsyncClient(transport=transport, base_url="http://h") as client:
            yield client


def auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


async def test_a_principal_registers_its_first_key_once_and_it_is_written_to_the_file(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{}")
    path.chmod(0o640)  # the operator's choice (other hosts' users may read it): kept
    async with served(ApproverKeys.from_file(path, registration=True)) as client:
        before = (await client.get("/keys", headers=auth(BOB))).json()
        assert before == {"principal": "bob", "signing": True, "registration": True, "keys": []}
        key = p256("bob-laptop")
        made = await client.post("/keys", json={**key, "extra": "dropped"}, headers=auth(BOB))
        assert made.status_code == 201 and made.json() == {"principal": "bob", "kid": "bob-laptop"}
        written = json.loads(path.read_text())
        assert written == {"bob": [key]}  # the public members only
        assert path.stat().st_mode & 0o777 == 0o640
        assert (await client.get("/keys", headers=auth(BOB))).json()["keys"] == ["bob-laptop"]
        second = await client.post("/keys", json=p256("bob-phone"), headers=auth(BOB))
        assert second.status_code == 409 and second.json()["error"] == "key_registered"
        assert json.loads(path.read_text()) == {"bob": [key]}
        # Another principal's first key is its own affair.
        assert (await client.post("/keys", json=p256("ann-1"), headers=auth(ANN))).status_code == 201
        # The operator replaces bob's key in the file: the host reads it again.
        replaced = p256("bob-new")
        path.write_text(json.dumps({"bob": [replaced], "ann": json.loads(path.read_text())["ann"]}))
        assert (await client.get("/keys", headers=auth(BOB))).json()["keys"] == ["bob-new"]


@pytest.mark.parametrize(
    ("body", "content_type", "status", "error"),
    [
        (json.dumps({"kty": "EC"}), "application/json", 400, "invalid_key"),  # no kid
        ("[1, 2]", "application/json", 400, "invalid_key"),
        ("not json", "application/json", 400, "invalid_key"),
        ("{}", "text/plain", 415, "unsupported_media_type"),
        ("x" * (MAX_KEY_BODY + 1), "application/json", 413, "payload_too_large"),
    ],
)
async def test_what_is_not_one_public_key_is_refused(
    tmp_path: Path, body: str, content_type: str, status: int, error: str
) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{}")
    async with served(ApproverKeys.from_file(path, registration=True)) as client:
        refused = await client.post("/keys", content=body, headers={**auth(BOB), "content-type": content_type})
        assert (refused.status_code, refused.json()["error"]) == (status, error)
    assert json.loads(path.read_text()) == {}


async def test_a_private_key_is_refused_and_not_written(tmp_path: Path) -> None:
    path = tmp_path / "keys.json"
    path.write_text("{}")
    async with served(ApproverKeys.from_file(path, registration=True)) as client:
        refused = await client.post("/keys", json=p256("bob-1", private=True), headers=auth(BOB))
        assert refused.status_code == 400 and "private key" in refused.json()["message"]
    assert json.loads(path.read_text()) == {}


async def test_registration_off_or_no_keys_at_all_and_strangers() -> None:
    async with served(ApproverKeys({})) as client:
        off = await client.post("/keys", json=p256("bob-1"), headers=auth(BOB))
        assert (off.status_code, off.json()["error"]) == (403, "registration_off")
        assert (await client.get("/keys", headers=auth(BOB))).json()["registration"] is False
        assert (await client.get("/keys")).status_code == 401
        assert (await client.post("/keys", json=p256("x"))).status_code == 401
    async with served(None) as client:
        assert (await client.get("/keys", headers=auth(BOB))).json() == {
            "principal": "bob",
            "signing": False,
            "registration": False,
            "keys": [],
        }
        none = await client.post("/keys", json=p256("bob-1"), headers=auth(BOB))
        assert none.status_code == 404


async def test_what_the_operator_wrote_is_kept_and_a_revoked_principal_cannot_register_again(tmp_path: Path) -> None:
    real = tmp_path / "real-keys.json"
    real.write_text("{}")
    link = tmp_path / "keys.json"
    link.symlink_to(real)
    keys = ApproverKeys.from_file(link, registration=True)
    async with served(keys) as client:
        # The operator revokes carol (an empty list) and adds dave, after the host read the file.
        dave = p256("dave-1")
        real.write_text(json.dumps({"carol": [], "dave": [dave]}))
        revoked = await client.post("/keys", json=p256("carol-2"), headers=auth(BOB))
        assert revoked.status_code == 201  # bob is not carol: his first key
        assert json.loads(real.read_text()) == {
            "carol": [],
            "dave": [dave],
            "bob": [json.loads(revoked.request.content)],
        }
        assert link.is_symlink()  # the link's target was replaced, the link kept
    # A principal the file names with no keys (revoked) is the operator's to change.
    tokens = ["carol token-of-carol-012345678 manager"]
    async with Host(
        agents.approval_agent, authenticator=TokenAuthenticator.from_lines(tokens), approver_keys=keys
    ) as host:
        transport = httpx.ASGITransport(app=HttpApp(host))
        async with httpx.AsyncClient(transport=transport, base_url="http://h") as client:
            again = await client.post("/keys", json=p256("carol-3"), headers=auth("token-of-carol-012345678"))
            assert again.status_code == 409 and "revoked" in again.json()["message"]
            # A file that does not read (an edit half-way) registers nothing, and is left as it is.
            real.write_text('{"dave": [')
            broken = await client.post("/keys", json=p256("carol-4"), headers=auth("token-of-carol-012345678"))
            assert broken.status_code == 503 and broken.json()["error"] == "keys_unavailable"
            assert real.read_text() == '{"dave": ['


def test_a_key_on_another_curve_is_refused_whatever_its_alg_says() -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from jwt.algorithms import ECAlgorithm

    p384 = json.loads(ECAlgorithm.to_jwk(ec.generate_private_key(ec.SECP384R1()).public_key()))
    with pytest.raises(ValueError, match="not Ed25519"):
        ApproverKeys({"bob": [{**p384, "kid": "k", "alg": "ES256"}]})
