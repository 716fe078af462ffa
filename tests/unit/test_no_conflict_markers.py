"""No tracked file carries merge-conflict markers (a merge left half done reads as content).

Every file git tracks is read, whatever its name (scripts/dev, Dockerfiles and lock files too); a
file with a NUL byte is binary and skipped. `<<<<<<< ` and `>>>>>>> ` at a line start are markers
anywhere; `|||||||` and a bare `=======` only between them, since `=======` also underlines
Markdown and reStructuredText headings."""

from __future__ import annotations

import subprocess
from pathlib import Path

from app.settings import PROJECT_ROOT

OPEN, BASE, SPLIT, CLOSE = "<" * 7 + " ", "|" * 7, "=" * 7, ">" * 7 + " "  # not spelled out: this file is scanned too


def conflict_markers(root: Path) -> list[str]:
    """`path:line` of each conflict-marker line in the files git tracks under `root`."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True).stdout
    found: list[str] = []
    for name in filter(None, listed.decode().split("\0")):
        path = root / name
        if not path.is_file():  # deleted in the work tree, or a submodule
            continue
        data = path.read_bytes()
        if b"\0" in data or (OPEN.encode() not in data and CLOSE.encode() not in data):
            continue
        inside = False
        for number, line in enumerate(data.decode(errors="replace").splitlines(), 1):
            if line.startswith(OPEN):
                inside = True
            elif line.startswith(CLOSE):
                inside = False
            elif not (inside and (line.startswith(BASE) or line.rstrip() == SPLIT)):
                continue
            found.append(f"{name}:{number}")
    return found


def test_no_tracked_file_has_conflict_markers() -> None:
    found = conflict_markers(PROJECT_ROOT)
    assert not found, "conflict markers at " + ", ".join(found)


def test_every_marker_of_a_conflict_is_found_and_a_heading_underline_is_not(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    conflict = ["ok", OPEN + "HEAD", "mine", BASE + " base", "old", SPLIT, "theirs", CLOSE + "branch", "after", SPLIT]
    (tmp_path / "merged.py").write_text("\n".join(conflict) + "\n")
    (tmp_path / "README.md").write_text("Title\n" + SPLIT + "\n\nText " + OPEN + "not at a line start\n")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\0\n" + OPEN.encode() + b"\n")
    (tmp_path / "untracked.txt").write_text(OPEN + "HEAD\n")
    subprocess.run(["git", "add", "merged.py", "README.md", "image.png"], cwd=tmp_path, check=True)
    assert conflict_markers(tmp_path) == ["merged.py:2", "merged.py:4", "merged.py:6", "merged.py:8"]
