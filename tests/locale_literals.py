"""Where the service's code still says a locale's words itself (a Chinese character in a string) or
names a locale (a string that is a locale's code), read from the source: docstrings and comments may
quote a customer, code may not; and where a page's template says words of its own instead of its
locale's. tests/unit/test_locale_lexicon.py holds every module and template of app/ to none."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from app import locales

APP = Path(__file__).resolve().parents[1] / "app"
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
# A template's logic, comments, scripts and styles, and its tags but for the attributes people read.
_NOT_TEXT = re.compile(r"\{#.*?#\}|\{%.*?%\}|\{\{.*?\}\}|<!--.*?-->|<(script|style)\b.*?</\1>", re.S)
_TAG = re.compile(r"<[^>]*>")
_READ = re.compile(r'\b(?:aria-label|title|placeholder|alt)="([^"]*)"')
_WORD = re.compile(r"[^\W\d_]{2,}")


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


def template_words(root: Path = APP / "web" / "templates") -> dict[str, list[str]]:
    """Template (relative to `root`) -> the words it says itself: in its text, or in an attribute
    that people read, once its logic and what it shows of its locale's words are taken out."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.html")):
        source = _NOT_TEXT.sub(" ", path.read_text(encoding="utf-8"))
        said = [*_READ.findall(source), _TAG.sub(" ", source)]
        if words := [w for text in said for w in _WORD.findall(text)]:
            found[str(path.relative_to(root))] = words
    return found
