"""The form a plan is decoded under: a JSON schema (SGLang `json_schema`) and the same plans as a GBNF
grammar (llama.cpp), built from what the facts and the question allow (app/domain/plan.py `Allowed`).

Only claims that are true of these facts can be written: the change in its own direction, each
driver in its own, the transactions the question may be about, the facts' payment status, no "pay"
to a customer who has paid in full. The intent's lead comes first and only once (a small model
otherwise repeats it to the token limit), a bill change's cause right after it; the grammar says
every other claim once, too. The plan check still
checks every claim: an engine that does not enforce the schema, or a schema bug, is caught there."""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from app.domain.plan import CLAIM_TYPES, FITS, LEAD, MAX_CLAIMS, WORDINGS, Allowed

_WORDING = {"enum": list(WORDINGS)}


def _claim(kind: str, **fixed: Any) -> dict[str, Any]:
    """One claim's schema: its type and arguments as constants (a list: one of them), the wording free."""
    properties: dict[str, Any] = {"claim": {"const": kind}}
    for name, value in fixed.items():
        properties[name] = {"enum": value} if isinstance(value, list) else {"const": value}
    return {
        "type": "object",
        "properties": {**properties, "wording": _WORDING},
        "required": list(properties),
        "additionalProperties": False,
    }


def _claims(kind: str, allowed: Allowed) -> list[dict[str, Any]]:
    """The schemas of this kind's true claims (none: the kind cannot be said truly here)."""
    paid = allowed.status == "paid"
    if kind == "change":
        return [_claim(kind, direction=allowed.direction)]
    if kind == "driver":
        return [_claim(kind, n=n, direction=d) for n, d in enumerate(allowed.drivers, start=1)]
    if kind == "transaction":
        return [_claim(kind, n=list(allowed.transactions))] if allowed.transactions else []
    if kind == "payment_status":
        return [_claim(kind, status=allowed.status)]
    if kind == "next_step":
        return [_claim(kind, action=["agent"] if paid else ["pay", "agent"])]
    if (kind in ("still_to_pay", "minimum_due") and paid) or (kind == "no_answer" and not allowed.no_answer):
        return []
    return [_claim(kind)]


@functools.lru_cache(maxsize=1024)
def plan_schema(allowed: Allowed) -> dict[str, Any]:
    """The JSON schema of the plans these facts allow. Callers must not modify it."""
    lead_kinds = LEAD[allowed.intent]
    by_kind = {k: _claims(k, allowed) for k in CLAIM_TYPES if k in FITS[allowed.intent]}
    first: list[dict[str, Any]] = [{"anyOf": [c for k in lead_kinds for c in by_kind.get(k, [])]}]
    if allowed.cause_first:
        first.append({"anyOf": by_kind["driver"]})
    # A charge answer may name a second transaction, when the question allows more than one.
    again = {"transaction"} if len(allowed.transactions) > 1 else set()
    rest = [c for k, claims in by_kind.items() if k not in lead_kinds or k in again for c in claims]
    array = {
        "type": "array",
        "prefixItems": first,
        "items": {"anyOf": rest},
        "minItems": len(first),
        "maxItems": MAX_CLAIMS,
    }
    return {
        "type": "object",
        "properties": {"claims": array},
        "required": ["claims"],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=1024)
def plan_grammar(allowed: Allowed) -> str:
    """The plans of `plan_schema` as a GBNF grammar, compact as in the prompt's examples, and stricter
    in one way: after the lead, each claim at most once, in a fixed order (a small model otherwise
    loops on one claim until its token limit; JSON schema has no "each once" that engines enforce).
    llama.cpp's own schema conversion would also let whitespace in between every token."""
    array = plan_schema(allowed)["properties"]["claims"]
    first = [_alternatives(item["anyOf"]) for item in array["prefixItems"]]
    steps = [_object(one) for schema in array["items"]["anyOf"] for one in _each(schema)]
    leads = ' ", " '.join(f"first{i}" for i in range(len(first)))
    optional = "".join(f' (", " c{i})?' for i in range(len(steps)))
    rules = {
        "root": '"{\\"claims\\": [" ' + leads + optional + ' "]}"',
        **{f"first{i}": expr for i, expr in enumerate(first)},
        **{f"c{i}": expr for i, expr in enumerate(steps)},
    }
    return "".join(f"{name} ::= {rule}\n" for name, rule in rules.items())


def _each(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A claim schema with a choice of numbers as one schema per number, in order."""
    n = schema["properties"].get("n", {})
    if "enum" not in n:
        return [schema]
    return [{**schema, "properties": {**schema["properties"], "n": {"const": value}}} for value in n["enum"]]


def _alternatives(schemas: list[dict[str, Any]]) -> str:
    return " | ".join(f"({_object(s)})" for s in schemas) or '"{}"'  # none: nothing can match a claim


def _object(schema: dict[str, Any]) -> str:
    parts: list[str] = []
    for key, prop in schema["properties"].items():
        values = [prop["const"]] if "const" in prop else prop["enum"]
        choice = " | ".join(_literal(_json(v)) for v in values)
        part = ('", " ' if parts else "") + f"{_literal(_json(key) + ': ')} ({choice})"
        parts.append(part if key in schema["required"] else f"({part})?")
    return '"{" ' + " ".join(parts) + ' "}"'


def _json(value: Any) -> str:
    return msgspec.json.encode(value).decode()


def _literal(text: str) -> str:
    """A GBNF string literal of `text`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
