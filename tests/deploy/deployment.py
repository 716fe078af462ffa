"""The deployment files as data: compose.yaml's services, the SGLang launch profiles' flags, the
proxy's upstreams, Prometheus' targets, and the metric names the dashboard and the alerts query."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from app.settings import PROJECT_ROOT

DEPLOY = PROJECT_ROOT / "deploy"
PROFILES = ("latency", "throughput", "int8", "int4")
METRIC = re.compile(r"(?<![\w:])(bill_assistant_[a-z0-9_]+|sglang:[a-z0-9_:]+|smg_[a-z0-9_]+|pgbouncer_[a-z0-9_]+)")
# The pinned pgbouncer-exporter's pool metrics: the SHOW POOLS column each is read from (its collector.go,
# metricMaps["pools"], at this tag). A new image tag means reading them again.
PGBOUNCER_EXPORTER = "prometheuscommunity/pgbouncer-exporter:v0.12.1"
PGBOUNCER_POOL_METRICS = {
    "pgbouncer_pools_client_active_connections": "cl_active",
    "pgbouncer_pools_client_waiting_connections": "cl_waiting",
    "pgbouncer_pools_server_active_connections": "sv_active",
    "pgbouncer_pools_server_idle_connections": "sv_idle",
    "pgbouncer_pools_server_used_connections": "sv_used",
    "pgbouncer_pools_server_login_connections": "sv_login",
    "pgbouncer_pools_client_maxwait_seconds": "maxwait",
}


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((PROJECT_ROOT / "compose.yaml").read_text())
    return data


def services(profile: str) -> dict[str, dict[str, Any]]:
    return {name: s for name, s in compose()["services"].items() if profile in s.get("profiles", [])}


def sglang_workers() -> dict[str, dict[str, Any]]:
    return {n: s for n, s in services("production").items() if str(s.get("image", "")).startswith("lmsysorg/sglang:")}


def app_replicas() -> dict[str, dict[str, Any]]:
    return {
        n: s
        for n, s in services("production").items()
        if s.get("environment", {}).get("ENGINE") == "sglang" and "serve" in s.get("command", [])
    }


def option_values(tokens: list[str]) -> list[tuple[str, list[str]]]:
    """`--flag v1 v2 --other` as [("--flag", ["v1", "v2"]), ("--other", [])]."""
    out: list[tuple[str, list[str]]] = []
    for token in tokens:
        if token.startswith("--"):
            out.append((token, []))
        elif out:
            out[-1][1].append(token)
        else:
            raise ValueError(f"a value before any flag: {token!r}")
    return out


def args_file(name: str) -> list[tuple[str, list[str]]]:
    """A deploy/sglang/<name>.args file: one flag and its values a line, `#` comments."""
    tokens: list[str] = []
    for line in (DEPLOY / "sglang" / f"{name}.args").read_text().splitlines():
        tokens += line.split("#", 1)[0].split()
    return option_values(tokens)


def worker_command(worker: dict[str, Any]) -> str:
    command = worker["command"]
    return " ".join(command) if isinstance(command, list) else str(command)


def gateway_args() -> list[tuple[str, list[str]]]:
    return option_values([str(t) for t in compose()["services"]["gateway"]["command"]])


@dataclass(frozen=True)
class Query:
    where: str  # the panel's or the alert's name
    expr: str

    @property
    def metrics(self) -> set[str]:
        return set(METRIC.findall(self.expr))


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DEPLOY / "grafana" / "dashboards" / "bill-assistant.json").read_text())
    return data


def dashboard_queries() -> list[Query]:
    return [Query(p["title"], t["expr"]) for p in dashboard()["panels"] for t in p["targets"]]


def alert_rules() -> list[dict[str, Any]]:
    data = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yml").read_text())
    return [rule for group in data["groups"] for rule in group["rules"]]


def alert_queries() -> list[Query]:
    return [Query(rule["alert"], rule["expr"]) for rule in alert_rules()]


def scrape_targets() -> dict[str, set[str]]:
    data = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    return {
        job["job_name"]: {target for static in job["static_configs"] for target in static["targets"]}
        for job in data["scrape_configs"]
    }


def nginx_upstream_servers(upstream: str = "bill_assistant") -> set[str]:
    text = (DEPLOY / "nginx" / "nginx.conf").read_text()
    block = re.search(r"upstream\s+" + upstream + r"\s*\{(.*?)\}", text, re.S)
    assert block is not None, f"no upstream {upstream} in nginx.conf"
    return set(re.findall(r"^\s*server\s+(\S+?)[\s;]", block.group(1), re.M))


def nginx_location(path: str) -> str:
    """The body of nginx.conf's `location <path> { ... }`."""
    text = (DEPLOY / "nginx" / "nginx.conf").read_text()
    block = re.search(r"location " + re.escape(path) + r" \{(.*?)\}", text, re.S)
    assert block is not None, f"no location {path} in nginx.conf"
    return block.group(1)


def read(path: Path) -> str:
    return path.read_text()
