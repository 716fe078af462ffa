"""The roads to Postgres (docs/data.md), read from the source: each pool is made in one place, the
answer cache is read and written by one module, and every statement binds its values by name."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

from app.settings import PROJECT_ROOT

SOURCES = [PROJECT_ROOT / "app", PROJECT_ROOT / "bench"]
CACHE_MODULE = PROJECT_ROOT / "app" / "data" / "answer_cache.py"
# A statement that names the table: `answer_cache` in a comment or docstring is no statement.
_CACHE_SQL = re.compile(r"\b(FROM|INTO|UPDATE|JOIN|TABLE)\s+answer_cache\b", re.IGNORECASE)
# What makes a pool of connections, and the service's modules that may: the three pools of
# docs/data.md (the main SQLAlchemy engine, the answer path's and the admission ledger's asyncpg
# pools). Tools (app/cli, app/replay, app/eval) make an engine with app.data.database.create_engine.
POOL_MAKERS = {"create_async_engine", "create_pool", "DriverPool", "SQLAlchemyAsyncConfig", "PostgresLedger"}
SERVICE_POOLS = Counter(
    {
        "app/data/database.py create_async_engine": 1,  # create_engine: the tools' engine
        "app/api/app.py SQLAlchemyAsyncConfig": 1,  # the service's main pool, in create_app
        "app/answers/service.py DriverPool": 1,  # AnswerService.build, once per app
        "app/data/admission.py create_pool": 1,  # PostgresLedger.open
        "app/api/app.py PostgresLedger": 1,  # in the lifespan, when admission is shared
    }
)


def _strings(path: Path) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def _called(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def cache_statements_outside(sources: list[Path], allowed: Path) -> list[str]:
    return [
        f"{path.relative_to(PROJECT_ROOT)}:{line}"
        for source in sources
        for path in sorted(source.rglob("*.py"))
        if path != allowed
        for line, value in _strings(path)
        if _CACHE_SQL.search(value)
    ]


def pool_makers(source: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    for path in sorted(source.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (name := _called(node)) in POOL_MAKERS:
                found[f"{path.relative_to(PROJECT_ROOT)} {name}"] += 1
    return found


def test_the_answer_cache_is_read_and_written_by_one_module() -> None:
    assert cache_statements_outside(SOURCES, CACHE_MODULE) == []
    assert len(cache_statements_outside([CACHE_MODULE.parent], PROJECT_ROOT)) >= 4  # it does find them


def test_the_service_makes_its_pools_in_the_documented_places_only() -> None:
    """A pool made anywhere else (one per request, per tenant, per call) shows up here."""
    assert pool_makers(PROJECT_ROOT / "app") == SERVICE_POOLS


def test_statements_bind_by_name() -> None:
    """asyncpg's `$n` is made from `:name` by app/data/sql.py `Statement`, never written by hand."""
    positional = re.compile(r"\$\d")
    found = [
        f"{path.relative_to(PROJECT_ROOT)}:{line}"
        for path in sorted((PROJECT_ROOT / "app").rglob("*.py"))
        for line, value in _strings(path)
        if positional.search(value)
    ]
    assert found == []
