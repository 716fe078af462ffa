"""The import contract, read from the source: api -> conversations -> answers -> inference | data -> domain, and
beside the service replay -> eval -> reports | pii; a pure domain core, and no import cycles between the
application's modules."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app.settings import PROJECT_ROOT

APP = PROJECT_ROOT / "app"
BENCH = PROJECT_ROOT / "bench"
# Each module belongs to the first tier whose prefix it starts with; a module may import its own
# tier and any lower one. Tiers that share a number are siblings and may not import each other.
TIERS: list[tuple[int, str, tuple[str, ...]]] = [
    (0, "domain", ("app.domain",)),
    (1, "base", ("app.errors", "app.settings", "app.timing", "app.security", "app.locales")),
    (2, "data", ("app.data", "app.demo")),
    (2, "inference", ("app.inference",)),
    (2, "tooling", ("app.reports", "app.pii")),
    (3, "answers", ("app.answers", "app.prompts", "app.prompt_templates", "app.metrics")),
    (4, "conversations", ("app.conversations",)),
    (5, "api", ("app.api",)),
    # The tools beside the service: the eval gates engine profiles; the replay (A/B) uses its gate.
    (6, "eval", ("app.eval",)),
    (7, "replay", ("app.replay",)),
    (8, "entry", ("app.cli", "app.__main__")),
]
# Packages that do I/O (or wrap it): the domain core computes, it never reads or writes.
IO_PACKAGES = {
    "advanced_alchemy",
    "alembic",
    "asyncio",
    "asyncpg",
    "click",
    "httpx",
    "jinja2",
    "litestar",
    "os",
    "pathlib",
    "pgserver",
    "prometheus_client",
    "rich",
    "socket",
    "sqlalchemy",
    "structlog",
    "subprocess",
    "uvicorn",
    "xllamacpp",
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PROJECT_ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path = APP) -> dict[str, Path]:
    """Every module of the application (or of bench/) but the root package's __init__."""
    return {_module_name(path): path for path in root.rglob("*.py") if path != root / "__init__.py"}


def _imports(path: Path, known: dict[str, Path]) -> set[str]:
    """Every module this file imports, at module level or inside a function (TYPE_CHECKING too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}: relative import"
            for alias in node.names:  # `from app.answers import cache` imports the module app.answers.cache
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return found


def _tier(module: str) -> tuple[int, str]:
    for rank, name, prefixes in TIERS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank, name
    raise AssertionError(f"{module} is in no tier: add it to TIERS")


def _graph(root: Path = APP) -> dict[str, set[str]]:
    known = _modules(root)
    return {module: {m for m in _imports(path, known) if m in known} for module, path in known.items()}


def _violations(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, imported in graph.items():
        rank, tier = _tier(module)
        for target in imported:
            target_rank, target_tier = _tier(target)
            if target_rank > rank or (target_rank == rank and target_tier != tier):
                wrong.append(f"{module} ({tier}) imports {target} ({target_tier})")
    return sorted(wrong)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                cycles.append([*path[path.index(target) :], target])
            elif target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return cycles


def test_every_import_goes_down_the_layers() -> None:
    assert _violations(_graph()) == []


def test_the_domain_core_does_no_io() -> None:
    known = _modules()
    wrong = []
    for module, path in known.items():
        if _tier(module)[1] == "domain":
            wrong += [f"{module} imports {m}" for m in _imports(path, known) if m.split(".")[0] in IO_PACKAGES]
    assert wrong == []


def test_there_are_no_import_cycles() -> None:
    assert _cycles(_graph()) == []
    assert _cycles(_graph(BENCH)) == []  # the benchmarks' modules too


def test_bench_never_imports_the_tests() -> None:
    """Tests may use bench/ (its fakes: bench/fakes/); bench/ runs without the test suite."""
    known = {**_modules(APP), **_modules(BENCH)}
    wrong = [
        f"{module} imports {m}"
        for module, path in _modules(BENCH).items()
        for m in _imports(path, known)
        if m == "tests" or m.startswith("tests.")
    ]
    assert wrong == []


def test_the_checks_catch_what_they_are_for() -> None:
    upward = {"app.data.customers": {"app.answers.schemas"}, "app.inference.embedded": {"app.data.history"}}
    assert _violations(upward) == [
        "app.data.customers (data) imports app.answers.schemas (answers)",
        "app.inference.embedded (inference) imports app.data.history (data)",
    ]
    loop = {"app.api.a": {"app.api.b"}, "app.api.b": {"app.api.c"}, "app.api.c": {"app.api.a"}}
    assert _cycles(loop) == [["app.api.a", "app.api.b", "app.api.c", "app.api.a"]]


def test_no_module_is_over_300_lines() -> None:
    """One concern per module: a module that grows past this is doing two things (issue 25)."""
    long = {
        str(path.relative_to(PROJECT_ROOT)): n
        for path in APP.rglob("*.py")
        if (n := len(path.read_text().splitlines())) > 300
    }
    assert long == {}


# A string that starts like a statement, or SQLAlchemy's `text`: SQL, which lives in app/data/ alone.
_SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|DROP|ALTER|LOCK|ANALYZE)\s")


def test_all_sql_lives_in_app_data() -> None:
    found = []
    for module, path in _modules().items():
        if module.startswith("app.data"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.match(node.value):
                found.append(f"{module}:{node.lineno}")
            if isinstance(node, ast.ImportFrom) and node.module == "sqlalchemy":
                found += [f"{module}:{node.lineno} imports text" for alias in node.names if alias.name == "text"]
    assert found == []
