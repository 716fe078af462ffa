"""Errors that cross layers: raised below the API, turned into statuses and messages above it.

Each carries a message a customer, an operator or a caller can act on. Errors that stay inside one
layer live next to the code that raises them."""

from __future__ import annotations


class NotFound(LookupError):
    """The tenant has no such customer, account, statement or job (another tenant's looks the same)."""


class Shed(Exception):
    """The request was refused; status 429 (this tenant's rate) or 503 (overload, shutdown)."""

    def __init__(self, status: int, reason: str, retry_after_s: float, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.retry_after_s = status, reason, retry_after_s


class EngineError(RuntimeError):
    """The engine failed the request (unreachable, refused it, or errored mid-stream)."""


class ImportRejected(ValueError):
    """An import file is wrong; the message names the field (as a JSON path) and nothing was written."""


class AlreadyExists(ValueError):
    """A tenant or an agent by that name exists already."""


class InvalidToken(ValueError):
    """A customer session token that this service did not sign, or that has expired."""


class IdempotencyMismatch(ValueError):
    """An Idempotency-Key used again with a different request body; status 422."""


class DatabaseUnavailable(RuntimeError):
    """The database cannot be reached (refused, closed, restarting, out of connections, too slow to
    connect); status 503 with Retry-After. A failed statement on a live connection is not this."""

    retry_after_s = 5


class UnreadableData(ValueError):
    """One account's stored rows cannot be read (a date like 'infinity', written before the importer
    refused it); status 422 for that account only."""
