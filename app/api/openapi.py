"""The OpenAPI document at /schema, made to say what the service does (checked against the running
service by schemathesis, tests/integration/operations/test_openapi_contract.py):

- every error a route can answer with is documented with the body the error handlers build
  (ErrorBody, app/api/errors.py), not Litestar's default `{status_code, detail, extra}`; 401 with its
  `WWW-Authenticate` challenge, 429 and 503 with `Retry-After`;
- the bearer credentials are security schemes: the bank's API key, the customer's session token,
  the metrics token;
- request bodies are closed (`additionalProperties: false`) where the struct refuses unknown fields;
- a submitted batch links to its job (`links` on the 202), so a client, or schemathesis's stateful
  phase, can follow the job id it is given.

Each route takes one of the `*_ROUTE` dicts below as keyword arguments to its decorator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.spec import (
    Components,
    Link,
    OpenAPIHeader,
    OpenAPIResponse,
    Operation,
    Reference,
    Schema,
    SecurityScheme,
)
from litestar.openapi.spec.enums import OpenAPIType
from litestar.typing import FieldDefinition

from app.api.body import MAX_BODY_BYTES
from app.api.errors import ErrorBody

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator

API_KEY = "apiKey"
CUSTOMER_TOKEN = "customerToken"
METRICS_TOKEN = "metricsToken"

SECURITY_SCHEMES: dict[str, SecurityScheme] = {
    API_KEY: SecurityScheme(
        type="http",
        scheme="bearer",
        description="The bank's API key (`bill-assistant tenants issue-key`): `Authorization: Bearer <key>`.",
    ),
    CUSTOMER_TOKEN: SecurityScheme(
        type="http",
        scheme="bearer",
        description="A customer's chat session token from `POST /v1/sessions`: `Authorization: Bearer <token>`.",
    ),
    METRICS_TOKEN: SecurityScheme(
        type="http",
        scheme="bearer",
        description="METRICS_TOKEN, when it is set (without it /metrics is open): `Authorization: Bearer <token>`.",
    ),
}


def _error(description: str) -> ResponseSpec:
    return ResponseSpec(data_container=ErrorBody, description=description, generate_examples=False)


_BAD_INPUT = {
    400: _error("The request is not valid: a field, a parameter, or a body that is not well-formed JSON"),
    413: _error(f"The request body is larger than {MAX_BODY_BYTES} bytes"),
    415: _error("The body was not sent as Content-Type: application/json"),
}
_UNAUTHORIZED = {401: _error("The credential is missing or not valid")}
_NOT_FOUND = {404: _error("No such object for this bank (another bank's objects are not found either)")}
_RATE_LIMITED = {429: _error("This bank is over its rate; try again after Retry-After seconds")}
# An account whose stored rows cannot be read (that account only; the others still answer).
_UNREADABLE = {422: _error("This account has stored data that cannot be read")}
_UNAVAILABLE = {503: _error("Overloaded, shutting down or the database is unavailable; try again after Retry-After")}


_HEADERS = {
    "401": {
        "WWW-Authenticate": OpenAPIHeader(
            schema=Schema(type=OpenAPIType.STRING), description="The bearer challenge", required=True
        )
    },
    **{
        status: {
            "Retry-After": OpenAPIHeader(
                schema=Schema(type=OpenAPIType.STRING), description="Seconds to wait before trying again"
            )
        }
        for status in ("429", "503")
    },
}


def _is_error_body(response: OpenAPIResponse) -> bool:
    media = (response.content or {}).get("application/json")
    return media is not None and isinstance(media.schema, Reference) and media.schema.ref.endswith("ErrorBody")


@dataclass
class _Operation(Operation):
    """An operation whose 401, 429 and 503 responses document their headers (ResponseSpec cannot)."""

    def __post_init__(self) -> None:
        # Litestar documents its own 400 body on every route with parameters; where the route's
        # 400 is ours it is replaced, and where there is none (a path parameter that does not
        # parse is a 404) it goes.
        default = (self.responses or {}).get("400")
        if isinstance(default, OpenAPIResponse) and not _is_error_body(default):
            del self.responses["400"]  # type: ignore[union-attr]
        for status, response in (self.responses or {}).items():
            if status in _HEADERS and isinstance(response, OpenAPIResponse):
                response.headers = {**(response.headers or {}), **_HEADERS[status]}


@dataclass
class _SubmitOperation(_Operation):
    """POST /v1/explanations:batch, whose 202 links to the job it made."""

    def __post_init__(self) -> None:
        super().__post_init__()
        accepted = (self.responses or {}).get("202")
        if isinstance(accepted, OpenAPIResponse):
            accepted.links = {
                "GetJob": Link(
                    operation_ref="#/paths/~1v1~1jobs~1{job_id}/get",
                    parameters={"job_id": "$response.body#/job_id"},
                    description="The job's progress, and each item's answer or error",
                )
            }


class _ClosedStructs(StructSchemaPlugin):
    """msgspec structs that refuse unknown fields (`forbid_unknown_fields=True`) are documented as
    closed objects: `additionalProperties: false`. (Litestar's own plugin leaves every object open.)"""

    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        info = msgspec.inspect.type_info(field_definition.type_)
        if isinstance(info, msgspec.inspect.StructType) and info.forbid_unknown_fields:
            schema.additional_properties = False
        if isinstance(info, msgspec.inspect.StructType):  # an enum given as a field's extra schema (a locale)
            for field in info.fields:
                enum, prop = _extra_enum(field.type), (schema.properties or {}).get(field.encode_name)
                if enum and isinstance(prop, Schema):
                    for one in prop.one_of or [prop]:
                        if isinstance(one, Schema) and one.type == OpenAPIType.STRING:
                            one.enum = enum
        return schema


def _extra_enum(info: msgspec.inspect.Type) -> list[Any] | None:
    """The values `msgspec.Meta(extra_json_schema={"enum": …})` lists for a field (Litestar ignores it)."""
    if isinstance(info, msgspec.inspect.UnionType):
        return next((enum for one in info.types if (enum := _extra_enum(one))), None)
    extra = getattr(info, "extra_json_schema", None) or {}
    enum = extra.get("enum")
    return list(enum) if enum else None


def _route(
    *responses: dict[int, ResponseSpec], security: str | None = None, operation_class: type[Operation] = _Operation
) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"responses": {k: v for part in responses for k, v in part.items()}}
    kwargs["operation_class"] = operation_class
    if security is not None:
        kwargs["security"] = [{security: []}]
    return kwargs


# Keyword arguments for the route decorators, one dict per kind of route.
EXPLANATION_ROUTE = _route(
    _BAD_INPUT, _UNAUTHORIZED, _NOT_FOUND, _UNREADABLE, _RATE_LIMITED, _UNAVAILABLE, security=API_KEY
)
CHAT_ROUTE = _route(
    _BAD_INPUT, _UNAUTHORIZED, _NOT_FOUND, _UNREADABLE, _RATE_LIMITED, _UNAVAILABLE, security=CUSTOMER_TOKEN
)
CONVERSATION_ROUTE = _route(_BAD_INPUT, _UNAUTHORIZED, _NOT_FOUND, _UNAVAILABLE, security=CUSTOMER_TOKEN)
ACCOUNTS_ROUTE = _route(_UNAUTHORIZED, _UNAVAILABLE, security=CUSTOMER_TOKEN)
SESSION_ROUTE = _route(_BAD_INPUT, _UNAUTHORIZED, _NOT_FOUND, _UNAVAILABLE, security=API_KEY)
BATCH_ROUTE = _route(
    _BAD_INPUT,
    _UNAUTHORIZED,
    _UNAVAILABLE,
    {422: _error("This Idempotency-Key was used before with other items")},
    security=API_KEY,
    operation_class=_SubmitOperation,
)
JOB_ROUTE = _route(_UNAUTHORIZED, _NOT_FOUND, _UNAVAILABLE, security=API_KEY)
METRICS_ROUTE = _route(_UNAUTHORIZED) | {"security": [{METRICS_TOKEN: []}, {}]}  # {}: open without METRICS_TOKEN
READY_ROUTE = _route(
    {
        503: ResponseSpec(
            data_container=dict[str, str],
            description="The database cannot be reached or takes no writes: {status: unavailable,"
            " database: unavailable | read_only, message}",
            generate_examples=False,
        )
    }
)

OPENAPI_PLUGINS = [_ClosedStructs()]


def openapi_config() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="Bill Assistant",
        version="0.1.0",
        path="/schema",
        components=Components(security_schemes=SECURITY_SCHEMES),  # type: ignore[arg-type]
    )
