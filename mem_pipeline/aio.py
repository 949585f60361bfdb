""":class:`AsyncMemory`: the same methods as :class:`~mem_pipeline.Memory`, awaitable, for
asyncio applications (FastAPI handlers, async chat frameworks), and for trio through anyio.

There is one implementation: every method of ``AsyncMemory`` runs the ``Memory`` method of the
same name, unchanged, in a worker thread (``anyio.to_thread.run_sync``), at most ``workers`` at
a time; the others wait their turn without blocking the event loop. The methods are made from
``Memory``'s own public methods when this module is imported, so a method added to ``Memory``
is awaitable here at once and no signature is written twice. Safety under many concurrent
tasks is ``Memory``'s own: its lock serialises the store's reads and writes, and embedding
(the costly part of most calls) runs outside it, in parallel.

A call whose task is cancelled still runs to its end in its thread (a write is never left
half done) and the task sees the cancellation afterwards. :meth:`AsyncMemory.aclose` waits for
the calls in flight, then closes the memory.

>>> async with AsyncMemory(path=":memory:") as m:                   # doctest: +SKIP
...     await m.add("I'm vegetarian.", user_id="ana")
...     recall = await m.search("what should I cook?", user_id="ana")
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from .errors import StoreClosedError
from .memory import Memory

__all__ = ["DEFAULT_WORKERS", "AsyncMemory"]

#: Calls running at once. The embedder uses the machine's cores (up to 4) for one text and the
#: store serialises its reads and writes, so a few workers keep both busy; more only queue
#: inside ``Memory`` instead of here.
DEFAULT_WORKERS = 4

# what AsyncMemory does itself: closing (after the calls in flight), and reading the clock
_NOT_WRAPPED = frozenset({"close", "now"})


class AsyncMemory:
    """A :class:`~mem_pipeline.Memory` whose methods are awaitable (see the module docstring).

    Give it an open ``memory``, or the arguments ``Memory`` takes (``path=``, ``config=``,
    collaborators...) and it opens one (in a worker thread: loading the model and the store
    takes a while). ``workers``: how many calls run at once.
    """

    def __init__(
        self, memory: Memory | None = None, *, workers: int = DEFAULT_WORKERS, **kwargs: Any
    ) -> None:
        if memory is not None and kwargs:
            raise TypeError("give either an open Memory or the arguments to open one, not both")
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self._memory = memory
        self._kwargs = kwargs
        self._limiter = anyio.CapacityLimiter(workers)
        self._opening = anyio.Lock()
        self._in_flight = 0
        self._idle: anyio.Event | None = None
        self._closing = False

    @property
    def memory(self) -> Memory:
        """The ``Memory`` underneath (opened by the first call or ``async with``)."""
        if self._memory is None:
            raise StoreClosedError("the memory is not open yet: await open() or use 'async with'")
        return self._memory

    @property
    def config(self) -> Any:
        return self.memory.config

    @property
    def workers(self) -> int:
        return int(self._limiter.total_tokens)

    def now(self) -> Any:
        return self.memory.now()

    async def open(self) -> AsyncMemory:
        """Open the ``Memory`` (when given the arguments to open one); a no-op once open."""
        async with self._opening:
            if self._memory is None:
                self._memory = await anyio.to_thread.run_sync(functools.partial(Memory, **self._kwargs))
        return self

    async def __aenter__(self) -> AsyncMemory:
        return await self.open()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self._closing:
            raise StoreClosedError("the memory is closed")
        self._in_flight += 1  # before any await: close() waits for this call from now on
        try:
            await self.open()
            method = getattr(self.memory, name)
            return await anyio.to_thread.run_sync(
                functools.partial(method, *args, **kwargs), limiter=self._limiter
            )
        finally:
            self._in_flight -= 1
            if self._in_flight == 0 and self._idle is not None:
                self._idle.set()

    async def close(self) -> None:
        """Refuse new calls, wait for those in flight, and close the memory (its remaining
        deferred work, such as new concepts' name vectors, is done then)."""
        self._closing = True
        if self._in_flight:
            self._idle = anyio.Event()
            await self._idle.wait()
        if self._memory is not None:
            await anyio.to_thread.run_sync(self._memory.close)

    aclose = close

    if TYPE_CHECKING:  # the methods made below, as a type checker sees them

        def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]: ...


def _awaitable(name: str, method: Callable[..., Any]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def call(self: AsyncMemory, *args: Any, **kwargs: Any) -> Any:
        return await self._call(name, *args, **kwargs)

    call.__doc__ = f"Awaitable :meth:`Memory.{name}` (run in a worker thread).\n\n{method.__doc__ or ''}"
    return call


def _wrapped_methods() -> list[str]:
    """The public methods of ``Memory`` that ``AsyncMemory`` makes awaitable."""
    return [
        name
        for name, member in inspect.getmembers(Memory, inspect.isfunction)
        if not name.startswith("_") and name not in _NOT_WRAPPED
    ]


for _name in _wrapped_methods():
    setattr(AsyncMemory, _name, _awaitable(_name, getattr(Memory, _name)))
