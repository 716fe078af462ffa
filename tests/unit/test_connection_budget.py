"""The connections one process may hold (workers × this is a server's), and what a transaction-mode
pooler changes in how each pool connects."""

from __future__ import annotations

from app.data.connecting import driver_options
from app.data.database import ConnectionBudget, connection_budget, engine_options
from app.settings import Settings


def test_the_default_budget_is_small() -> None:
    local = connection_budget(Settings.from_env({}))
    assert local == ConnectionBudget(main=4, overflow=1, answers=4, admission=0)
    assert local.total == 9
    shared = connection_budget(Settings.from_env({"ADMISSION": "shared", "SESSION_SECRET": "s"}))
    assert shared == ConnectionBudget(main=4, overflow=1, answers=4, admission=2)
    assert shared.total == 11


def test_the_budget_follows_the_settings() -> None:
    settings = Settings.from_env(
        {"DB_POOL_SIZE": "7", "DB_MAX_OVERFLOW": "3", "ADMISSION_POOL_SIZE": "5", "ADMISSION": "local"}
    )
    assert connection_budget(settings).total == 7 + 3 + 7
    # serve --workers N makes every worker share admission: each then holds the ledger's pool too.
    assert connection_budget(settings, shared_admission=True).total == 7 + 3 + 7 + 5


def test_engine_options_match_the_budget() -> None:
    settings = Settings.from_env({"DB_POOL_SIZE": "3", "DB_MAX_OVERFLOW": "2"})
    options = engine_options(settings)
    assert (options["pool_size"], options["max_overflow"]) == (3, 2)


def test_no_pooler_keeps_prepared_statements() -> None:
    settings = Settings.from_env({})
    assert driver_options(settings) == {}
    connect_args = engine_options(settings)["connect_args"]
    assert "statement_cache_size" not in connect_args
    assert "prepared_statement_cache_size" not in connect_args


def test_a_transaction_pooler_turns_every_statement_cache_off() -> None:
    settings = Settings.from_env({"DATABASE_POOLER": "transaction"})
    assert driver_options(settings) == {"statement_cache_size": 0}  # the answer path's pool, the ledger
    connect_args = engine_options(settings)["connect_args"]
    assert connect_args["statement_cache_size"] == 0  # asyncpg's own, under SQLAlchemy
    assert connect_args["prepared_statement_cache_size"] == 0  # SQLAlchemy's dialect's
    assert "prepared_statement_name_func" not in connect_args  # unnamed statements only
    assert connect_args["server_settings"] == {"application_name": "bill-assistant"}
