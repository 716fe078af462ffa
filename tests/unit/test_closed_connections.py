"""Connections that die under the service (issue 34: 500s seen with the database's sessions killed
every 0.2 s): the driver's "connection is closed", raised when a pooled connection is found closed,
counts as the database being unavailable (503 with Retry-After), not as a bug (500)."""

from __future__ import annotations

import asyncpg
import pytest

from app.data.database import unavailable
from app.errors import DatabaseUnavailable


@pytest.mark.parametrize("connecting", [True, False])
def test_a_closed_connection_is_the_database_unavailable(connecting: bool) -> None:
    assert isinstance(
        unavailable(asyncpg.InterfaceError("connection is closed"), connecting=connecting), DatabaseUnavailable
    )


def test_another_interface_error_mid_statement_stays_a_bug() -> None:
    misuse = asyncpg.InterfaceError("cannot perform operation: another operation is in progress")
    assert unavailable(misuse, connecting=False) is None
