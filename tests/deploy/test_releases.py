"""Every SGLang flag compose.yaml and the launch profiles use exists in the pinned SGLang release
(the version compose's image names), takes a value exactly when the release says so, and has an
allowed value where the release lists choices; the schedule policy is one the release accepts with
priority scheduling. The same for the gateway's smg flags against `smg launch --help`; and the
dashboard's and alerts' SGLang and smg metric names exist in those releases. The SGLang wheel comes
from PyPI (pip download) into ~/.cache/bill-assistant/ once and is reused."""

from __future__ import annotations

import re
from functools import cache

import pytest

from tests.deploy.deployment import (
    PROFILES,
    alert_queries,
    args_file,
    dashboard_queries,
    gateway_args,
    sglang_workers,
    worker_command,
)
from tests.deploy.releases import Flag, Release, sglang_release, smg_binary, smg_flags, smg_metric_names


def pinned_version() -> str:
    images = {str(w["image"]) for w in sglang_workers().values()}
    assert len(images) == 1, images
    match = re.fullmatch(r"lmsysorg/sglang:v(\d+\.\d+\.\d+(?:\.post\d+)?)(?:-\S+)?", images.pop())
    assert match is not None, "the SGLang image tag names no release"
    return match.group(1)


@cache
def release() -> Release:
    return sglang_release(pinned_version())


def problems(args: list[tuple[str, list[str]]], flags: dict[str, Flag]) -> list[str]:
    found = []
    for option, values in args:
        flag = flags.get(option)
        if flag is None:
            found.append(f"{option}: no such flag")
        elif flag.deprecated:
            found.append(f"{option}: deprecated")
        elif flag.takes_value and not values:
            found.append(f"{option}: needs a value")
        elif not flag.takes_value and values:
            found.append(f"{option}: takes no value, given {values}")
        elif flag.choices is not None and any(v not in flag.choices for v in values):
            found.append(f"{option}: {values} not in {flag.choices}")
    return found


def test_the_release_was_read() -> None:
    flags = release().flags
    assert len(flags) > 200
    assert flags["--schedule-policy"].choices is not None
    assert "fcfs" in flags["--schedule-policy"].choices
    assert flags["--enable-priority-scheduling"].takes_value is False
    assert "fp8" in (flags["--quantization"].choices or ())


@pytest.mark.parametrize("name", ["common", *PROFILES])
def test_every_flag_of_the_launch_files_is_the_release_own(name: str) -> None:
    assert problems(args_file(name), release().flags) == []


def test_the_flags_compose_adds_exist_and_nothing_is_given_twice() -> None:
    shared = {option for option, _ in args_file("common")}
    for name, worker in sglang_workers().items():
        inline = re.findall(r"(?<!\S)(--[a-z0-9-]+)", worker_command(worker))
        assert inline, name
        assert [o for o in inline if o not in release().flags] == [], name
        assert not set(inline) & shared, name
    for profile in PROFILES:
        options = [option for option, _ in [*args_file("common"), *args_file(profile)]]
        assert len(options) == len(set(options)), profile


def test_priority_scheduling_runs_under_a_policy_the_release_accepts() -> None:
    # The release refuses to start with priority scheduling under other policies (lpm among them).
    policies = release().priority_policies
    assert policies, "the release's priority-policy check was not found: read server_args.py again"
    assert dict(args_file("common"))["--schedule-policy"][0] in policies
    assert "lpm" not in policies


def test_sglang_metrics_on_the_dashboard_and_alerts_exist_in_the_release() -> None:
    known = release().metrics
    assert "sglang:token_usage" in known
    for query in [*dashboard_queries(), *alert_queries()]:
        unknown = {m for m in query.metrics if m.startswith("sglang:")} - known
        assert not unknown, f"{query.where}: {unknown}"


smg = pytest.mark.skipif(smg_binary() is None, reason="smg is not installed beside this Python")


@smg
def test_the_gateway_flags_are_smg_own() -> None:
    binary = smg_binary()
    assert binary is not None
    flags = smg_flags(binary)
    assert flags["--policy"].choices is not None
    assert "cache_aware" in flags["--policy"].choices
    assert problems(gateway_args(), flags) == []


@smg
def test_smg_metrics_on_the_dashboard_exist_in_the_gateway() -> None:
    binary = smg_binary()
    assert binary is not None
    known = smg_metric_names(binary)
    assert "smg_http_requests_total" in known
    used = {m for q in [*dashboard_queries(), *alert_queries()] for m in q.metrics if m.startswith("smg_")}
    assert used
    assert used <= known, used - known
