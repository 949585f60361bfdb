"""Wrap a chatbot's answer function so it remembers.

::

    from mem_pipeline import with_memory

    def my_answer_fn(question: str, context: str) -> str:  # context: the memory block
        return "..."

    with with_memory(my_answer_fn, user_id="priya", path="./memory-store") as chat:
        reply = chat("what should I cook tonight?")
        reply.answer, reply.hits, reply.added      # what it said, what it recalled, what it kept

Before ``answer_fn`` runs, the wrapper recalls for the question and hands over the prompt block
(:meth:`Recall.to_prompt <mem_pipeline.recall.Recall.to_prompt>`) as ``context``; after it
answers, the turn (the question as the user's message, the answer as the assistant's) is added
to memory in the same scope. The previous answer, when it was given within :data:`CARRY_WITHIN`,
leads the add as the message the question replies to: "Any particular brand?" / "walkers or
nothing" is read as an answer about the user's statement before it, and "yes please" as taking
up the assistant's offer (the assistant's words are never stored as facts). If extraction
fails, :class:`Memory.add` keeps the turn as pending and raises
:class:`~mem_pipeline.errors.ExtractionPendingError`: the wrapper logs it, remembers the pending
id, and still returns the answer. ``background=True`` adds the turn in a worker
thread, so a slow LLM extraction never delays its answer; the next call (or ``flush()``,
``close()``) waits for it, so every recall sees all earlier turns.

A recall alone strengthens nothing. The hits the answer used (:func:`used_hits`: it repeats
words of the hit that the question did not say) count as used, as a small helpful
:meth:`Memory.feedback <mem_pipeline.memory.Memory.feedback>` (``use_weight``, 0.25 by
default; 0 turns it off): one more use each (reinforcement, bounded) and a nudge to the links
from the question's concepts to theirs. ``chat.last_used`` lists their ids.

:func:`answer_question` is a ready ``answer_fn`` on our OpenAI-compatible :class:`LLMClient`
(prompt: ``prompts/answer.md``): ``with_memory(answer_question, ...)``.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ._inputs import as_datetime
from .config import MemoryConfig
from .errors import ConfigError, ExtractionPendingError, InvalidInputError
from .llm import LLMClient, TextCompletion, render_prompt
from .memory import Memory
from .models import AddResult, utcnow
from .recall import Hit
from .text.lexical import content_words, stem

__all__ = [
    "CARRY_WITHIN",
    "ChatReply",
    "MemoryChat",
    "answer_question",
    "answer_with_llm",
    "default_llm",
    "used_hits",
    "with_memory",
]

log = logging.getLogger(__name__)

#: How soon after an answer the next question is still read as a reply to it.
CARRY_WITHIN = timedelta(hours=1)

#: The user's chatbot: ``answer_fn(question, context) -> answer``.
AnswerFn = Callable[[str, str], str]

StructuredOutput = Literal["auto", "json_schema", "json_object"]

#: What ``context`` says when nothing is remembered (plain-text placeholder for the prompt).
NO_MEMORY = "(nothing remembered yet)"


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]{2,}")


def used_hits(question: str, answer: str, hits: Sequence[Hit]) -> list[Hit]:
    """The hits an answer used: it says a name of the hit (a capitalised word not opening a
    sentence) or two of its content words that the question did not say. Echoing the question
    uses nothing; an answer that ignores the context uses nothing. Pure."""
    said = set(content_words(answer))
    if not said:
        return []
    asked = set(content_words(question))
    out = []
    for h in hits:
        new = set(content_words(h.text)) - asked
        names = {stem(w.lower()) for w in _NAME.findall(h.text)} - asked
        shared = new & said
        if len(shared) >= 2 or shared & names:
            out.append(h)
    return out


class ChatReply(NamedTuple):
    """What one call of a :class:`MemoryChat` did."""

    #: what ``answer_fn`` answered
    answer: str
    #: the recalled hits handed to ``answer_fn`` (rendered as its ``context``)
    hits: list[Hit]
    #: what remembering the turn did; None while it runs in the background (``background=True``)
    #: or when extraction failed and the turn was kept as pending (``MemoryChat.pending_ids``)
    added: AddResult | None


class MemoryChat:
    """A chatbot call with memory: ``chat(question) -> ChatReply(answer, hits, added)``.

    ``limit`` hits at most are recalled and rendered into at most ``max_tokens`` (approximate)
    tokens. The scope (``user_id``, ``tenant``, ``agent_id``, ``run_id``) is the same for the
    recall and the add. ``last_add`` is the latest :class:`AddResult` (also of a background add,
    once done) and ``pending_ids`` lists turns kept as pending. As a context manager (or with
    :meth:`close`) it waits for background adds and closes what it opened: its worker thread,
    and the :class:`Memory` when ``with_memory`` opened it.
    """

    def __init__(
        self,
        answer_fn: AnswerFn,
        memory: Memory,
        *,
        user_id: str,
        tenant: str = "default",
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 5,
        max_tokens: int | None = 800,
        background: bool = False,
        owns_memory: bool = False,
        use_weight: float = 0.25,
    ) -> None:
        if not callable(answer_fn):
            raise TypeError("answer_fn must be a callable answer_fn(question, context) -> str")
        self.answer_fn = answer_fn
        self.memory = memory
        self.scope: dict[str, Any] = {
            "user_id": user_id,
            "tenant": tenant,
            "agent_id": agent_id,
            "run_id": run_id,
        }
        self.limit = limit
        self.max_tokens = max_tokens
        self.last_add: AddResult | None = None
        self.pending_ids: list[str] = []
        if not 0.0 <= use_weight <= 1.0:
            raise InvalidInputError("use_weight must be in [0, 1]")
        self.use_weight = use_weight
        #: ids of the hits the last answer used (see :func:`used_hits`)
        self.last_used: list[str] = []
        self._owns_memory = owns_memory
        self._executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem-add") if background else None
        )
        self._futures: list[Future[AddResult | None]] = []
        #: the last answer and when it was given: the next question may reply to it
        self._said: tuple[str, datetime] | None = None

    def __call__(self, question: str, *, timestamp: datetime | str | float | None = None) -> ChatReply:
        """Recall for ``question``, answer it, remember the turn. ``timestamp``: when the
        question is asked (a datetime, ISO 8601 text or epoch seconds; default: now): the recall
        is as of then, and the turn is stored as said then."""
        when = None if timestamp is None else as_datetime(timestamp)
        self.flush()  # background: the previous turn is remembered before this recall
        recall = self.memory.search(question, limit=self.limit, now=when, **self.scope)
        context = recall.to_prompt(max_tokens=self.max_tokens)
        answer = self.answer_fn(question, context)
        if not isinstance(answer, str):
            raise TypeError(f"answer_fn must return a str, got {type(answer).__name__}")
        used = [h.id for h in used_hits(question, answer, recall.hits)]
        self.last_used = used
        if used and self.use_weight > 0:
            self.memory.feedback(
                used,
                self.use_weight,
                query=question,
                user_id=self.scope["user_id"],
                tenant=self.scope["tenant"],
            )
        asked_at = when or self.memory.now()
        turn = [{"role": "user", "content": question}]
        if self._said is not None and timedelta(0) <= asked_at - self._said[1] <= CARRY_WITHIN:
            turn.insert(0, {"role": "assistant", "content": self._said[0]})
        self._said = None
        if answer.strip():
            turn.append({"role": "assistant", "content": answer})
            self._said = (answer, asked_at)
        added = None
        if self._executor is None:
            added = self._remember(turn, when)
        else:
            self._futures.append(self._executor.submit(self._remember, turn, when))
        return ChatReply(answer, list(recall.hits), added)

    def _remember(self, turn: list[dict[str, str]], when: datetime | None) -> AddResult | None:
        try:
            self.last_add = self.memory.add(turn, timestamp=when, **self.scope)
            return self.last_add
        except ExtractionPendingError as e:
            self.last_add = None
            self.pending_ids.append(e.pending_id)
            log.warning("the turn was not extracted and is kept as pending %s: %s", e.pending_id, e)
            return None

    def flush(self) -> None:
        """Wait for turns being added in the background; re-raise an error other than pending."""
        futures, self._futures = self._futures, []
        for f in futures:
            f.result()

    def close(self) -> None:
        """Flush, stop the background worker, and close the Memory if ``with_memory`` opened it
        (one passed in stays open: it is the caller's)."""
        try:
            self.flush()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)
            if self._owns_memory:
                self.memory.close()

    def __enter__(self) -> MemoryChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_memory(
    answer_fn: AnswerFn,
    memory: Memory | None = None,
    *,
    user_id: str,
    tenant: str = "default",
    agent_id: str | None = None,
    run_id: str | None = None,
    path: str | Path | None = None,
    limit: int = 5,
    max_tokens: int | None = 800,
    background: bool = False,
    use_weight: float = 0.25,
) -> MemoryChat:
    """Wrap ``answer_fn(question, context) -> str`` with recall before and remembering after.

    ``memory``: a :class:`Memory` of yours (left open), or None to open one on ``path``
    (default: ``MEM_PIPELINE_PATH`` or the user data directory), closed by ``close()`` or at
    the end of a ``with`` block. See :class:`MemoryChat`; each call returns a
    :class:`ChatReply` ``(answer, hits, added)``.
    """
    if memory is not None and path is not None:
        raise InvalidInputError("give with_memory a memory or a path, not both")
    owns = memory is None
    mem = Memory(path=path) if memory is None else memory
    try:
        return MemoryChat(
            answer_fn,
            mem,
            user_id=user_id,
            tenant=tenant,
            agent_id=agent_id,
            run_id=run_id,
            limit=limit,
            max_tokens=max_tokens,
            background=background,
            owns_memory=owns,
            use_weight=use_weight,
        )
    except BaseException:
        if owns:
            mem.close()
        raise


@functools.lru_cache(maxsize=4)
def _client(base_url: str | None, api_key: str | None, model: str, mode: StructuredOutput) -> LLMClient:
    return LLMClient(model=model, base_url=base_url, api_key=api_key, structured_output=mode)


def default_llm() -> LLMClient:
    """The answering LLM the environment names (``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``,
    ``MEM_PIPELINE_LLM_MODEL``), one client per distinct setting."""
    cfg = MemoryConfig.from_env()
    if not cfg.llm_endpoint_set:
        raise ConfigError(
            "answer_question needs an LLM: set OPENAI_API_KEY (OpenAI) or OPENAI_BASE_URL (any "
            "OpenAI-compatible server), or pass llm=LLMClient(model=..., base_url=..., api_key=...)"
        )
    return _client(cfg.llm_base_url, cfg.llm_api_key, cfg.llm_model, cfg.llm_structured_output)


def answer_with_llm(
    question: str,
    context: str,
    *,
    llm: LLMClient | None = None,
    today: datetime | str | None = None,
    max_tokens: int | None = 128,
) -> TextCompletion:
    """The answer of :func:`answer_question`, with its token counts (used by the eval).

    The system prompt (``prompts/answer.md``) holds the date and ``context``; the question is
    the user message, so calls that share a context share a prompt prefix (a server with a
    prompt cache reuses it).
    """
    if llm is None:
        llm = default_llm()
    if today is None:
        today = utcnow()
    day = today.strftime("%A %d %B %Y") if isinstance(today, datetime) else today
    system = render_prompt("answer", today=day, context=context.strip() or NO_MEMORY)
    return llm.complete_text(question, system=system, max_tokens=max_tokens)


def answer_question(
    question: str,
    context: str,
    *,
    llm: LLMClient | None = None,
    today: datetime | str | None = None,
    max_tokens: int | None = 128,
) -> str:
    """A ready ``answer_fn``: a short plain-text answer from the LLM, given the memory block.

    ``with_memory(answer_question, user_id=...)`` uses the LLM the environment names
    (:func:`default_llm`); pass ``llm=LLMClient(...)`` for another. Errors are
    :class:`~mem_pipeline.errors.LLMError` (transport retried first), or
    :class:`~mem_pipeline.errors.ConfigError` when no LLM is configured.
    """
    return answer_with_llm(question, context, llm=llm, today=today, max_tokens=max_tokens).text
