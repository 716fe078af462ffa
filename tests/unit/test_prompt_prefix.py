"""What the static prefix depends on: each tenant's policy and each chat template get their own;
the template version follows the template sources and each locale's words."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from app import locales
from app.domain.facts import compute_facts
from app.domain.policy import TenantPolicy
from app.domain.vocabulary import ChatTemplate
from app.prompts import PROMPT_VERSION, PROMPTS_DIR, render_prompt, template_version
from tests.histories import GYM, OCT, SEP, history

POLICY = TenantPolicy(brand="Northbridge Bank")


def test_tenants_and_chat_templates_get_their_own_prefix() -> None:
    facts = compute_facts(history(GYM, [SEP, OCT]), date(2026, 11, 1))

    def prefix(policy: TenantPolicy, chat: ChatTemplate = "chatml") -> str:
        return render_prompt(
            policy=policy, intent="bill_change", facts=facts, question="?", chat_template=chat
        ).static_prefix

    assert prefix(POLICY) != prefix(TenantPolicy(brand="Jade River Bank"))
    assert prefix(POLICY) != prefix(TenantPolicy(brand="Northbridge Bank", tone="formal"))
    gemma = prefix(POLICY, "gemma")
    assert gemma.startswith("<start_of_turn>user\n")
    assert "<|im_start|>" not in gemma


def test_a_changed_template_changes_the_version(tmp_path: Path) -> None:
    copy = tmp_path / "prompts"
    shutil.copytree(PROMPTS_DIR, copy)
    assert template_version(copy) == PROMPT_VERSION
    target = copy / "answer" / "system.j2"
    target.write_text(target.read_text() + "\nBe brief.\n")
    assert template_version(copy) != PROMPT_VERSION
    shutil.copytree(PROMPTS_DIR, tmp_path / "again")
    (tmp_path / "again" / "chat" / "chatml.j2").rename(tmp_path / "again" / "chat" / "renamed.j2")
    assert template_version(tmp_path / "again") != PROMPT_VERSION


@pytest.mark.parametrize(
    ("file", "before", "after"),
    [
        ("lexicon.json", "账单", "帐单"),  # a word a question is understood by: another intent, another answer
        ("validation.json", "上个月", "上月份"),  # a word a sentence is checked by: another sentence said
        ("locale.json", "元", "圆"),  # how an amount is written
    ],
)
def test_a_locales_changed_words_change_the_version(tmp_path: Path, file: str, before: str, after: str) -> None:
    copy = tmp_path / "locales"
    shutil.copytree(locales.DEFAULT_ROOT, copy)
    locales.use(copy)
    try:
        assert template_version() == PROMPT_VERSION
        target = copy / "zh-CN" / file
        text = target.read_text(encoding="utf-8")
        assert before in text
        target.write_text(text.replace(before, after, 1), encoding="utf-8")
        assert template_version() != PROMPT_VERSION
    finally:
        locales.use(locales.DEFAULT_ROOT)
