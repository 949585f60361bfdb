"""Wrap a chatbot's ``answer_question`` so it remembers.

::

    from mem_pipeline import Memory, with_memory

    chat = with_memory(my_answer_fn, Memory(), user_id="priya")  # my_answer_fn(question, context)
    answer, facts = chat("what should I cook tonight?")

Before ``answer_fn`` runs, the wrapper recalls for the question and hands over the prompt block
(:meth:`Recall.to_prompt <mem_pipeline.recall.Recall.to_prompt>`) as ``context``; after it
answers, the turn (the question as the user's message, the answer as the assistant's) is added
to memory in the same scope. If extraction fails, :class:`Memory.add` keeps the turn as pending
and raises :class:`~mem_pipeline.errors.ExtractionPendingError`: the wrapper logs it, remembers
the pending id, and still returns the answer. ``background=True`` adds the turn in a worker
thread, so a slow LLM extraction never delays its answer; the next call (or ``flush()``,
``close()``) waits for it, so every recall sees all earlier turns.

:func:`answer_question` is a ready ``answer_fn`` on our OpenAI-compatible :class:`LLMClient`
(prompt: ``prompts/answer.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any, NamedTuple

from .errors import ExtractionPendingError
from .llm import LLMClient, TextCompletion, render_prompt
from .memory import Memory
from .models import AddResult, utcnow
from .recall import Hit

__all__ = ["Answer", "MemoryChat", "answer_question", "answer_with_llm", "with_memory"]

log = logging.getLogger(__name__)

#: The user's chatbot: ``answer_fn(question, context) -> answer``.
AnswerFn = Callable[[str, str], str]

#: What ``context`` says when nothing is remembered (plain-text placeholder for the prompt).
NO_MEMORY = "(nothing remembered yet)"


class Answer(NamedTuple):
    """The answer and the remembered facts that were handed to the chatbot (unpacks as a pair)."""

    answer: str
    hits: list[Hit]


class MemoryChat:
    """A chatbot call with memory: ``chat(question) -> Answer(answer, hits)``.

    ``limit`` facts at most are recalled and rendered into at most ``max_tokens`` (approximate)
    tokens. The scope (``user_id``, ``tenant``, ``agent_id``, ``run_id``) is the same for the
    recall and the add. After each call, ``last_add`` is the :class:`AddResult` (None while it
    runs in the background or when it failed) and ``pending_ids`` lists turns kept as pending.
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
        self._executor = (
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="mem-add") if background else None
        )
        self._futures: list[Future[None]] = []

    def __call__(self, question: str) -> Answer:
        self.flush()  # background: the previous turn is remembered before this recall
        recall = self.memory.search(question, limit=self.limit, **self.scope)
        context = recall.to_prompt(max_tokens=self.max_tokens)
        answer = self.answer_fn(question, context)
        if not isinstance(answer, str):
            raise TypeError(f"answer_fn must return a str, got {type(answer).__name__}")
        turn = [{"role": "user", "content": question}]
        if answer.strip():
            turn.append({"role": "assistant", "content": answer})
        self.last_add = None
        if self._executor is None:
            self._remember(turn)
        else:
            self._futures.append(self._executor.submit(self._remember, turn))
        return Answer(answer, list(recall.hits))

    def _remember(self, turn: list[dict[str, str]]) -> None:
        try:
            self.last_add = self.memory.add(turn, **self.scope)
        except ExtractionPendingError as e:
            self.pending_ids.append(e.pending_id)
            log.warning("the turn was not extracted and is kept as pending %s: %s", e.pending_id, e)

    def flush(self) -> None:
        """Wait for turns being added in the background; re-raise an error other than pending."""
        futures, self._futures = self._futures, []
        for f in futures:
            f.result()

    def close(self) -> None:
        """Flush, then stop the background worker (the Memory stays open: it is the caller's)."""
        try:
            self.flush()
        finally:
            if self._executor is not None:
                self._executor.shutdown(wait=True)

    def __enter__(self) -> MemoryChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_memory(
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
) -> MemoryChat:
    """Wrap ``answer_fn(question, context) -> str`` with recall before and remembering after.

    See :class:`MemoryChat`; the call returns ``Answer(answer, hits)``.
    """
    return MemoryChat(
        answer_fn,
        memory,
        user_id=user_id,
        tenant=tenant,
        agent_id=agent_id,
        run_id=run_id,
        limit=limit,
        max_tokens=max_tokens,
        background=background,
    )


def answer_with_llm(
    question: str,
    context: str,
    *,
    llm: LLMClient,
    today: datetime | str | None = None,
    max_tokens: int | None = 128,
) -> TextCompletion:
    """The answer of :func:`answer_question`, with its token counts (used by the eval).

    The system prompt (``prompts/answer.md``) holds the date and ``context``; the question is
    the user message, so calls that share a context share a prompt prefix (a server with a
    prompt cache reuses it).
    """
    if today is None:
        today = utcnow()
    day = today.strftime("%A %d %B %Y") if isinstance(today, datetime) else today
    system = render_prompt("answer", today=day, context=context.strip() or NO_MEMORY)
    return llm.complete_text(question, system=system, max_tokens=max_tokens)


def answer_question(
    question: str,
    context: str,
    *,
    llm: LLMClient,
    today: datetime | str | None = None,
    max_tokens: int | None = 128,
) -> str:
    """A ready ``answer_fn``: a short plain-text answer from the LLM, given the memory block.

    ``with_memory(functools.partial(answer_question, llm=llm), memory, user_id=...)``.
    Errors are :class:`~mem_pipeline.errors.LLMError` (transport retried first).
    """
    return answer_with_llm(question, context, llm=llm, today=today, max_tokens=max_tokens).text
