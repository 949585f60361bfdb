"""Extraction: what turns an ``add``'s turns into candidate facts. Two extractors share one
shape, ``extract(messages, now) -> Extraction``: the offline rules (``write.offline``) and the
LLM (:class:`LLMExtractor`, ``prompts/extract_facts.md``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from ..llm import LLMClient, render_prompt
from ..models import ExtractedFact, ExtractionOutput, Message

__all__ = ["Extraction", "Extractor", "LLMExtractor"]


@dataclass
class Extraction:
    facts: list[ExtractedFact]
    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notes: list[str] = field(default_factory=list)


class Extractor(Protocol):
    name: str

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction: ...


class LLMExtractor:
    """One LLM call per ``add``: ``prompts/extract_facts.md`` -> :class:`ExtractionOutput`."""

    name = "llm"

    def __init__(self, llm: LLMClient) -> None:
        self.llm = llm

    def extract(self, messages: Sequence[Message], now: datetime) -> Extraction:
        turns = [
            {"n": i, "role": m.role, **({"name": m.name} if m.name else {}), "content": m.content}
            for i, m in enumerate(messages)
        ]
        prompt = render_prompt(
            "extract_facts",
            today=now.date().isoformat(),
            turn_time=now.strftime("%A %Y-%m-%d %H:%M %Z").strip(),
            turns=json.dumps(turns, ensure_ascii=False, indent=1),
        )
        out = self.llm.complete(ExtractionOutput, prompt)
        user_turns = {i for i, m in enumerate(messages) if m.role == "user"}
        facts = []
        for f in out.value.facts:
            src = [t for t in f.source_turns if 0 <= t < len(messages)]
            facts.append(
                ExtractedFact(
                    text=f.text.strip(),
                    category=f.category,
                    concepts=f.concepts,
                    source_turns=src or sorted(user_turns)[:1],
                )
            )
        return Extraction(
            facts=facts,
            llm_calls=out.calls,
            prompt_tokens=out.prompt_tokens,
            completion_tokens=out.completion_tokens,
        )
