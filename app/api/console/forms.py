"""What the console's forms send: their fields, the asked question, an agent's reply, and each form's
CSRF token (app/security.py), checked before a signed-in agent's form is acted on."""

from __future__ import annotations

from typing import Annotated

import msgspec
from litestar import Request
from litestar.datastructures import FormMultiDict
from litestar.di import NamedDependency
from litestar.exceptions import PermissionDeniedException

from app.answers.schemas import QUESTION_PATTERN, ExplanationRequest, in_words
from app.api.body import form_body
from app.api.console.words import words
from app.data.agents import ConsoleSession
from app.security import csrf_matches

CSRF_FIELD = "csrf_token"


def field(form: FormMultiDict, name: str) -> str:
    """A text field's value; "" when it is missing or a file."""
    value = form.get(name)
    return value if isinstance(value, str) else ""


def question_request(form: FormMultiDict, account_ref: str) -> ExplanationRequest:
    """The asked question, checked like the API's (msgspec.ValidationError otherwise)."""
    # Browsers send a textarea's line breaks as CR LF; the question allows LF only.
    question = field(form, "question").replace("\r\n", "\n")
    locale = field(form, "locale") or None
    try:
        return msgspec.convert({"account_ref": account_ref, "question": question, "locale": locale}, ExplanationRequest)
    except msgspec.ValidationError as exc:  # the agent reads what is wrong, not a regular expression
        raise msgspec.ValidationError(in_words(str(exc))) from None


# An agent's reply in a conversation: the customer's question's rules (not blank, no control
# character but tab and newline), twice as long.
Reply = Annotated[str, msgspec.Meta(min_length=1, max_length=2000, pattern=QUESTION_PATTERN)]


def reply_text(form: FormMultiDict) -> str:
    """The reply's text, checked (msgspec.ValidationError, in words, otherwise)."""
    try:
        return msgspec.convert(field(form, "text").replace("\r\n", "\n"), Reply)
    except msgspec.ValidationError as exc:
        raise msgspec.ValidationError(in_words(str(exc))) from None


def form_csrf_matches(form: FormMultiDict, expected: str | None) -> bool:
    sent = form.get(CSRF_FIELD)
    return csrf_matches(sent if isinstance(sent, str) else None, expected)


async def provide_form(
    request: Request,  # type: ignore[type-arg]
    agent: NamedDependency[ConsoleSession],
) -> FormMultiDict:
    """The posted form, once its CSRF token is the session's."""
    form = await form_body(request)
    if not form_csrf_matches(form, agent.csrf_token):
        raise PermissionDeniedException(words()["errors"]["csrf"])
    return form
