"""The test suite's own house rules, read from its source: a test module never imports another (shared
helpers live in tests/*.py helper modules), the bank is built in one place (tests/conftest.py
make_bank), and the console's sign-in and CSRF token are read in one place (tests/console.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
TEST_MODULES = sorted(TESTS.rglob("test_*.py"))


def test_no_test_module_imports_another() -> None:
    found = []
    for path in TEST_MODULES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.relative_to(TESTS)} imports {n}" for n in names if re.search(r"(^|\.)test_\w+$", n)]
    assert found == []


def test_the_bank_fixture_is_defined_once() -> None:
    defined = [
        p.relative_to(TESTS)
        for p in [*TEST_MODULES, *TESTS.rglob("conftest.py")]
        if re.search(r"^(async )?def bank\(", p.read_text(encoding="utf-8"), re.M)
    ]
    assert [str(p) for p in defined] == ["conftest.py"]


def test_the_console_sign_in_and_its_csrf_token_are_read_in_one_place() -> None:
    readers = [
        str(p.relative_to(TESTS))
        for p in TESTS.rglob("*.py")
        if 'csrf_token" value=' in p.read_text(encoding="utf-8") and p.name != "test_suite_rules.py"
    ]
    assert readers == ["console.py"]
