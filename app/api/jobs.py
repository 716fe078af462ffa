"""Batch explanations for downstream systems: submit up to 1,000 items, then read progress and results.

    POST /v1/explanations:batch   {"items": [{"account_ref", "question"?, "as_of"?, ...}]}  -> 202 {"job_id"}
    GET  /v1/jobs/{job_id}        progress, and per item an answer or an error with its reason

With an `Idempotency-Key` header a repeated submission returns the job it made the first time; the
same key with other items is refused (422). Jobs
live in Postgres and are answered by the batch worker at batch priority, across restarts.
"""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
from litestar import Controller, Request, get, post
from litestar.di import NamedDependency, Provide
from litestar.exceptions import HTTPException, ValidationException
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_422_UNPROCESSABLE_ENTITY
from sqlalchemy.ext.asyncio import AsyncEngine

from app.answers.batch import item_request
from app.answers.schemas import BatchRequest, JobAccepted
from app.api.auth import provide_principal
from app.api.body import json_body
from app.api.openapi import BATCH_ROUTE, JOB_ROUTE
from app.api.overload import classify
from app.data.database import autocommit, connection
from app.data.jobs import create_job, job_view
from app.data.tenants import Principal
from app.errors import IdempotencyMismatch, NotFound


class JobController(Controller):
    tags = ["batch"]  # noqa: RUF012
    dependencies = {"principal": Provide(provide_principal)}  # noqa: RUF012

    @post(
        "/v1/explanations:batch",
        status_code=202,
        before_request=json_body,
        summary="Submit up to 1,000 explanations as one job",
        **BATCH_ROUTE,
    )
    async def submit(
        self,
        request: Request,  # type: ignore[type-arg]
        data: JSONBody[BatchRequest],
        principal: NamedDependency[Principal],
        db_engine: NamedDependency[AsyncEngine],
    ) -> JobAccepted:
        classify(request.scope, principal.priority_class, "batch")
        key = request.headers.get("idempotency-key")
        if key is not None and not 1 <= len(key) <= 200:
            raise ValidationException("Idempotency-Key must be 1 to 200 characters")
        items = [msgspec.to_builtins(item, builtin_types=()) for item in data.items]
        for index, item in enumerate(items):  # the worker will accept every item: check them now
            try:
                item_request({k: v for k, v in item.items() if v is not None})
            except (msgspec.ValidationError, ValueError) as exc:
                raise ValidationException(f"items[{index}]: {exc}") from None
        payload = [{k: v for k, v in item.items() if v is not None} for item in items]
        async with connection(db_engine, transaction=True) as conn:
            try:
                job_id, _ = await create_job(conn, principal.tenant_id, key, payload)
            except IdempotencyMismatch as exc:
                raise HTTPException(str(exc), status_code=HTTP_422_UNPROCESSABLE_ENTITY) from None
            view = await job_view(conn, principal.tenant_id, job_id)
        assert view is not None
        return JobAccepted(job_id=str(job_id), total=view["total"], status=view["status"])

    @get("/v1/jobs/{job_id:uuid}", summary="A job's progress, and each item's answer or error", **JOB_ROUTE)
    async def read(
        self,
        request: Request,  # type: ignore[type-arg]
        job_id: FromPath[uuid.UUID],
        principal: NamedDependency[Principal],
        db_engine: NamedDependency[AsyncEngine],
    ) -> dict[str, Any]:
        classify(request.scope, principal.priority_class, "batch")
        async with autocommit(db_engine) as conn:
            view = await job_view(conn, principal.tenant_id, job_id)
        if view is None:
            raise NotFound(f"job {job_id} not found")
        return view
