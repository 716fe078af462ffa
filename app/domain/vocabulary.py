"""The service's words, each defined once; every other module imports them from here.

Each is a `Literal` (what the type checker and msgspec check) with its values as a tuple (what
settings, the CLI and the database's CHECK constraints check)."""

from __future__ import annotations

from typing import Annotated, Literal, get_args

import msgspec

# A customer's or an account's ref: no control character at all (Postgres cannot even hold NUL in
# text). In the OpenAPI document too, so ECMA-262 as well as Python's re: not \A or \Z, which ECMA
# lacks; and `$(?!\n)`, since Python's `$` alone also matches before a final newline.
REF_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$(?!\n)"
Ref = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=REF_PATTERN)]
# A row's id as Postgres's bigint holds it: a larger number from outside is refused, not a 500.
RowId = Annotated[int, msgspec.Meta(ge=1, le=2**63 - 1)]

# The customer's language: a folder prompts/locales/<locale>/ says everything in it, and registers
# it (app/locales.py); a request's locale is checked against those folders, not here.
LOCALE_PATTERN = r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$"
Locale = Annotated[str, msgspec.Meta(max_length=8, pattern=LOCALE_PATTERN)]
# Who waits for an answer (app/domain/priority.py orders them).
Channel = Literal["widget", "console", "api", "batch"]
# A tenant's class caps the priority its channels may reach.
PriorityClass = Literal["interactive", "standard", "batch"]
# What a question is about, decided without a model (app/domain/intents.py); "policy": how the bank
# works, answered from its own help content (app/domain/knowledge.py).
Intent = Literal["bill_change", "charge", "fees_interest", "payment", "policy", "out_of_scope"]
# What a question asks for besides its intent (app/domain/lexicon.py NEEDS): the amount to pay, the
# due date, what arrived, the cause, anything more, the same again.
Need = Literal["amount_due", "due_date", "arrived", "cause", "more", "again"]
# Where a served text came from: the validated model answer, the deterministic one, the answer cache.
Source = Literal["model", "fallback", "cache"]
# Who asked: a caller over HTTP, the batch worker for a job's item, or the service itself filling the
# answer cache (precompute, the fill after a miss). Only requests are traffic to replay.
Origin = Literal["request", "job", "fill"]
TransactionKind = Literal["purchase", "refund", "fee", "interest", "payment", "adjustment"]
# The LLM engine: llama.cpp in-process (CPU), an SGLang server, or none (deterministic answers only).
EngineKind = Literal["embedded", "sglang", "off"]
# The served model family's chat template: prompts/chat/<name>.j2.
ChatTemplate = Literal["chatml", "gemma"]
# "static": instructions first, so the prefix cache serves them; "dynamic" (FACTS first) exists
# only to measure what static buys (bench/ladder.py).
PromptLayout = Literal["static", "dynamic"]
# The embedded engine's speculative decoding: none, or drafts from n-grams already in the context.
Speculative = Literal["none", "ngram"]
# Who counts admissions (rates, caps, engine capacity): this process alone, or every replica
# together in Postgres (app/data/admission.py).
AdmissionScope = Literal["local", "shared"]
# What stands between the service and Postgres: nothing, or a pooler in transaction mode (PgBouncer's
# pool_mode = transaction), which hands a server connection to another client after every transaction.
DatabasePooler = Literal["none", "transaction"]
# Where the service runs: "production" refuses to start without what production needs (app/cli/serve.py).
Environment = Literal["development", "production"]

# A widget conversation: answered by the assistant, waiting for an agent, or with an agent.
ConversationStatus = Literal["bot", "waiting", "agent"]
# Who wrote a conversation's message ("system": the service's notices, such as "an agent has joined").
Role = Literal["customer", "assistant", "agent", "system"]
# Why a conversation waits for an agent: the customer asked for one, the assistant could not answer
# twice in a row, or the need is one only a person can serve (a credit limit, a lost card).
HandoverReason = Literal["requested", "fallbacks", "out_of_scope"]

CHANNELS: tuple[Channel, ...] = get_args(Channel)
PRIORITY_CLASSES: tuple[PriorityClass, ...] = get_args(PriorityClass)
INTENTS: tuple[Intent, ...] = get_args(Intent)
NEEDS: tuple[Need, ...] = get_args(Need)
SOURCES: tuple[Source, ...] = get_args(Source)
ORIGINS: tuple[Origin, ...] = get_args(Origin)
TRANSACTION_KINDS: tuple[TransactionKind, ...] = get_args(TransactionKind)
ENGINE_KINDS: tuple[EngineKind, ...] = get_args(EngineKind)
CHAT_TEMPLATES: tuple[ChatTemplate, ...] = get_args(ChatTemplate)
PROMPT_LAYOUTS: tuple[PromptLayout, ...] = get_args(PromptLayout)
SPECULATIVE: tuple[Speculative, ...] = get_args(Speculative)
ADMISSION_SCOPES: tuple[AdmissionScope, ...] = get_args(AdmissionScope)
DATABASE_POOLERS: tuple[DatabasePooler, ...] = get_args(DatabasePooler)
ENVIRONMENTS: tuple[Environment, ...] = get_args(Environment)
CONVERSATION_STATUSES: tuple[ConversationStatus, ...] = get_args(ConversationStatus)
ROLES: tuple[Role, ...] = get_args(Role)
HANDOVER_REASONS: tuple[HandoverReason, ...] = get_args(HandoverReason)
