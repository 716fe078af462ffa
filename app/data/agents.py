"""Console agents: sign-in (scrypt password hashes, app/security.py, throttled per account and per
client with an exponential back-off, app/data/signin.py), and sessions kept as digests of their
cookie tokens."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Literal

import msgspec
from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from app.data.models import Agent, AgentSession, Tenant
from app.data.signin import SigninLimits, account_key, client_key, forget, reserve, succeeded
from app.errors import AlreadyExists
from app.security import check_password, digest, hash_password, new_token

MIN_PASSWORD_LENGTH = 12
DEFAULT_LIMITS = SigninLimits()
# How a sign-in attempt ended: signed in, refused by the password check (a wrong password, an unknown
# or disabled agent), or refused unchecked by the throttle.
SigninOutcome = Literal["signed_in", "refused", "throttled"]


class Identity(msgspec.Struct, frozen=True, kw_only=True):
    """A signed-in agent: who, and which bank's customers they may see."""

    agent_id: int
    username: str
    display_name: str
    tenant_id: int
    tenant_slug: str
    tenant_name: str


class ConsoleSession(msgspec.Struct, frozen=True, kw_only=True):
    identity: Identity
    csrf_token: str  # every form of this session carries it


def _checked(username: str, password: str) -> str:
    username = username.strip()
    if not username or len(username) > 64 or any(c.isspace() for c in username):
        raise ValueError("the username must be 1 to 64 characters without spaces")
    if len(password) < MIN_PASSWORD_LENGTH:
        raise ValueError(f"the password must be at least {MIN_PASSWORD_LENGTH} characters long")
    return username


async def create_agent(conn: AsyncConnection, tenant: int, username: str, display_name: str, password: str) -> int:
    username = _checked(username, password)
    exists = select(Agent.id).where(Agent.tenant_id == tenant, Agent.username == username)
    if (await conn.execute(exists)).first() is not None:
        raise AlreadyExists(f"agent {username!r} already exists")
    password_hash = await asyncio.to_thread(hash_password, password)  # the KDF releases the GIL
    result = await conn.execute(
        insert(Agent)
        .values(tenant_id=tenant, username=username, display_name=display_name or username, password_hash=password_hash)
        .returning(Agent.id)
    )
    return result.scalar_one()


async def reset_agent(conn: AsyncConnection, tenant: int, username: str, display_name: str, password: str) -> None:
    """Create the agent, or give it this password and enable it again (the demo's agents)."""
    username = _checked(username, password)
    password_hash = await asyncio.to_thread(hash_password, password)
    statement = pg_insert(Agent).values(
        tenant_id=tenant, username=username, display_name=display_name, password_hash=password_hash
    )
    await conn.execute(
        statement.on_conflict_do_update(
            index_elements=[Agent.tenant_id, Agent.username],
            set_={"password_hash": password_hash, "disabled_at": None},
        )
    )
    tenant_slug = (await conn.execute(select(Tenant.slug).where(Tenant.id == tenant))).scalar_one()
    await forget(conn, account_key(tenant_slug, username))  # and no back-off left from before


async def disable_agent(conn: AsyncConnection, tenant: int, username: str) -> bool:
    """Refuse the agent's sign-ins from now on and end its sessions; False if there is no such agent."""
    agent = (
        await conn.execute(
            update(Agent)
            .where(Agent.tenant_id == tenant, Agent.username == username)
            .values(disabled_at=func.now())
            .returning(Agent.id)
        )
    ).scalar_one_or_none()
    if agent is None:
        return False
    await conn.execute(delete(AgentSession).where(AgentSession.agent_id == agent))
    return True


async def authenticate(
    conn: AsyncConnection,
    tenant_slug: str,
    username: str,
    password: str,
    *,
    client: str | None = None,
    limits: SigninLimits = DEFAULT_LIMITS,
) -> Identity | None:
    """The agent, if the password is right and it is enabled; None otherwise (sign_in says why)."""
    identity, _ = await sign_in(conn, tenant_slug, username, password, client=client, limits=limits)
    return identity


async def sign_in(
    conn: AsyncConnection,
    tenant_slug: str,
    username: str,
    password: str,
    *,
    client: str | None = None,
    limits: SigninLimits = DEFAULT_LIMITS,
) -> tuple[Identity | None, SigninOutcome]:
    """The agent, if the password is right and it is enabled, and how the attempt ended. While the
    account or the client (its address; None: not over HTTP) is throttled (app/data/signin.py), the
    password is not checked. An unknown tenant or username costs the same hash (and is throttled the
    same way) as a known one, so neither response times nor refusals tell which usernames exist."""
    account = account_key(tenant_slug, username)
    client = client_key(client) if client is not None else None
    if not await reserve(conn, limits, account, client):
        return None, "throttled"
    row = (
        await conn.execute(
            select(
                Agent.id.label("agent_id"),
                Agent.username,
                Agent.display_name,
                Agent.password_hash,
                Agent.disabled_at,
                Tenant.id.label("tenant_id"),
                Tenant.slug,
                Tenant.name,
            )
            .join(Tenant, Tenant.id == Agent.tenant_id)
            .where(Tenant.slug == tenant_slug.strip(), Agent.username == username.strip())
        )
    ).first()
    valid = await asyncio.to_thread(check_password, password, row.password_hash if row is not None else None)
    if row is None or not valid or row.disabled_at is not None:
        return None, "refused"  # the reserved attempt stays counted as a failure
    await succeeded(conn, account, client)
    identity = Identity(
        agent_id=row.agent_id,
        username=row.username,
        display_name=row.display_name,
        tenant_id=row.tenant_id,
        tenant_slug=row.slug,
        tenant_name=row.name,
    )
    return identity, "signed_in"


async def start_session(conn: AsyncConnection, agent_id: int, ttl_s: float) -> tuple[str, str]:
    """A new session: (the cookie's token, the forms' CSRF token). Only the token's digest is stored."""
    token, csrf = new_token(), new_token()
    # The agent's expired sessions go as it signs in again: the table holds live sessions only.
    await conn.execute(
        delete(AgentSession).where(AgentSession.agent_id == agent_id, AgentSession.expires_at <= func.now())
    )
    await conn.execute(
        insert(AgentSession).values(
            token_hash=digest(token),
            agent_id=agent_id,
            csrf_token=csrf,
            expires_at=func.now() + timedelta(seconds=ttl_s),  # the database's clock decides expiry
        )
    )
    return token, csrf


_SESSION = text("""
SELECT a.id AS agent_id, a.username, a.display_name,
       t.id AS tenant_id, t.slug AS tenant_slug, t.name AS tenant_name, s.csrf_token
FROM agent_sessions s
JOIN agents a ON a.id = s.agent_id
JOIN tenants t ON t.id = a.tenant_id
WHERE s.token_hash = :token_hash AND s.expires_at > now() AND a.disabled_at IS NULL
""")


async def find_session(conn: AsyncConnection, token: str) -> ConsoleSession | None:
    """The live session this cookie token belongs to; None once it has expired or its agent is disabled."""
    row = (await conn.execute(_SESSION, {"token_hash": digest(token)})).first()
    if row is None:
        return None
    columns = dict(row._mapping)  # by the labels above
    csrf_token = columns.pop("csrf_token")
    return ConsoleSession(identity=Identity(**columns), csrf_token=csrf_token)


async def end_session(conn: AsyncConnection, token: str) -> None:
    await conn.execute(delete(AgentSession).where(AgentSession.token_hash == digest(token)))
