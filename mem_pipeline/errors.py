"""The exception tree of mem_pipeline. Catch :class:`MemPipelineError` to catch them all.

::

    MemPipelineError
    ├── ConfigError                 bad or inconsistent configuration
    ├── InvalidInputError           bad arguments from the caller (also a ValueError)
    │   └── ScopeError              missing / malformed tenant or user_id
    ├── NotFoundError               no such fact in this scope (also a KeyError)
    ├── StoreError                  the vector store failed
    │   ├── StoreLockedError        another process holds the embedded store
    │   ├── StoreClosedError        the memory was closed (an AsyncMemory refuses new calls)
    │   └── EmbedderMismatchError   the collection was built by another embedder
    ├── EmbedderError               the embedder failed (model file, backend)
    └── LLMError                    the LLM endpoint failed
        ├── LLMRetryError           retries ran out; carries attempts and last raw output
        └── ExtractionPendingError  extraction failed; the turns were kept as pending

Errors of other libraries are translated where they enter (``raise X(...) from e``); a caller
never needs to catch an exception of qdrant-client, onnxruntime or openai.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigError",
    "EmbedderError",
    "EmbedderMismatchError",
    "ExtractionPendingError",
    "InvalidInputError",
    "LLMError",
    "LLMRetryError",
    "MemPipelineError",
    "NotFoundError",
    "ScopeError",
    "StoreClosedError",
    "StoreError",
    "StoreLockedError",
]


class MemPipelineError(Exception):
    """Base class of every error raised by mem_pipeline."""


class ConfigError(MemPipelineError):
    """The configuration is invalid or inconsistent."""


class InvalidInputError(MemPipelineError, ValueError):
    """An argument is not acceptable (empty text, wrong type, too large, ...)."""


class ScopeError(InvalidInputError):
    """The scope (tenant, user_id, agent_id, run_id) is missing or malformed."""


class NotFoundError(MemPipelineError, KeyError):
    """No fact with this id exists in the caller's scope."""

    def __str__(self) -> str:  # KeyError quotes its message; we do not
        return str(self.args[0]) if self.args else "not found"


class StoreError(MemPipelineError):
    """The vector store failed."""


class StoreLockedError(StoreError):
    """Another process holds the embedded store at this path."""


class StoreClosedError(StoreError):
    """The memory was closed (or is closing): no more calls."""


class EmbedderMismatchError(StoreError):
    """The collection holds vectors of another embedder (id or dimension differ)."""


class EmbedderError(MemPipelineError):
    """The embedder could not load or run."""


class LLMError(MemPipelineError):
    """The LLM endpoint failed or answered unusably."""


class LLMRetryError(LLMError):
    """Retries ran out. ``attempts`` is how many calls were made; ``last_output`` the last raw text."""

    def __init__(self, message: str, *, attempts: int, last_output: str | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last_output = last_output


class ExtractionPendingError(LLMError):
    """Extraction failed (for all of an ``add``'s messages, or for some of its windows); the
    turns are stored, and the messages it could not read were kept durably as pending
    (``pending_id``). ``result`` is the ``AddResult`` of what was stored (the facts of the
    windows that did not fail). ``Memory.retry_pending()`` processes the pending messages later.
    """

    def __init__(self, message: str, *, pending_id: str, result: Any = None) -> None:
        super().__init__(message)
        self.pending_id = pending_id
        self.result = result
