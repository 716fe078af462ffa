"""POST /v1/explanations: structured JSON for downstream systems and integrations."""

from __future__ import annotations

from datetime import date

from litestar import Controller, Request, post
from litestar.di import NamedDependency, Provide
from litestar.params import JSONBody

from app.answers.messages import Ask
from app.answers.schemas import ExplanationRequest, ExplanationResponse
from app.api.auth import provide_principal
from app.api.body import json_body
from app.api.deps import answer_service
from app.api.disconnect import until_disconnect
from app.api.openapi import EXPLANATION_ROUTE
from app.api.overload import classify
from app.api.request_log import request_state, stopwatch
from app.data.tenants import Principal


class ExplanationController(Controller):
    path = "/v1/explanations"
    tags = ["explanations"]  # noqa: RUF012
    dependencies = {"principal": Provide(provide_principal)}  # noqa: RUF012

    @post(
        "",
        status_code=200,
        before_request=json_body,
        summary="Explain a statement: exact totals, drivers, payment status and a text in the customer's language",
        **EXPLANATION_ROUTE,
    )
    async def create(
        self,
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[ExplanationRequest],
        principal: NamedDependency[Principal],
    ) -> ExplanationResponse:
        answers = answer_service(request)
        classify(request.scope, principal.priority_class, data.channel)
        watch = stopwatch(request.scope)
        ask = Ask(principal=principal, request=data, channel=data.channel, today=date.today(), stopwatch=watch)
        answer = await until_disconnect(request, answers.explain(ask))
        extra: dict[str, str] = {"intent": answer.intent, "source": answer.source}
        if answers.settings.logs.questions:
            extra["question"] = data.question
        request_state(request.scope)["log_extra"] = extra
        return answer
