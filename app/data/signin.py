"""Console sign-in throttling, per account and per client, kept in Postgres (signin_throttle) so
every replica sees the same counts.

The choice follows OWASP's Authentication Cheat Sheet: throttling with an exponential back-off
rather than a hard lockout, so that a stranger guessing at an agent's password cannot keep the
agent locked out for long.

- Per account (the bank and username as typed, known or not, so unknown usernames behave exactly
  like known ones): after `max_failures` wrong passwords in a row (5), each further try opens a
  back-off window of `backoff_s` (60 s), doubling with every failure (60, 120, 240 s ...) up to
  `backoff_max_s` (15 min), during which sign-ins are refused without checking the password. After
  the window, one try is checked again; the right password signs in and clears the count. A
  stranger therefore holds the account for at most the current window, and must keep guessing
  (at one guess per window) to hold it at all.
- Per client (the request's address as the ASGI scope sees it): at most `client_attempts` failed
  sign-ins (20) per fixed window of `client_window_s` (60 s), across every username; past that
  the client's sign-ins are refused without checking the password until the window ends. A
  success gives its attempt back, so agents behind one address are not throttled by each other's
  successful sign-ins.

Attempts are reserved before the password hash is checked, each in one statement (an upsert whose
condition is evaluated under the row's lock), so of any number of parallel attempts no more than
the limit ever reach the hash: the scrypt CPU a client can spend is bounded by the throttle. A
refused attempt gets the same answer as a wrong password."""

from __future__ import annotations

import hashlib

import msgspec
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection


class SigninLimits(msgspec.Struct, frozen=True, kw_only=True):
    """The throttle's numbers (Settings' SIGNIN_* variables); the defaults are Settings' defaults."""

    max_failures: int = 5
    backoff_s: float = 60.0
    backoff_max_s: float = 900.0
    client_attempts: int = 20
    client_window_s: float = 60.0


def account_key(tenant_slug: str, username: str) -> str:
    """The account's row key: a digest, so any typed name fits and none is stored in clear."""
    typed = f"{tenant_slug.strip()}\n{username.strip()}".encode()
    return "account:" + hashlib.sha256(typed).hexdigest()[:40]


def client_key(address: str) -> str:
    return "client:" + address[:80]


# One try for the account, or none (no row) while its back-off window lasts. From the limit on,
# each try opens the next window: backoff_s * 2^(failures - max_failures), capped.
_RESERVE_ACCOUNT = text("""
INSERT INTO signin_throttle AS t (key, failures, until, updated_at)
VALUES (:key, 1, CASE WHEN 1 >= :max_failures THEN now() + make_interval(secs => :backoff_s) END, now())
ON CONFLICT (key) DO UPDATE SET
    failures = t.failures + 1,
    until = CASE WHEN t.failures + 1 >= :max_failures
        THEN now() + make_interval(secs => least(
            :backoff_s * power(2, least(t.failures + 1 - :max_failures, 30)), :backoff_max_s))
        ELSE t.until END,
    updated_at = now()
WHERE t.until IS NULL OR t.until <= now()
RETURNING t.failures
""")

# One attempt in the client's fixed window, or none (no row) once the window's are spent.
_RESERVE_CLIENT = text("""
INSERT INTO signin_throttle AS t (key, failures, until, updated_at)
VALUES (:key, 1, now() + make_interval(secs => :window_s), now())
ON CONFLICT (key) DO UPDATE SET
    failures = CASE WHEN coalesce(t.until <= now(), true) THEN 1 ELSE t.failures + 1 END,
    until = CASE WHEN coalesce(t.until <= now(), true) THEN now() + make_interval(secs => :window_s) ELSE t.until END,
    updated_at = now()
WHERE coalesce(t.until <= now(), true) OR t.failures < :attempts
RETURNING t.failures
""")

_GIVE_BACK = text("UPDATE signin_throttle SET failures = greatest(failures - 1, 0) WHERE key = :key")
_CLEAR = text("DELETE FROM signin_throttle WHERE key = :key")
# Rows nobody has tried for a day, whose windows are over, are forgotten (at each success).
_PRUNE = text("""
DELETE FROM signin_throttle
WHERE updated_at < now() - interval '1 day' AND coalesce(until < now(), true)
""")


async def reserve(conn: AsyncConnection, limits: SigninLimits, account: str, client: str | None) -> bool:
    """Count a sign-in attempt before its password is checked: False (and nothing to check) while the
    client (None: no client, e.g. the command line) or the account is throttled. Run each statement
    in autocommit, so that no lock is held while the hash is computed."""
    if client is not None:
        allowed = await conn.execute(
            _RESERVE_CLIENT,
            {"key": client, "window_s": limits.client_window_s, "attempts": limits.client_attempts},
        )
        if allowed.first() is None:
            return False
    allowed = await conn.execute(
        _RESERVE_ACCOUNT,
        {
            "key": account,
            "max_failures": limits.max_failures,
            "backoff_s": limits.backoff_s,
            "backoff_max_s": limits.backoff_max_s,
        },
    )
    return allowed.first() is not None


async def succeeded(conn: AsyncConnection, account: str, client: str | None) -> None:
    """A right password: the account's count starts again and the client gets its attempt back."""
    await conn.execute(_CLEAR, {"key": account})
    if client is not None:
        await conn.execute(_GIVE_BACK, {"key": client})
    await conn.execute(_PRUNE)


async def forget(conn: AsyncConnection, account: str) -> None:
    """Clear an account's count and back-off (an administrator resets the agent)."""
    await conn.execute(_CLEAR, {"key": account})
