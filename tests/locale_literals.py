"""Where the service's code still says a locale's words itself (a Chinese character in a string) or
names a locale (a string that is a locale's code), read from the source: docstrings and comments may
quote a customer, code may not. tests/unit/test_locale_lexicon.py holds every module of app/ to none."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app import locales

APP = Path(__file__).resolve().parents[1] / "app"
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def offenders(root: Path = APP) -> dict[str, set[str]]:
    """Module (relative to `root`, app/) -> what it says: "words", "codes" or both."""
    codes = {*locales.locales(), "en-XA"}
    found: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
                continue
            kinds = found.setdefault(str(path.relative_to(root)), set())
            if _CJK.search(node.value):
                kinds.add("words")
            if node.value in codes:
                kinds.add("codes")
    return {module: kinds for module, kinds in found.items() if kinds}
