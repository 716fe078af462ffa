"""No committed file carries merge-conflict markers (a merge left half done reads as content)."""

from __future__ import annotations

import re
import subprocess

from app.settings import PROJECT_ROOT

MARKER = re.compile(r"^(<{7}|>{7}) ", re.MULTILINE)
TEXT = (".py", ".md", ".j2", ".html", ".js", ".toml", ".yaml", ".yml", ".txt", ".css", ".ini", ".cfg")


def test_no_tracked_file_has_conflict_markers() -> None:
    files = (
        subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    assert len(files) > 100
    texts = [PROJECT_ROOT / name for name in files if name.endswith(TEXT)]
    marked = [p.name for p in texts if p.is_file() and MARKER.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert marked == []


def test_the_pattern_finds_a_marker() -> None:
    assert MARKER.search("ok\n" + "<" * 7 + " HEAD\nmine\n" + "=" * 7 + "\ntheirs\n" + ">" * 7 + " branch\n")
    assert not MARKER.search("a <<<<<<<< b\n")
