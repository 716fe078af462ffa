"""app/security.py: password hashes (and hashes written before it existed), bearer-secret digests,
customer session tokens and CSRF tokens."""

from __future__ import annotations

import base64
import hashlib
import re

import pytest

from app.errors import InvalidToken
from app.security import (
    CustomerClaims,
    check_password,
    csrf_matches,
    digest,
    dummy_hash,
    hash_password,
    issue_token,
    new_csrf_token,
    new_token,
    read_token,
    token_matches,
    verify_password,
)

PASSWORD = "correct horse battery staple"
# Written by app/data/agents.py before app/security.py existed: such hashes are in databases now.
OLD_HASH = "scrypt$16384$8$5$Sc2gbE7tJnHoWjUszeEBNw==$xHiyyuP5Qig8VPkry3nVhSPaMInzlhZyHoWesDI0Pkg="
SECRET = "test-secret"
CLAIMS = CustomerClaims(tenant_id=7, key_id=3, customer_ref="C-1", expires=2_000_000_000)
# CLAIMS signed with SECRET.
TOKEN = (
    "v1.eyJ0ZW5hbnRfaWQiOjcsImtleV9pZCI6MywiY3VzdG9tZXJfcmVmIjoiQy0xIiwiZXhwaXJlcyI6MjAwMDAwMDAwMH0"
    ".ruMjbwhjieb-X_XS2FYZHEzXAAqp8-sROjPuZdAJkKc"
)
# The same claims without the key, signed with SECRET before tokens named the key that issued them.
OLD_TOKEN = (
    "v1.eyJ0ZW5hbnRfaWQiOjcsImN1c3RvbWVyX3JlZiI6IkMtMSIsImV4cGlyZXMiOjIwMDAwMDAwMDB9"
    ".0aliDpAXeIqRuPtsX3FJtXFdy3BXIH4cZ_1a6xwXlMU"
)
# The same claims for tenant 8: a valid payload of its own.
OTHER_PAYLOAD = "eyJ0ZW5hbnRfaWQiOjgsImtleV9pZCI6MywiY3VzdG9tZXJfcmVmIjoiQy0xIiwiZXhwaXJlcyI6MjAwMDAwMDAwMH0"
NOT_VALID = "the session token is not valid"
EXPIRED = "the session has expired: ask the bank's page for a new one"


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def test_a_hash_verifies_its_password_and_no_other() -> None:
    stored = hash_password(PASSWORD)
    assert verify_password(PASSWORD, stored) is True
    assert verify_password(PASSWORD + "!", stored) is False
    assert verify_password("", stored) is False
    assert check_password(PASSWORD, stored) is True
    assert check_password("guess-guess-guess", stored) is False


def test_a_hash_holds_its_scheme_parameters_salt_and_digest() -> None:
    stored = hash_password(PASSWORD)
    scheme, n, r, p, salt, derived = stored.split("$")
    assert (scheme, n, r, p) == ("scrypt", "16384", "8", "5")
    assert len(base64.b64decode(salt, validate=True)) == 16
    assert len(base64.b64decode(derived, validate=True)) == 32
    assert PASSWORD not in stored
    assert hash_password(PASSWORD).split("$")[4] != salt  # a new salt every time


def test_hashes_written_before_this_module_still_verify() -> None:
    assert verify_password(PASSWORD, OLD_HASH) is True
    assert verify_password(PASSWORD.upper(), OLD_HASH) is False


def test_the_parameters_stored_in_a_hash_are_the_ones_checked() -> None:
    salt = bytes(range(16))
    derived = hashlib.scrypt(PASSWORD.encode(), salt=salt, n=1024, r=4, p=1, dklen=32)
    stored = f"scrypt$1024$4$1${_b64(salt)}${_b64(derived)}"
    assert verify_password(PASSWORD, stored) is True
    # The same salt and digest under today's parameters: a different key, so no match.
    assert verify_password(PASSWORD, stored.replace("scrypt$1024$4$1$", "scrypt$16384$8$5$")) is False
    made = hash_password(PASSWORD, n=1024, r=4, p=1)
    assert made.startswith("scrypt$1024$4$1$")
    assert verify_password(PASSWORD, made) is True


@pytest.mark.parametrize(
    "stored",
    [
        "",
        "not a hash",
        OLD_HASH.replace("scrypt$", "bcrypt$"),  # another scheme
        OLD_HASH + "$extra",  # too many parts
        OLD_HASH.replace("$16384$", "$many$"),  # a parameter that is no number
        OLD_HASH.replace("$16384$", "$1000$"),  # not a power of two: scrypt refuses it
        "scrypt$16384$8$5$%%%%$%%%%",  # no base64 at all
    ],
)
def test_a_garbage_hash_matches_nothing(stored: str) -> None:
    assert verify_password(PASSWORD, stored) is False


def test_without_a_user_the_dummy_hash_is_checked_and_never_matches() -> None:
    dummy = dummy_hash()
    assert dummy is dummy_hash()  # made once
    assert dummy.startswith("scrypt$16384$8$5$")  # today's parameters: the same work as a real check
    for guess in ("", PASSWORD, dummy):
        assert verify_password(guess, dummy) is False
        assert check_password(guess, None) is False


def test_a_digest_is_sha256_hex_stable_and_differs_per_secret() -> None:
    assert digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digest("ba_key") == digest("ba_key")
    assert digest("ba_key") != digest("ba_kez")


def test_token_matches_only_the_same_token() -> None:
    assert token_matches("metrics-secret", "metrics-secret") is True
    for sent in ("metrics-secreT", "metrics-secret ", "metrics-secre", ""):
        assert token_matches(sent, "metrics-secret") is False


def test_new_tokens_are_random_url_safe_and_256_bits() -> None:
    first, second = new_token(), new_token()
    assert first != second
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", first)
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", new_csrf_token())


def test_a_token_reads_back_its_claims_until_it_expires() -> None:
    token = issue_token(SECRET, CLAIMS)
    assert token == TOKEN  # the format is stable: tokens handed out stay valid across releases
    assert read_token(SECRET, token, now=CLAIMS.expires - 1) == CLAIMS


def test_a_token_without_its_key_is_refused() -> None:
    with pytest.raises(InvalidToken, match=f"^{NOT_VALID}$"):
        read_token(SECRET, OLD_TOKEN, now=0)  # correctly signed, but it names no API key


def test_a_token_with_another_payload_is_refused() -> None:
    version, _payload, signature = TOKEN.split(".")
    with pytest.raises(InvalidToken, match=f"^{NOT_VALID}$"):
        read_token(SECRET, f"{version}.{OTHER_PAYLOAD}.{signature}", now=0)  # another tenant, the old signature


def test_a_token_with_another_signature_or_version_is_refused() -> None:
    version, payload, signature = TOKEN.split(".")
    changed = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    for token in (f"{version}.{payload}.{changed}", f"v2.{payload}.{signature}", f"{version}.{payload}", ""):
        with pytest.raises(InvalidToken, match=f"^{NOT_VALID}$"):
            read_token(SECRET, token, now=0)


def test_a_token_with_characters_outside_ascii_is_refused_not_crashed() -> None:
    version, payload, signature = TOKEN.split(".")
    for token in (f"{version}.{payload}.{signature[:-1]}é", f"{version}.{payload}é.{signature}", "v1.ü.ß"):
        with pytest.raises(InvalidToken, match=f"^{NOT_VALID}$"):
            read_token(SECRET, token, now=0)


def test_a_token_signed_with_another_secret_is_refused() -> None:
    with pytest.raises(InvalidToken, match=f"^{NOT_VALID}$"):
        read_token("another-secret", TOKEN, now=0)


def test_an_expired_token_is_refused_with_the_reason() -> None:
    with pytest.raises(InvalidToken) as refused:
        read_token(SECRET, TOKEN, now=CLAIMS.expires)
    assert str(refused.value) == EXPIRED


@pytest.mark.parametrize(
    ("sent", "expected", "matches"),
    [
        ("token-1", "token-1", True),
        ("token-1", "token-2", False),  # mismatch
        (None, "token-1", False),  # the form has no token
        ("", "token-1", False),  # an empty token
        ("", "", False),  # nothing expected: nothing matches
        ("token-1", None, False),  # no cookie
        ("token-1", "", False),
    ],
)
def test_csrf_tokens_match_only_the_expected_one(sent: str | None, expected: str | None, matches: bool) -> None:
    assert csrf_matches(sent, expected) is matches
