"""What the pinned releases themselves define, read from the released packages (never a copied list):
SGLang's launch flags and metric names from its wheel on PyPI, smg's flags and metric names from the
installed `smg` binary. The wheel is fetched once with `pip download` into the user's cache
(~/.cache/bill-assistant/, or $XDG_CACHE_HOME) and reused."""

from __future__ import annotations

import ast
import contextlib
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version"}


@dataclass(frozen=True)
class Flag:
    takes_value: bool
    choices: tuple[str, ...] | None = None  # None: any value
    deprecated: bool = False


@dataclass
class Release:
    version: str
    flags: dict[str, Flag] = field(default_factory=dict)
    metrics: set[str] = field(default_factory=set)  # names as /metrics exposes them
    priority_policies: tuple[str, ...] = ()  # schedule policies allowed with priority scheduling
    sources: dict[str, str] = field(default_factory=dict)


def cache_dir() -> Path:
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "bill-assistant"


def sglang_wheel(version: str) -> Path:
    """The released wheel of this SGLang version, downloaded once."""
    target = cache_dir() / f"sglang-{version}"
    found = sorted(target.glob(f"sglang-{version}-*.whl"))
    if found:
        return found[0]
    target.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(target)]
    done = subprocess.run([*command, f"sglang=={version}"], capture_output=True, text=True, timeout=600)
    found = sorted(target.glob(f"sglang-{version}-*.whl"))
    if done.returncode != 0 or not found:
        raise RuntimeError(f"pip download sglang=={version} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return found[0]


def _literal_strings(node: ast.expr, names: dict[str, tuple[str, ...]]) -> tuple[str, ...] | None:
    """A list/tuple of strings, with module-level names and `[*NAME, "x"]` resolved; None otherwise."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if not isinstance(node, ast.List | ast.Tuple):
        return None
    out: list[str] = []
    for item in node.elts:
        if isinstance(item, ast.Constant) and isinstance(item.value, str):
            out.append(item.value)
        elif isinstance(item, ast.Starred) and (inner := _literal_strings(item.value, names)) is not None:
            out.extend(inner)
        else:
            return None
    return tuple(out)


def _action_name(node: ast.expr | None) -> str | None:
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def parse_server_args(source: str) -> tuple[dict[str, Flag], tuple[str, ...]]:
    """Every `parser.add_argument` of sglang/srt/server_args.py, and the schedule policies its
    validation allows with --enable-priority-scheduling."""
    tree = ast.parse(source)
    names: dict[str, tuple[str, ...]] = {}
    for node in tree.body:  # module-level choice lists, in order (a later one may star an earlier one)
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and (value := _literal_strings(node.value, names)) is not None
        ):
            names[node.targets[0].id] = value
    flags: dict[str, Flag] = {}
    policies: tuple[str, ...] = ()
    for found in ast.walk(tree):
        if isinstance(found, ast.Call) and isinstance(found.func, ast.Attribute) and found.func.attr == "add_argument":
            options = [a.value for a in found.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            keywords = {k.arg: k.value for k in found.keywords if k.arg}
            action = _action_name(keywords.get("action"))
            nargs = keywords.get("nargs")
            takes_value = not (
                action in NO_VALUE_ACTIONS
                or (action or "").endswith("StoreTrueAction")
                or action == "BooleanOptionalAction"
                or (isinstance(nargs, ast.Constant) and nargs.value == 0)
            )
            choices = _literal_strings(keywords["choices"], names) if "choices" in keywords else None
            flag = Flag(takes_value=takes_value, choices=choices, deprecated=action == "DeprecatedAction")
            for option in options:
                if option.startswith("--"):
                    flags[option] = flag
                    if action == "BooleanOptionalAction":
                        flags["--no-" + option[2:]] = flag
        # `if self.enable_priority_scheduling: assert self.schedule_policy in [...]`
        if (
            isinstance(found, ast.If)
            and isinstance(found.test, ast.Attribute)
            and found.test.attr == "enable_priority_scheduling"
        ):
            for check in found.body:
                if isinstance(check, ast.Assert) and isinstance(check.test, ast.Compare):
                    left = check.test.left
                    if isinstance(left, ast.Attribute) and left.attr == "schedule_policy":
                        policies = _literal_strings(check.test.comparators[0], names) or ()
    return flags, policies


METRIC_CLASSES = {"Counter", "Gauge", "Histogram", "Summary"}


def exposed(name: str, kind: str) -> set[str]:
    """The sample names Prometheus sees for a metric (prometheus_client's naming rules)."""
    if kind == "Counter":
        base = name.removesuffix("_total")
        return {base + "_total", base + "_created"}
    if kind == "Histogram":
        return {name + "_bucket", name + "_count", name + "_sum", name + "_created"}
    if kind == "Summary":
        return {name, name + "_count", name + "_sum", name + "_created"}
    return {name}


def parse_metric_names(source: str) -> set[str]:
    """Metrics created as `Counter/Gauge/Histogram/Summary(name="...")` in a source file."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in METRIC_CLASSES:
            for keyword in node.keywords:
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    names |= exposed(str(keyword.value.value), node.func.id)
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                names |= exposed(node.args[0].value, node.func.id)
    return names


def sglang_release(version: str) -> Release:
    with zipfile.ZipFile(sglang_wheel(version)) as wheel:
        sources = {
            name: wheel.read(name).decode()
            for name in wheel.namelist()
            if name == "sglang/srt/server_args.py"
            or (name.startswith("sglang/srt/") and "metrics" in name.rsplit("/", 1)[-1] and name.endswith(".py"))
        }
    flags, policies = parse_server_args(sources["sglang/srt/server_args.py"])
    metrics: set[str] = set()
    for name, text in sources.items():
        if name != "sglang/srt/server_args.py":
            metrics |= parse_metric_names(text)
    return Release(version=version, flags=flags, metrics=metrics, priority_policies=policies, sources=sources)


def smg_binary() -> Path | None:
    """The `smg` installed beside this Python (a dev dependency), if any."""
    path = Path(sys.executable).parent / "smg"
    return path if path.exists() else None


def smg_flags(binary: Path) -> dict[str, Flag]:
    """`smg launch --help`: its options, and the values of those with a `{a,b}` list."""
    text = subprocess.run([str(binary), "launch", "--help"], capture_output=True, text=True, timeout=60).stdout
    flags: dict[str, Flag] = {}
    for line in text.splitlines():
        if not line.startswith("  --"):  # an option's own line (help text wraps further indented)
            continue
        head = line.strip().split("  ")[0]  # the option spelling(s), before the help text
        for part in head.split(", "):
            match = re.match(r"(--[a-z0-9-]+)(?:\s+(\{[^}]*\}|\[?[A-Z][A-Z0-9_:]*))?", part)
            if match is None:
                continue
            meta = match.group(2)
            choices = tuple(meta.strip("{}").split(",")) if meta and meta.startswith("{") else None
            flags.setdefault(match.group(1), Flag(takes_value=meta is not None, choices=choices))
    return flags


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def smg_metric_names(binary: Path) -> set[str]:
    """The metric families a running smg exposes after one routed request (no worker behind it)."""
    port, metrics_port = _free_port(), _free_port()
    command = [str(binary), "launch", "--host", "127.0.0.1", "--port", str(port), "--prometheus-host", "127.0.0.1"]
    command += ["--prometheus-port", str(metrics_port), "--worker-urls", f"http://127.0.0.1:{_free_port()}"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{port}/generate", data=b'{"text": "hi"}', method="POST"
                )
                request.add_header("Content-Type", "application/json")
                with contextlib.suppress(urllib.error.HTTPError):  # no worker: an error answer, counted all the same
                    urllib.request.urlopen(request, timeout=5).close()
                text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read().decode()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        process.terminate()
        process.wait(timeout=10)
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            names |= exposed(name, {"counter": "Gauge", "histogram": "Histogram", "summary": "Summary"}.get(kind, ""))
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{ ]", line, maxsplit=1)[0])
    return names
