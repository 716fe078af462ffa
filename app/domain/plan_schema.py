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

from app.domain.claims import CLAIM_TYPES, WORDINGS, Claim, kind_of
from app.domain.plan import FITS, LEAD, Allowed, same_claim
from app.domain.vocabulary import Intent

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
    if kind == "passage":
        return [_claim(kind, n=list(range(1, allowed.passages + 1)))] if allowed.passages else []
    if (kind in ("still_to_pay", "minimum_due") and paid) or (kind == "no_answer" and not allowed.no_answer):
        return []
    return [_claim(kind)]


def _fixed(claim: Claim) -> dict[str, Any]:
    """A required claim's schema: exactly that claim, in either wording."""
    fields = {k: v for k, v in msgspec.structs.asdict(claim).items() if k != "wording"}
    return _claim(kind_of(claim), **fields)


def _others(allowed: Allowed, taken: tuple[Claim, ...]) -> list[dict[str, Any]]:
    """The claims a plan may add after its first ones, one schema each, `taken` excluded: every true
    claim of a kind that fits the question, no "no_answer" (it only ever leads), without an answer
    policy no second lead but a transaction of several."""
    kinds = [k for k in CLAIM_TYPES if k != "no_answer" and any(k in FITS.get(i, ()) for i in _intents(allowed))]
    if allowed.required is None:
        lead = LEAD[allowed.intent]
        kinds = [k for k in kinds if k not in lead or (k == "transaction" and len(allowed.transactions) > 1)]
    return [
        one
        for kind in kinds
        for schema in _claims(kind, allowed)
        for one in _each(schema)
        if not any(same_claim(_claim_of(one), t) for t in taken)
    ]


def _claim_of(schema: dict[str, Any]) -> Claim:
    """The claim a schema with every argument constant stands for (in wording 1)."""
    values = {k: p["const"] for k, p in schema["properties"].items() if "const" in p}
    return CLAIM_TYPES[values.pop("claim")](**values)


def _intents(allowed: Allowed) -> tuple[Intent, ...]:
    return allowed.intents or (allowed.intent,)


def _array(first: list[dict[str, Any]], rest: list[dict[str, Any]], limit: int) -> dict[str, Any]:
    array: dict[str, Any] = {"type": "array", "prefixItems": first, "minItems": max(1, len(first))}
    if rest:
        return {**array, "items": {"anyOf": rest}, "maxItems": limit}
    return {**array, "items": False, "maxItems": len(first)}


@functools.lru_cache(maxsize=1024)
def plan_schema(allowed: Allowed) -> dict[str, Any]:
    """The JSON schema of the plans these facts allow. Callers must not modify it.

    With an answer policy every plan begins with its required claims; what follows is any true claim
    that fits, except those and what the conversation said already. Without one (or for a charge
    question naming no line, where nothing is required) a plan leads with its intent's lead; a plan
    that leads with "no_answer" goes on with a next step at most (the check refuses anything else)."""
    required = allowed.required or ()
    first = [_fixed(c) for c in required]
    rest = _others(allowed, (*required, *allowed.said))
    if required:
        return _plan([_array(first, rest, allowed.limit)])
    branches: list[dict[str, Any]] = []
    lead = [c for k in sorted(LEAD[allowed.intent] - {"no_answer"}) for c in _claims(k, allowed)]
    if lead:
        first = [{"anyOf": lead}]
        if allowed.cause_first:
            first.append({"anyOf": _claims("driver", allowed)})
        branches.append(_array(first, rest, allowed.limit))
    if allowed.no_answer:
        branches.append(_array([_claim("no_answer")], _claims("next_step", allowed), allowed.limit))
    return _plan(branches)


def _plan(branches: list[dict[str, Any]]) -> dict[str, Any]:
    claims = branches[0] if len(branches) == 1 else {"anyOf": branches}
    return {"type": "object", "properties": {"claims": claims}, "required": ["claims"], "additionalProperties": False}


def plan_prefill(allowed: Allowed) -> str:
    """The beginning of every plan these facts allow, written for the engine to continue (prefill, not
    decode): the required claims, known before it runs. Empty when nothing is required."""
    if not allowed.required:
        return ""
    return '{"claims": [' + ", ".join(_written(c) for c in allowed.required)


def _written(claim: Claim) -> str:
    """A claim as the grammar writes one: `{"claim": "driver", "n": 1, "direction": "up"}`."""
    return "{" + ", ".join(f"{_json(k)}: {_json(v)}" for k, v in msgspec.to_builtins(claim).items()) + "}"


@functools.lru_cache(maxsize=1024)
def plan_grammar(allowed: Allowed) -> str:
    """What the engine writes after `plan_prefill`, as a GBNF grammar (llama.cpp; SGLang's `ebnf`):
    the plans of `plan_schema`, compact as in the prompt's examples, and stricter in one way: after
    the first claims, each claim at most once, in a fixed order (a small model otherwise loops on one
    claim until its token limit; JSON schema has no "each once" that engines enforce). llama.cpp's
    own schema conversion would also let whitespace in between every token."""
    schema = plan_schema(allowed)["properties"]["claims"]
    prefilled = bool(allowed.required)
    rules: dict[str, str] = {}
    roots: list[str] = []
    for b, branch in enumerate(schema.get("anyOf", [schema])):
        steps = [_object(one) for one in (branch["items"] or {"anyOf": []})["anyOf"]]
        rules |= {f"b{b}c{i}": expr for i, expr in enumerate(steps)}
        optional = "".join(f' (", " b{b}c{i})?' for i in range(len(steps)))
        if prefilled:  # the required claims are written already: the model adds to them, or ends
            roots.append(f"({optional.strip()} " + '"]}")')
            continue
        first = [_alternatives(item["anyOf"]) if "anyOf" in item else _object(item) for item in branch["prefixItems"]]
        rules |= {f"b{b}first{i}": expr for i, expr in enumerate(first)}
        leads = ' ", " '.join(f"b{b}first{i}" for i in range(len(first)))
        roots.append('("{\\"claims\\": [" ' + leads + optional + ' "]}")')
    return "".join(f"{name} ::= {rule}\n" for name, rule in {"root": " | ".join(roots), **rules}.items())


def _each(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """A claim schema with a choice of arguments (numbers, actions) as one schema per choice, in order."""
    for name, prop in schema["properties"].items():
        if name != "wording" and "enum" in prop:
            return [
                one
                for value in prop["enum"]
                for one in _each({**schema, "properties": {**schema["properties"], name: {"const": value}}})
            ]
    return [schema]


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
