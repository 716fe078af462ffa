"""How a handler gets the answer service: from the app's state, the same way on every route.

Not as a Litestar dependency: Litestar resolves two or more dependencies of one level concurrently,
a task each in an anyio task group, which costs the hot routes ~0.2 ms of CPU per request for what
is a dictionary look-up (app/api/auth.py `shared` reaches the key cache and the engine so too)."""

from __future__ import annotations

from litestar import Request

from app.answers.service import AnswerService


def answer_service(request: Request) -> AnswerService:  # type: ignore[type-arg]
    answers: AnswerService = request.app.state.answers
    return answers
