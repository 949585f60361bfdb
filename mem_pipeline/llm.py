"""The OpenAI-compatible LLM client: structured output validated by pydantic, retries, re-asks.

One method does the work, :meth:`LLMClient.complete`: send a prompt, get back an instance of a
pydantic model. Three layers of recovery, each bounded:

1. transport: rate limits (429), connection errors, timeouts and 5xx are retried by ``tenacity``
   with jittered exponential backoff (the SDK's own retries are off, so the two never multiply);
2. validation: output that is not valid JSON for the schema (or an empty choice list) is sent
   back to the model with the error, up to ``reasks`` times (instructor's habit);
3. when either runs out, :class:`~mem_pipeline.errors.LLMRetryError` carries the number of
   calls made and the last raw output. Nothing is silently turned into "no facts".

Structured-output mode is decided once, at construction, never per call: ``json_schema``
(OpenAI structured outputs) for api.openai.com, ``json_object`` plus the schema in the prompt
and in llama.cpp's ``"schema"`` extension for other endpoints; or set it in the config.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources
from string import Template
from typing import Any, Generic, Literal, TypeVar

import openai
from pydantic import BaseModel, ValidationError
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_random_exponential,
)

from .config import MemoryConfig
from .errors import ConfigError, LLMError, LLMRetryError

__all__ = ["Completion", "LLMClient", "TextCompletion", "complete_prefix", "render_prompt"]

log = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)

_TRANSIENT = (
    openai.RateLimitError,
    openai.APIConnectionError,  # includes APITimeoutError
    openai.InternalServerError,
)


def render_prompt(name: str, **values: Any) -> str:
    """Read ``prompts/<name>.md`` and fill its ``$placeholders`` (all must be given)."""
    text = (resources.files("mem_pipeline.prompts") / f"{name}.md").read_text(encoding="utf-8")
    try:
        return Template(text).substitute({k: str(v) for k, v in values.items()})
    except KeyError as e:
        raise ConfigError(f"prompt {name!r} needs a value for ${e.args[0]}") from e


@dataclass
class Completion(Generic[T]):
    value: T
    raw: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    #: the answer hit ``max_tokens``: ``value`` holds the elements it completed before the cut
    #: (:func:`complete_prefix`)
    truncated: bool = False


def complete_prefix(raw: str) -> str | None:
    """A JSON answer cut off by the token limit, up to the last array element it completed and
    closed there (``{"facts": [{...}, {...}, {"te`` -> ``{"facts": [{...}, {...}]}``); None when
    it completed none. Pure."""
    stack: list[str] = []
    in_string = escaped = False
    best: tuple[int, list[str]] | None = None
    for i, ch in enumerate(raw):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]":
            if not stack or stack.pop() != ("{" if ch == "}" else "["):
                return None  # not JSON: nothing to keep
            if stack and stack[-1] == "[":
                best = (i + 1, list(stack))
    if best is None:
        return None
    end, open_ = best
    return raw[:end] + "".join("}" if c == "{" else "]" for c in reversed(open_))


@dataclass
class TextCompletion:
    """A plain-text answer and what it cost."""

    text: str
    calls: int
    prompt_tokens: int
    completion_tokens: int


class LLMClient:
    """A chat model behind any OpenAI-compatible endpoint."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        structured_output: Literal["auto", "json_schema", "json_object"] = "auto",
        timeout_s: float = 60.0,
        max_retries: int = 4,
        reasks: int = 2,
        backoff_s: tuple[float, float] = (0.5, 20.0),
        temperature: float = 0.0,
    ) -> None:
        if structured_output == "auto":
            is_openai = base_url is None or "api.openai.com" in base_url
            structured_output = "json_schema" if is_openai else "json_object"
        self.mode = structured_output
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.reasks = reasks
        self.backoff_s = backoff_s
        self.temperature = temperature
        try:
            self._client = openai.OpenAI(
                api_key=api_key or "no-key", base_url=base_url, timeout=timeout_s, max_retries=0
            )
        except openai.OpenAIError as e:
            raise ConfigError(f"cannot build the OpenAI client: {e}") from e

    @classmethod
    def from_config(cls, cfg: MemoryConfig) -> LLMClient:
        return cls(
            model=cfg.llm_model,
            base_url=cfg.llm_base_url,
            api_key=cfg.llm_api_key,
            structured_output=cfg.llm_structured_output,
            timeout_s=cfg.llm_timeout_s,
            max_retries=cfg.llm_max_retries,
            reasks=cfg.llm_reasks,
        )

    def _response_format(self, schema: type[BaseModel]) -> dict[str, Any]:
        js = schema.model_json_schema()
        if self.mode == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": js, "strict": False},
            }
        fmt: dict[str, Any] = {"type": "json_object"}
        if self.base_url is not None and "api.openai.com" not in self.base_url:
            fmt["schema"] = js  # llama.cpp: constrain the output to the schema
        return fmt

    def _send(
        self, messages: list[dict[str, str]], fmt: dict[str, Any] | None, **extra: Any
    ) -> tuple[Any, int]:
        """One request with transport retries; returns (response, calls made).

        ``fmt`` None sends no ``response_format`` (plain text); ``extra`` are more request
        fields (e.g. ``max_tokens``).
        """
        calls = 0
        options: dict[str, Any] = dict(extra)
        if fmt is not None:
            options["response_format"] = fmt

        def once() -> Any:
            nonlocal calls
            calls += 1
            return self._client.chat.completions.create(  # type: ignore[call-overload]
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=self.temperature,
                **options,
            )

        retrying = Retrying(
            retry=retry_if_exception_type(_TRANSIENT),
            wait=wait_random_exponential(multiplier=self.backoff_s[0], max=self.backoff_s[1]),
            stop=stop_after_attempt(self.max_retries + 1),
            reraise=False,
        )
        try:
            return retrying(once), calls
        except RetryError as e:
            last = e.last_attempt.exception()
            raise LLMRetryError(
                f"the LLM endpoint failed {calls} times ({type(last).__name__}: {last})",
                attempts=calls,
            ) from last
        except openai.OpenAIError as e:  # 4xx other than 429: not worth retrying
            raise LLMError(f"the LLM endpoint refused the request: {e}") from e

    def complete(
        self, schema: type[T], prompt: str, *, system: str | None = None, max_tokens: int | None = None
    ) -> Completion[T]:
        """Ask for one JSON object of ``schema`` (in at most ``max_tokens``); re-ask with the
        validation error if needed."""
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        fmt = self._response_format(schema)
        extra: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
        calls = prompt_tokens = completion_tokens = 0
        raw = ""
        for attempt in range(self.reasks + 1):
            try:
                resp, n = self._send(messages, fmt, **extra)
            except LLMRetryError as e:
                e.attempts += calls
                e.last_output = raw or None
                raise
            calls += n
            usage = getattr(resp, "usage", None)
            if usage is not None:
                prompt_tokens += int(usage.prompt_tokens or 0)
                completion_tokens += int(usage.completion_tokens or 0)
            choices = getattr(resp, "choices", None) or []
            raw = (choices[0].message.content or "") if choices else ""
            cut = bool(choices) and getattr(choices[0], "finish_reason", None) == "length"
            try:
                if not choices:
                    raise ValueError("the response had no choices")
                value = schema.model_validate_json(raw)
            except (ValidationError, ValueError) as e:
                kept = complete_prefix(raw) if cut else None
                if kept is not None:  # cut by max_tokens: keep what it finished; asking again
                    try:  # with a longer history would only be cut sooner
                        value = schema.model_validate_json(kept)
                    except (ValidationError, ValueError):
                        pass
                    else:
                        log.info("LLM output hit max_tokens; kept its %d complete characters", len(kept))
                        return Completion(value, raw, calls, prompt_tokens, completion_tokens, truncated=True)
                error = str(e)[:1500]
                log.info("LLM output failed validation (attempt %d): %s", attempt + 1, error)
                messages = [
                    *messages,
                    {"role": "assistant", "content": raw[:4000]},
                    {
                        "role": "user",
                        "content": "That reply was not valid. Error:\n"
                        + error
                        + "\nReply again with only one JSON object that matches the schema.",
                    },
                ]
                continue
            return Completion(value, raw, calls, prompt_tokens, completion_tokens)
        raise LLMRetryError(
            f"the LLM gave no valid {schema.__name__} after {self.reasks + 1} answers ({calls} calls)",
            attempts=calls,
            last_output=raw,
        )

    def complete_text(
        self, prompt: str, *, system: str | None = None, max_tokens: int | None = None
    ) -> TextCompletion:
        """Ask for a plain-text answer (no response format). Transport errors are retried and
        translated as in :meth:`complete`; a response with no choices raises
        :class:`~mem_pipeline.errors.LLMRetryError` (there is nothing to re-ask about)."""
        messages: list[dict[str, str]] = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        extra: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
        resp, calls = self._send(messages, None, **extra)
        usage = getattr(resp, "usage", None)
        prompt_tokens = int(usage.prompt_tokens or 0) if usage is not None else 0
        completion_tokens = int(usage.completion_tokens or 0) if usage is not None else 0
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise LLMRetryError("the LLM answered with no choices", attempts=calls, last_output=None)
        text = (choices[0].message.content or "").strip()
        return TextCompletion(text, calls, prompt_tokens, completion_tokens)
