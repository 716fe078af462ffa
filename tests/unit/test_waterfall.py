"""The latency waterfall: recorded stages only, in pipeline order, on one time axis."""

from __future__ import annotations

from app.api.waterfall import MIN_WIDTH, waterfall


def test_bars_follow_the_pipeline_order_and_sit_where_their_stage_ran() -> None:
    starts = {"validate": 90.0, "db": 10.0, "admission": 0.0, "engine": 20.0, "ttft": 20.0, "audit": 95.0}
    timings = {"validate": 5.0, "db": 10.0, "admission": 0.1, "engine": 70.0, "ttft": 15.0, "total": 100.0}
    bars, axis = waterfall(starts, timings)
    assert axis == 100.0
    # "audit" has a start but no duration (the row is written before it is timed): left out.
    assert [b.stage for b in bars] == ["admission", "db", "engine", "ttft", "validate"]
    engine = bars[2]
    assert (engine.stage, engine.start_ms, engine.duration_ms, engine.left, engine.width) == ("engine", 20, 70, 20, 70)
    assert bars[0].width == MIN_WIDTH  # a tenth of a millisecond is still drawn


def test_a_stage_that_reaches_past_the_total_stretches_the_axis() -> None:
    bars, axis = waterfall({"db": 0.0, "engine": 50.0}, {"db": 10.0, "engine": 150.0, "total": 100.0})
    assert axis == 200.0
    assert [(b.left, b.width) for b in bars] == [(0.0, 5.0), (25.0, 75.0)]
    assert all(b.left + b.width <= 100 for b in bars)


def test_nothing_recorded_draws_nothing() -> None:
    assert waterfall({}, {"total": 0.0}) == ([], 0.0)
    assert waterfall({}, {"total": 3.0}) == ([], 3.0)
