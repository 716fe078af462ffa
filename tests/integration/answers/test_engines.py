"""The engine contract, run against the fake SGLang server (over HTTP) and the real embedded engine."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from datetime import date
from typing import Any

import httpx
import msgspec
import pytest

from app.domain.claims import MAX_CLAIMS, Plan
from app.domain.facts import compute_facts
from app.domain.plan import PlanCheck
from app.domain.plan_schema import plan_grammar
from app.errors import EngineError
from app.inference.embedded import EmbeddedEngine, default_model_path
from app.inference.engine import Engine, Finished, GenerationRequest, TextDelta
from app.inference.sglang import SGLangEngine
from bench.fakes.sglang_server import RunningFake, Script
from tests.histories import GYM, OCT, SEP, history
from tests.waiting import until

PREFIX = (
    "<|im_start|>system\nYou are the customer-service assistant of Northbridge Bank. You explain credit-card "
    "statements in short, friendly sentences. Use only the facts you are given; never invent amounts or dates. "
    "If the facts do not answer the question, say so and offer a human agent.<|im_end|>\n<|im_start|>user\n"
)
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "minLength": 1, "maxLength": 200}},
    "required": ["answer"],
    "additionalProperties": False,
}


def request(question: str, **kwargs: Any) -> GenerationRequest:
    prompt = f"{PREFIX}{question}<|im_end|>\n<|im_start|>assistant\n"
    return GenerationRequest(request_id=uuid.uuid4().hex, prompt=prompt, **kwargs)


@pytest.fixture(params=["sglang", "embedded"])
async def engine(request: Any, fake_sglang: RunningFake, embedded_engine: EmbeddedEngine) -> AsyncIterator[Engine]:
    if request.param == "embedded":
        yield embedded_engine
        return
    fake_sglang.fake.default = Script(text='{"answer": "Your new balance is 124.99 EUR."}')
    client = SGLangEngine(fake_sglang.url, model="fake/model")
    yield client
    await client.close()


async def run(engine: Engine, req: GenerationRequest) -> tuple[str, Finished]:
    text, finals = "", list[Finished]()
    async for event in engine.generate(req):
        if isinstance(event, TextDelta):
            assert not finals, "text after the final event"
            text += event.text
        else:
            finals.append(event)
    assert len(finals) == 1
    return text, finals[0]


async def test_streams_text_then_one_final_event_with_usage(engine: Engine) -> None:
    text, final = await run(engine, request("Why is my bill higher?", max_tokens=24))
    assert text
    assert final.finish_reason in {"stop", "length"}
    assert final.prompt_tokens > 20
    assert 0 < final.completion_tokens <= 24
    assert final.ttft_ms > 0


async def test_a_shared_prefix_is_served_from_the_cache(engine: Engine) -> None:
    await run(engine, request("What is this charge from City Gym?", max_tokens=4))
    _, final = await run(engine, request("Did my payment arrive?", max_tokens=4))
    assert final.cached_tokens >= final.prompt_tokens // 2, final


async def test_json_schema_output_parses(engine: Engine) -> None:
    text, _ = await run(engine, request("Answer in JSON: why is my bill higher?", max_tokens=120, json_schema=SCHEMA))
    data = json.loads(text)
    assert set(data) == {"answer"}
    assert isinstance(data["answer"], str)


async def test_a_consumer_that_goes_away_aborts_the_request(engine: Engine, fake_sglang: RunningFake) -> None:
    fake_sglang.fake.default = Script(text=" ".join(str(i) for i in range(2000)), token_delay_s=0.005)
    req = request("Count from 1 to 1000, one number per line.", max_tokens=1500)

    async def consume() -> None:
        async for _ in engine.generate(req):
            pass

    task = asyncio.create_task(consume())
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, timeout=5)  # the embedded engine stops at the next token
    if isinstance(engine, SGLangEngine):
        await until("the engine's abort", lambda: req.request_id in fake_sglang.fake.aborted)


async def test_abort_by_request_id_ends_the_stream_as_aborted(engine: Engine, fake_sglang: RunningFake) -> None:
    fake_sglang.fake.default = Script(text=" ".join(str(i) for i in range(2000)), token_delay_s=0.005)
    req = request("Count from 1 to 1000, one number per line.", max_tokens=1500)
    text, final = "", None
    async for event in engine.generate(req):
        if isinstance(event, TextDelta):
            text += event.text
            if len(text) > 10:
                await engine.abort(req.request_id)
        else:
            final = event
    assert final is not None
    assert final.finish_reason == "abort"
    assert final.completion_tokens < 1500


async def test_health(engine: Engine) -> None:
    assert await engine.health() is True


# --- SGLang protocol details, against the fake ------------------------------------------------------


async def test_sglang_request_body_follows_the_native_api(fake_sglang: RunningFake) -> None:
    client = SGLangEngine(fake_sglang.url)
    await run(client, request("hi", max_tokens=8, json_schema=SCHEMA, priority=3, stop=["<|im_end|>"]))
    await client.close()
    body = fake_sglang.fake.requests[-1]
    assert set(body) == {"text", "sampling_params", "stream", "rid", "priority"}
    assert body["stream"] is True
    assert body["priority"] == 30  # the widget level, spread for SGLang (app/domain/priority.py)
    assert isinstance(body["sampling_params"]["json_schema"], str)
    assert json.loads(body["sampling_params"]["json_schema"]) == SCHEMA
    assert body["sampling_params"]["max_new_tokens"] == 8
    assert body["sampling_params"]["stop"] == ["<|im_end|>"]


async def test_sglang_cumulative_text_becomes_deltas_and_meta_info_becomes_usage(fake_sglang: RunningFake) -> None:
    fake_sglang.fake.default = Script(text="Your bill is 12.00 EUR higher.")
    fake_sglang.fake.speculative = True
    client = SGLangEngine(fake_sglang.url)
    deltas = [e.text async for e in client.generate(request("why?")) if isinstance(e, TextDelta)]
    _, final = await run(client, request("why?"))
    await client.close()
    assert len(deltas) > 3
    assert "".join(deltas) == "Your bill is 12.00 EUR higher."
    assert final.queue_ms == pytest.approx(0.5)
    assert (final.spec_accept_rate, final.spec_accept_length) == (0.75, 2.5)


async def test_sglang_errors_become_engine_errors(fake_sglang: RunningFake) -> None:
    client = SGLangEngine(fake_sglang.url)
    fake_sglang.fake.scripts.append(Script(text="one two three four five", error_after=2))
    with pytest.raises(EngineError, match="mid-stream"):
        await run(client, request("why?"))
    fake_sglang.fake.scripts.append(Script(status=503))
    with pytest.raises(EngineError, match="503"):
        await run(client, request("why?"))
    await client.close()
    unreachable = SGLangEngine("http://127.0.0.1:9")
    with pytest.raises(EngineError, match="unreachable"):
        await run(unreachable, request("why?"))
    assert await unreachable.health() is False
    await unreachable.close()


async def test_the_fake_refuses_what_sglang_refuses(fake_sglang: RunningFake) -> None:
    import httpx

    async with httpx.AsyncClient(base_url=fake_sglang.url) as http:
        bad_key = await http.post("/generate", json={"text": "x", "sampling_params": {"max_tokens": 5}})
        schema_object = await http.post("/generate", json={"text": "x", "sampling_params": {"json_schema": SCHEMA}})
    assert bad_key.status_code == 400
    assert "max_tokens" in bad_key.json()["error"]["message"]
    assert schema_object.status_code == 400


async def test_sglang_api_key(fake_sglang: RunningFake) -> None:
    fake_sglang.fake.api_key = "s3cret"
    without = SGLangEngine(fake_sglang.url)
    with pytest.raises(EngineError, match="401"):
        await run(without, request("hi"))
    assert await without.health() is False
    await without.close()
    with_key = SGLangEngine(fake_sglang.url, api_key="s3cret")
    text, _ = await run(with_key, request("hi"))
    assert text
    await with_key.close()


async def test_each_engine_names_its_profile(embedded_engine: EmbeddedEngine, fake_sglang: RunningFake) -> None:
    """The answer cache's key: the model and what its label does not say (engine build, quantization)."""
    from importlib.metadata import version

    build = version("xllamacpp")
    assert embedded_engine.profile == f"llama.cpp:xllamacpp-{build}:SmolLM2-135M-Instruct.Q4_1.gguf"
    plain = SGLangEngine(fake_sglang.url, model="qwen2.5-7b")
    quantized = SGLangEngine(fake_sglang.url, model="qwen2.5-7b", profile="fp8+eagle3:sglang-0.5.4")
    try:
        assert (plain.profile, quantized.profile) == ("sglang:qwen2.5-7b", "sglang:qwen2.5-7b:fp8+eagle3:sglang-0.5.4")
    finally:
        await plain.close()
        await quantized.close()


async def test_sglang_answers_reuse_one_connection(fake_sglang: RunningFake) -> None:
    """Each stream is read to the end of its body, so the client keeps its connection alive: ten
    answers in a row arrive on one TCP connection, not ten."""
    fake_sglang.fake.default = Script(text='{"answer": "Your new balance is {new_balance}."}')
    client = SGLangEngine(fake_sglang.url, model="fake/model")
    try:
        for i in range(10):
            await run(client, GenerationRequest(request_id=f"keep-{i}", prompt="Hello", max_tokens=32))
    finally:
        await client.close()
    assert len(fake_sglang.fake.connections) == 10
    assert len(set(fake_sglang.fake.connections)) == 1


async def test_the_embedded_engine_decodes_under_the_plan_grammar(embedded_engine: EmbeddedEngine) -> None:
    """The compact GBNF form of a plan (llama.cpp's own schema conversion lets a small model write
    whitespace until the token limit): the output is a plan that opens with the intent's lead."""
    facts = compute_facts(history(GYM, [SEP, OCT]), date(2026, 11, 10))  # unpaid
    grammar = plan_grammar(PlanCheck(facts, "payment").allowed())
    text, final = await run(
        embedded_engine, request("Did my payment arrive? Plan the answer.", max_tokens=160, grammar=grammar)
    )
    assert final.finish_reason == "stop", text
    assert text.startswith('{"claims": [{"claim": "payment_status", "status": "unpaid"')
    plan = msgspec.json.decode(text, type=Plan)
    assert 1 <= len(plan.claims) <= MAX_CLAIMS


async def test_the_embedded_servers_port_needs_its_key_and_allows_no_origin(embedded_engine: EmbeddedEngine) -> None:
    """What another program or any web page could send to the loopback port llama.cpp listens on."""
    assert await embedded_engine.tokenize("hello")  # the engine's own client holds the key
    origin = {"Origin": "http://evil.example"}
    async with httpx.AsyncClient(base_url=embedded_engine.address) as stranger:
        keyless = await stranger.post("/tokenize", json={"content": "hello"}, headers=origin)
        wrong = await stranger.post("/completion", json={"prompt": "hi"}, headers={"Authorization": "Bearer guess"})
        preflight = await stranger.options("/completion", headers={**origin, "Access-Control-Request-Method": "POST"})
    assert (keyless.status_code, wrong.status_code) == (401, 401)
    # llama.cpp always sends the header; empty, it matches no origin (a browser refuses the response).
    assert [r.headers.get("access-control-allow-origin") for r in (keyless, preflight)] == ["", ""]


@pytest.mark.parametrize(("log_level", "timings"), [("INFO", 0), ("DEBUG", 1)])
def test_the_embedded_server_logs_its_slot_timings_only_when_asked(
    capfd: pytest.CaptureFixture[str], log_level: str, timings: int
) -> None:
    async def one_answer() -> None:
        engine = EmbeddedEngine(default_model_path(), parallel=1, log_level=log_level)
        request = GenerationRequest(request_id=uuid.uuid4().hex, prompt="Hello", max_tokens=4)
        try:
            assert [e async for e in engine.generate(request) if isinstance(e, Finished)]
        finally:
            await engine.close()

    capfd.readouterr()
    asyncio.run(one_answer())
    err = capfd.readouterr().err
    assert min(err.count("print_timing"), 1) == timings
    if log_level == "INFO":
        assert "security: no API key" not in err
        # Nothing at llama.cpp's info level ("0.00.504 I srv ..."); a warning another engine of this
        # session writes (a keyless request refused) may land here, and is allowed at INFO.
        assert [line for line in err.splitlines() if line.split()[1:2] != ["W"]] == []
