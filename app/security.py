"""The service's secrets, in one place: agents' password hashes, digests of bearer secrets (API keys,
console session tokens), new random tokens, customers' signed session tokens and CSRF tokens.

Passwords use scrypt with OWASP's recommended parameters, stored in each hash so they can be raised
later. It is in the standard library (hashlib, OpenSSL), so there is no native dependency to pin or
audit, as pwdlib with argon2-cffi would add for a comparable memory-hard function.

Pure functions (no database, no web framework): the data and API layers import them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from functools import cache

import msgspec

from app.domain.vocabulary import Ref, RowId
from app.errors import InvalidToken

# OWASP's scrypt setting for 16 MiB of memory (cost 2^14, block size 8, parallelism 5): about
# 0.15 s a hash here. Kept in each hash string, so raising them later leaves old hashes valid.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 5


# Passwords.


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    # OpenSSL refuses past 32 MiB by default; allow twice what these parameters need (128 * r * n).
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=128 * r * n * 2, dklen=32)


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """'scrypt$n$r$p$salt$digest' (base64): everything needed to check it again."""
    salt = secrets.token_bytes(16)
    digest = _scrypt(password, salt, n, r, p)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        actual = _scrypt(password, base64.b64decode(salt), int(n), int(r), int(p))
        return hmac.compare_digest(actual, base64.b64decode(digest))
    except ValueError:  # not a hash this module wrote
        return False


@cache
def dummy_hash() -> str:
    """A hash nobody knows the password of (its password is random and forgotten), made once."""
    return hash_password(secrets.token_urlsafe(16))


def check_password(password: str, stored: str | None) -> bool:
    """Without a user (`stored` is None), check against the dummy hash: the same work either way, so
    response times do not tell which users exist."""
    if stored is None:
        verify_password(password, dummy_hash())
        return False
    return verify_password(password, stored)


# Bearer secrets: API keys and console session tokens are random, so a fast digest is enough, and
# the database keeps only that.


def digest(secret: str) -> str:
    """SHA-256 of a bearer secret, hex: what the database stores and looks up."""
    return hashlib.sha256(secret.encode()).hexdigest()


def new_token() -> str:
    """A random, URL-safe secret (256 bits)."""
    return secrets.token_urlsafe(32)


def token_matches(sent: str, expected: str) -> bool:
    """Whether a bearer secret is the expected one, compared in constant time."""
    return hmac.compare_digest(sent.encode(), expected.encode())


# Customer session tokens (the chat widget): signed, HMAC-SHA256 over the tenant, the issuing API
# key, the customer and the expiry, so reading one needs no database (but for the key's liveness,
# which is cached). A token without a field is not valid.

_VERSION = "v1"


class CustomerClaims(msgspec.Struct, frozen=True, kw_only=True):
    """Checked like any input, though signed: a token signed with a leaked or test secret must not
    reach the database with a NUL or a number past bigint (401, not 500)."""

    tenant_id: RowId
    key_id: RowId  # the API key that asked for it: revoking that key ends its tokens too
    customer_ref: Ref
    expires: int  # Unix seconds


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64url(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def _sign(secret: str, payload: str) -> str:
    return _b64url(hmac.new(secret.encode(), f"{_VERSION}.{payload}".encode(), hashlib.sha256).digest())


def issue_token(secret: str, claims: CustomerClaims) -> str:
    payload = _b64url(msgspec.json.encode(claims))
    return f"{_VERSION}.{payload}.{_sign(secret, payload)}"


def read_token(secret: str, token: str, now: float | None = None) -> CustomerClaims:
    """The claims of a token this service signed and that has not expired; InvalidToken otherwise."""
    version, _, rest = token.partition(".")
    payload, _, signature = rest.partition(".")
    # As bytes: a header may carry any Latin-1 character, and compare_digest refuses non-ASCII str.
    if version != _VERSION or not hmac.compare_digest(signature.encode(), _sign(secret, payload).encode()):
        raise InvalidToken("the session token is not valid")
    try:
        claims = msgspec.json.decode(_unb64url(payload), type=CustomerClaims)
    except (msgspec.DecodeError, ValueError):  # signed by us, but before tokens named their key
        raise InvalidToken("the session token is not valid") from None
    if claims.expires <= (time.time() if now is None else now):
        raise InvalidToken("the session has expired: ask the bank's page for a new one")
    return claims


# CSRF tokens (the console's forms).


def new_csrf_token() -> str:
    return new_token()


def csrf_matches(sent: str | None, expected: str | None) -> bool:
    """Whether a form's token (None: the form has none) is the expected one, compared in constant time."""
    return sent is not None and bool(expected) and hmac.compare_digest(sent.encode(), (expected or "").encode())
