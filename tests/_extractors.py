"""Extractors for tests: the offline rules, failing on demand like an LLM endpoint."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from mem_pipeline.errors import LLMError
from mem_pipeline.write.offline import OfflineExtractor

__all__ = ["Flaky"]


class Flaky:
    """The offline extractor, failing like an LLM endpoint (with ``message``) while ``fail`` is set."""

    def __init__(self, message: str = "the LLM endpoint timed out") -> None:
        self.inner = OfflineExtractor()
        self.name = self.inner.name
        self.message = message
        self.fail = False

    def extract(self, messages: Any, now: datetime) -> Any:
        if self.fail:
            raise LLMError(self.message)
        return self.inner.extract(messages, now)
