"""`tenants`: the banks, their API keys, admission limits and assistant policy."""

from __future__ import annotations

from typing import Any

import click
import msgspec
from sqlalchemy.ext.asyncio import AsyncConnection

from app.cli.common import in_transaction, known_tenant
from app.data.tenants import KeyInfo, create_tenant, issue_api_key, list_keys, revoke_key, set_limits, set_policy
from app.domain.policy import TenantPolicy
from app.errors import AlreadyExists


@click.group()
def tenants() -> None:
    """Manage tenants (banks) and their API keys."""


@tenants.command("create")
@click.argument("slug")
@click.option("--name", required=True, help="The bank's display name.")
@click.option(
    "--priority-class",
    type=click.Choice(["interactive", "standard", "batch"]),
    default="standard",
    show_default=True,
)
def tenants_create(slug: str, name: str, priority_class: str) -> None:
    """Create a tenant and print its new API key (shown once, on the last line)."""

    async def work(conn: AsyncConnection) -> str:
        return await issue_api_key(conn, await create_tenant(conn, slug, name, priority_class), "initial")

    try:
        key = in_transaction(work)
    except AlreadyExists as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"created tenant {slug} ({priority_class}); its API key, shown only now:")
    click.echo(key)


@tenants.command("set")
@click.argument("slug")
@click.option("--priority-class", type=click.Choice(["interactive", "standard", "batch"]))
@click.option("--weight", type=click.IntRange(min=1), help="Share of the engine within a priority level.")
@click.option("--max-concurrency", type=click.IntRange(min=1), help="Requests in the engine at once.")
@click.option("--rate-limit", type=click.FloatRange(min=0.01), help="Sustained requests per second.")
def tenants_set(
    slug: str, priority_class: str | None, weight: int | None, max_concurrency: int | None, rate_limit: float | None
) -> None:
    """Show or change a tenant's priority class and admission limits (live within API_KEY_CACHE_TTL)."""
    changes = {
        "priority_class": priority_class,
        "weight": weight,
        "max_concurrency": max_concurrency,
        "rate_limit_per_s": rate_limit,
    }

    async def work(conn: AsyncConnection) -> dict[str, Any]:
        return await set_limits(conn, slug, {k: v for k, v in changes.items() if v is not None})

    try:
        limits = in_transaction(work)
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(msgspec.json.encode(limits).decode())


@tenants.command("issue-key")
@click.argument("slug")
@click.option("--label", default="", help="A note to tell keys apart.")
def tenants_issue_key(slug: str, label: str) -> None:
    """Issue another API key for a tenant (printed once, on the last line)."""

    async def work(conn: AsyncConnection) -> str:
        return await issue_api_key(conn, await known_tenant(conn, slug), label)

    click.echo(in_transaction(work))


def _key_line(key: KeyInfo) -> str:
    revoked = f"revoked {key.revoked_at:%Y-%m-%d %H:%M:%S%z}" if key.revoked_at else "live"
    return f"{key.prefix}  {key.label or '-'}  created {key.created_at:%Y-%m-%d %H:%M:%S%z}  {revoked}"


@tenants.command("keys")
@click.argument("slug")
def tenants_keys(slug: str) -> None:
    """List a tenant's API keys: prefix, label, created, revoked (never the keys themselves)."""

    async def work(conn: AsyncConnection) -> list[KeyInfo]:
        return await list_keys(conn, await known_tenant(conn, slug))

    for key in in_transaction(work):
        click.echo(_key_line(key))


@tenants.command("revoke-key")
@click.argument("slug")
@click.argument("prefix")
def tenants_revoke_key(slug: str, prefix: str) -> None:
    """Revoke a tenant's API key by its prefix (its first 10 characters, as `tenants keys` lists them).
    It and the chat tokens it issued are refused within API_KEY_CACHE_TTL."""

    async def work(conn: AsyncConnection) -> KeyInfo:
        return await revoke_key(conn, await known_tenant(conn, slug), prefix)

    try:
        key = in_transaction(work)
    except LookupError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"revoked {slug}'s API key {_key_line(key)}")


@tenants.command("policy")
@click.argument("slug")
@click.option("--brand", help="The name the assistant speaks for (default: the tenant's name).")
@click.option("--tone", help='How it speaks, e.g. "warm, clear and concise".')
@click.option("--forbid", multiple=True, help="Something it must never do; repeat for each (replaces the list).")
@click.option(
    "--answer",
    "answers",
    multiple=True,
    metavar="INTENT:STATE=CLAIM,...",
    help="What a complete answer holds in one state, e.g. payment:unpaid=payment_status,minimum_due,next_step;"
    " repeat for each (replaces the overrides; 'INTENT:STATE=' removes that one).",
)
def tenants_policy(
    slug: str, brand: str | None, tone: str | None, forbid: tuple[str, ...], answers: tuple[str, ...]
) -> None:
    """Show or change what a tenant's assistant says and may not do (part of every prompt), and the
    claims its complete answers hold (the answer policy; default: app/domain/answer_policy.py)."""
    rules: dict[str, list[str]] = {}
    for answer in answers:
        key, eq, kinds = answer.partition("=")
        if not eq:
            raise click.BadParameter(f"{answer!r} is not INTENT:STATE=CLAIM,...", param_hint="--answer")
        if kinds.strip():
            rules[key.strip()] = [k.strip() for k in kinds.split(",") if k.strip()]
    changes: dict[str, Any] = {
        "brand": brand,
        "tone": tone,
        "forbidden": list(forbid) or None,
        "answers": rules if answers else None,
    }

    async def work(conn: AsyncConnection) -> TenantPolicy:
        return await set_policy(conn, slug, {k: v for k, v in changes.items() if v is not None})

    try:
        policy = in_transaction(work)
    except (LookupError, msgspec.ValidationError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(msgspec.json.format(msgspec.json.encode(policy)).decode())
