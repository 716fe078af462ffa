"""The export's masking on the labelled questions (app/eval/pii.py, `traffic pii-eval`): issue 34's
targets on the set the rules were tuned on, and on the blind set at least what was measured when it
was first run (docs/privacy.md): a fall is a regression, a rise moves the bar."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from app.cli import main
from app.eval import pii as labelled
from app.pii.masker import Span

TARGET_RECALL = {"card": 1.0, "iban": 1.0, "email": 1.0, "phone": 1.0, "name": 0.95}
TARGET_OVER_MASKED = 0.02
# The blind set as first measured (docs/privacy.md): every stretch masked; 1 of 12 phone masks and 1
# of 24 name masks on something else; 2 of 50 clean questions changed.
BLIND_RECALL = {"card": 1.0, "iban": 1.0, "email": 1.0, "phone": 1.0, "name": 1.0}
BLIND_PRECISION = {"card": 1.0, "iban": 1.0, "email": 1.0, "phone": 11 / 12, "name": 23 / 24}
BLIND_OVER_MASKED = 2 / 50


@pytest.fixture(scope="module")
def results() -> dict[str, labelled.Tally]:
    maskers = labelled.demo_maskers()
    return {name: labelled.tally(labelled.mask_all(labelled.load(name), maskers)) for name in labelled.SETS}


def test_the_sets_are_as_the_issue_asks() -> None:
    cases = labelled.load("tuned") + labelled.load("blind")
    assert len(cases) >= 200
    assert len({c.id for c in cases}) == len(cases)
    by_locale = {locale: sum(c.locale == locale for c in cases) for locale in ("en", "zh-CN")}
    assert min(by_locale.values()) >= 0.4 * len(cases), by_locale
    assert sum(not c.spans for c in cases) >= len(cases) / 2  # half must come out unchanged
    questions = {c.question for c in labelled.load("tuned")}
    leaked = ["张伟的账单为什么多了", "card no.4111111111111111,why fee", "i am john smith, why is my bill higher"]
    assert set(leaked) <= questions  # issue 34's leaks are in the tuned set


def test_the_tuned_set_meets_the_issue_s_targets(results: dict[str, labelled.Tally]) -> None:
    tuned = results["tuned"]
    for kind, target in TARGET_RECALL.items():
        assert tuned.recall(kind) >= target, (kind, tuned.misses)
    assert tuned.over_masked <= TARGET_OVER_MASKED, tuned.misses


def test_the_blind_set_holds_what_was_measured(results: dict[str, labelled.Tally]) -> None:
    blind = results["blind"]
    for kind, bar in BLIND_RECALL.items():
        assert blind.recall(kind) >= bar, kind
    for kind, bar in BLIND_PRECISION.items():
        assert blind.precision(kind) >= bar - 1e-9, kind
    assert blind.over_masked <= BLIND_OVER_MASKED + 1e-9


def test_a_leak_and_a_wrong_mask_are_counted() -> None:
    """The measure itself: a partly masked name is a leak, a masked amount is over-masking."""
    case = labelled.LabelledQuestion(
        id="x",
        tenant="northbridge",
        locale="en",
        question="I'm Sofia Rossi",
        spans=[labelled.Labelled("Sofia Rossi", "name")],
    )
    clean = labelled.LabelledQuestion(id="y", tenant="northbridge", locale="en", question="paid 12.00", spans=[])
    partly = labelled.Masked(case, [Span(4, 9, "name")], "I'm <name> Rossi")
    wrong = labelled.Masked(clean, [Span(5, 10, "phone")], "paid <phone>")
    t = labelled.tally([partly, wrong])
    assert (t.recall("name"), t.precision("name"), t.precision("phone"), t.over_masked) == (0.0, 1.0, 0.0, 1.0)


def test_the_command_prints_both_sets() -> None:
    result = CliRunner().invoke(main, ["traffic", "pii-eval"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows = [line.split(" | ")[0] for line in result.output.splitlines() if line.startswith("| ")]
    assert rows == ["| set", "| tuned", "| blind"]
    assert "R 14/14 (100%)" in result.output  # the tuned set's phones, all masked
