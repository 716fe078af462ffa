"""Settings: the defaults, and one exact one-line message for each kind of mistake in the environment."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from app.domain.vocabulary import CHAT_TEMPLATES
from app.prompts import CHAT_STOPS, PROMPTS_DIR
from app.settings import PROJECT_ROOT, Settings, SettingsError, group_types
from app.settings.groups import (
    AdmissionSettings,
    BatchSettings,
    CacheSettings,
    ConversationSettings,
    DatabaseSettings,
    DemoSettings,
    EngineSettings,
    LogSettings,
    SecuritySettings,
)

FLAGS = "1, 0, true, false, yes, no, on, off"


def test_defaults() -> None:
    settings = Settings.from_env({})
    assert len(settings.security.session_secret) >= 32  # a random one per process
    assert settings.database == DatabaseSettings(
        url=None, data_dir=PROJECT_ROOT / ".data", pool_size=4, max_overflow=1, admission_pool_size=2, pooler="none"
    )
    assert settings.logs == LogSettings(questions=False, level="INFO")
    assert settings.engine == EngineSettings(
        kind="embedded", model_path=None, parallel=2, threads=os.cpu_count() or 2,
        sglang_url="http://127.0.0.1:30000", sglang_api_key=None, sglang_model="sglang", sglang_profile="",
        sglang_incremental=False, chat_template="chatml", prompt_layout="static", prefix_cache=True,
        speculative="none", timeout_s=20.0, max_tokens=160,
    )  # fmt: skip
    assert settings.admission == AdmissionSettings(
        capacity=2, scope="local", max_in_flight=64, max_loop_lag_ms=0.0, queue_deadline_scale=1.0, drain_timeout_s=30.0
    )
    assert settings.cache == CacheSettings(fill_after_miss=True, fill_interval_s=0.0, fill_slots=1, fill_rate_per_s=2.0)
    assert settings.batch == BatchSettings(worker=True, poll_s=0.5, lease_s=120.0)
    assert settings.conversations == ConversationSettings(
        retention_days=90, messages_per_minute=10, unanswered_max=20, unanswered_chars=8000
    )
    assert dataclasses.replace(settings.security, session_secret="") == SecuritySettings(
        environment="development", forwarded_allow_ips=("127.0.0.1/32", "::1/128"), api_key_cache_ttl=30.0,
        session_secret="", session_ttl_s=900.0, console_session_ttl_s=28800.0, signin_max_failures=5,
        signin_backoff_s=60.0, signin_backoff_max_s=900.0, signin_client_attempts=20, signin_client_window_s=60.0,
        cookie_secure=True, widget_origins=(), metrics_token=None,
    )  # fmt: skip
    assert settings.demo == DemoSettings(page=False)


def test_values_are_parsed() -> None:
    settings = Settings.from_env(
        {"ENGINE": "SGLang", "LOG_LEVEL": "debug", "DB_POOL_SIZE": " 3 ", "API_KEY_CACHE_TTL": "0",
         "ENGINE_TIMEOUT_S": "2.5", "PROMPT_LAYOUT": "dynamic", "CHAT_TEMPLATE": "gemma", "ENGINE_SPECULATIVE": "ngram",
         "COOKIE_SECURE": "Off", "DEMO_PAGE": "yes", "BATCH_WORKER": "",
         "BILL_ASSISTANT_DATA_DIR": "/tmp/bill", "WIDGET_ORIGINS": "https://a.example/, https://b.example"}
    )  # fmt: skip
    assert (settings.engine.kind, settings.logs.level, settings.database.pool_size) == ("sglang", "DEBUG", 3)
    assert (settings.security.api_key_cache_ttl, settings.engine.timeout_s) == (0.0, 2.5)
    assert (settings.engine.prompt_layout, settings.engine.chat_template, settings.engine.speculative) == (
        "dynamic",
        "gemma",
        "ngram",
    )
    assert (settings.security.cookie_secure, settings.demo.page, settings.batch.worker) == (
        False,
        True,
        True,
    )  # empty: default
    assert settings.database.data_dir == Path("/tmp/bill")
    assert settings.security.widget_origins == ("https://a.example", "https://b.example")


@pytest.mark.parametrize(
    ("env", "capacity"),
    [({}, 2), ({"ENGINE_PARALLEL": "4"}, 4), ({"ENGINE": "sglang"}, 32), ({"ENGINE": "off"}, 100_000),
     ({"ENGINE": "off", "ENGINE_CAPACITY": "7"}, 7)],
)  # fmt: skip
def test_engine_capacity_defaults_to_what_the_engine_can_take(env: dict[str, str], capacity: int) -> None:
    assert Settings.from_env(env).admission.capacity == capacity


@pytest.mark.parametrize(
    ("env", "in_flight"),
    [({}, 64), ({"ENGINE": "sglang"}, 64), ({"ENGINE": "off"}, 12), ({"ENGINE": "off", "MAX_IN_FLIGHT": "3"}, 3)],
)
def test_max_in_flight_defaults_to_the_pool_without_an_engine(env: dict[str, str], in_flight: int) -> None:
    assert Settings.from_env(env).admission.max_in_flight == in_flight


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ENGINE", "gpu", "ENGINE must be one of embedded, sglang, off (got 'gpu')"),
        ("CHAT_TEMPLATE", "llama3", "CHAT_TEMPLATE must be one of chatml, gemma (got 'llama3')"),
        ("PROMPT_LAYOUT", "Dynamic-first", "PROMPT_LAYOUT must be one of static, dynamic (got 'Dynamic-first')"),
        ("ENGINE_SPECULATIVE", "eagle", "ENGINE_SPECULATIVE must be one of none, ngram (got 'eagle')"),
        ("ADMISSION", "redis", "ADMISSION must be one of local, shared (got 'redis')"),
        ("DATABASE_POOLER", "session", "DATABASE_POOLER must be one of none, transaction (got 'session')"),
        ("LOG_LEVEL", "loud",
         "LOG_LEVEL must be one of CRITICAL, FATAL, ERROR, WARN, WARNING, INFO, DEBUG, NOTSET (got 'loud')"),
    ],
)  # fmt: skip
def test_a_word_outside_the_choices_is_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({name: value})
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("ENGINE_TIMEOUT_S", "fast", "ENGINE_TIMEOUT_S must be a number > 0 (got 'fast')"),
        ("ENGINE_TIMEOUT_S", "0", "ENGINE_TIMEOUT_S must be a number > 0 (got '0')"),
        ("SESSION_TTL_S", "-5", "SESSION_TTL_S must be a number > 0 (got '-5')"),
        ("BATCH_POLL_S", "nan", "BATCH_POLL_S must be a number > 0 (got 'nan')"),
        ("DRAIN_TIMEOUT_S", "inf", "DRAIN_TIMEOUT_S must be a number > 0 (got 'inf')"),
        ("API_KEY_CACHE_TTL", "-1", "API_KEY_CACHE_TTL must be a number >= 0 (got '-1')"),
        ("DB_POOL_SIZE", "0", "DB_POOL_SIZE must be an integer >= 1 (got '0')"),
        ("DB_POOL_SIZE", "ten", "DB_POOL_SIZE must be an integer >= 1 (got 'ten')"),
        ("DB_MAX_OVERFLOW", "-1", "DB_MAX_OVERFLOW must be an integer >= 0 (got '-1')"),
        ("ADMISSION_POOL_SIZE", "0", "ADMISSION_POOL_SIZE must be an integer >= 1 (got '0')"),
        ("ENGINE_PARALLEL", "2.5", "ENGINE_PARALLEL must be an integer >= 1 (got '2.5')"),
        ("ENGINE_CAPACITY", "0", "ENGINE_CAPACITY must be an integer >= 1 (got '0')"),
        ("ENGINE_THREADS", "0", "ENGINE_THREADS must be an integer >= 1 (got '0')"),
        ("ENGINE_MAX_TOKENS", "1e3", "ENGINE_MAX_TOKENS must be an integer >= 1 (got '1e3')"),
        ("MAX_IN_FLIGHT", "0", "MAX_IN_FLIGHT must be an integer >= 1 (got '0')"),
        ("MAX_LOOP_LAG_MS", "-1", "MAX_LOOP_LAG_MS must be a number >= 0 (got '-1')"),
    ],
)
def test_a_bad_number_is_refused(name: str, value: str, message: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({name: value})
    assert str(raised.value) == message


@pytest.mark.parametrize("name", ["COOKIE_SECURE", "BATCH_WORKER", "LOG_QUESTIONS", "ENGINE_PREFIX_CACHE"])
def test_a_boolean_is_strict(name: str) -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({name: "maybe"})
    assert str(raised.value) == f"{name} must be one of {FLAGS} (got 'maybe')"


def test_the_environment_wins_over_the_defaults() -> None:
    demo = {"DEMO_PAGE": "1", "COOKIE_SECURE": "0"}
    defaulted = Settings.from_env({}, defaults=demo)
    assert (defaulted.demo.page, defaulted.security.cookie_secure) == (True, False)
    explicit = Settings.from_env({"COOKIE_SECURE": "1", "DEMO_PAGE": "off"}, defaults=demo)
    assert (explicit.security.cookie_secure, explicit.demo.page) == (True, False)
    empty = Settings.from_env({"COOKIE_SECURE": ""}, defaults=demo)  # set, but empty: the variable's own default
    assert empty.security.cookie_secure is True
    with pytest.raises(SettingsError) as raised:  # defaults are checked like the environment
        Settings.from_env({}, defaults={"ENGINE": "gpu"})
    assert str(raised.value) == "ENGINE must be one of embedded, sglang, off (got 'gpu')"


def test_the_process_environment_is_read_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGINE", "off")
    monkeypatch.setenv("COOKIE_SECURE", "1")
    settings = Settings.from_env(defaults={"ENGINE": "sglang", "COOKIE_SECURE": "0"})
    assert (settings.engine.kind, settings.security.cookie_secure) == ("off", True)
    monkeypatch.setenv("DB_POOL_SIZE", "0")
    with pytest.raises(SettingsError) as raised:
        Settings.from_env()
    assert str(raised.value) == "DB_POOL_SIZE must be an integer >= 1 (got '0')"


def test_every_chat_template_the_settings_accept_exists() -> None:
    assert sorted(CHAT_STOPS) == sorted(CHAT_TEMPLATES)
    for name in CHAT_TEMPLATES:
        assert (PROMPTS_DIR / "chat" / f"{name}.j2").is_file()


def test_replicas_sharing_admission_must_share_the_session_secret() -> None:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"ADMISSION": "shared"})
    assert str(raised.value) == (
        "SESSION_SECRET must be set with ADMISSION=shared: every replica must sign customer tokens with one secret"
    )
    assert Settings.from_env({"ADMISSION": "shared", "SESSION_SECRET": "s" * 32}).security.session_secret == "s" * 32
    one, other = Settings.from_env({}), Settings.from_env({})
    assert one.security.session_secret != other.security.session_secret  # one process alone: a random secret of its own


def test_every_setting_names_its_variable_and_default_beside_its_field_and_the_readme_lists_it() -> None:
    readme = (PROJECT_ROOT / "README.md").read_text()
    # Nesting moved fields, never variables: each variable still names exactly one field.
    variables = [f.metadata["env"] for kind in group_types().values() for f in dataclasses.fields(kind)]
    assert len(set(variables)) == len(variables) == 55
    assert [name for name in variables if f"`{name}`" not in readme] == []
    # Read in field order: a default computed from earlier values sees them (no engine: no engine cap).
    assert Settings.from_env({"ENGINE": "off"}).admission.capacity == 100_000
    assert Settings.from_env({"ENGINE": "embedded", "ENGINE_PARALLEL": "3"}).admission.capacity == 3
