"""mem_pipeline: long-term memory for chat agents.

Offline by default (embedded Qdrant, a local ONNX embedder), explainable recall, history of
every change. Start with :class:`Memory`.
"""

from .aio import AsyncMemory
from .chat import ChatReply, MemoryChat, answer_question, with_memory
from .config import MemoryConfig
from .embed import Embedder, LocalEmbedder, OpenAIEmbedder
from .errors import (
    ConfigError,
    EmbedderError,
    EmbedderMismatchError,
    ExtractionPendingError,
    InvalidInputError,
    LLMError,
    LLMRetryError,
    MemPipelineError,
    NotFoundError,
    ScopeError,
    StoreClosedError,
    StoreError,
    StoreLockedError,
)
from .llm import LLMClient
from .memory import Memory
from .models import AddEvent, AddResult, Category, HistoryEvent, Message, Scope, StoredFact
from .recall import Hit, Recall

__version__ = "0.1.0"

__all__ = [
    "AddEvent",
    "AddResult",
    "AsyncMemory",
    "Category",
    "ChatReply",
    "ConfigError",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
    "ExtractionPendingError",
    "HistoryEvent",
    "Hit",
    "InvalidInputError",
    "LLMClient",
    "LLMError",
    "LLMRetryError",
    "LocalEmbedder",
    "MemPipelineError",
    "Memory",
    "MemoryChat",
    "MemoryConfig",
    "Message",
    "NotFoundError",
    "OpenAIEmbedder",
    "Recall",
    "Scope",
    "ScopeError",
    "StoreClosedError",
    "StoreError",
    "StoreLockedError",
    "StoredFact",
    "__version__",
    "answer_question",
    "with_memory",
]
