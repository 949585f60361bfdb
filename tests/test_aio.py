"""AsyncMemory: Memory's methods, awaitable, one implementation underneath.

Many tasks on one event loop add and search concurrently; the store ends as a sequential run
leaves it (facts, confirmations, concept and link counts), at most ``workers`` calls run at
once, and closing waits for the calls in flight.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
from typing import Any

import pytest
from _checks import assert_consistent, concept_counts, link_counts

from mem_pipeline import AsyncMemory, Memory, MemoryConfig, StoreClosedError
from mem_pipeline.aio import _NOT_WRAPPED

WORDS = ["tea", "hiking", "paris", "cello", "python", "garden", "bees", "coffee"]


def _memory(embedder: Any, clock: Any) -> Memory:
    return Memory(config=MemoryConfig(path=":memory:"), embedder=embedder, clock=clock)


def _state(m: Memory, user: str) -> dict[str, Any]:
    facts = m.get_all(user_id=user)
    return {
        "facts": sorted((f.text, f.confirmations, tuple(sorted(f.concepts))) for f in facts),
        "concepts": concept_counts(m, "default", user),
        "links": link_counts(m, "default", user),
    }


def test_every_public_method_of_memory_is_awaitable() -> None:
    """Made from Memory's own methods: nothing to keep in step by hand."""
    public = {n for n, f in inspect.getmembers(Memory, inspect.isfunction) if not n.startswith("_")}
    for name in public - _NOT_WRAPPED:
        method = getattr(AsyncMemory, name)
        assert inspect.iscoroutinefunction(method), name
        assert inspect.signature(method) == inspect.signature(getattr(Memory, name)), name
    assert inspect.iscoroutinefunction(AsyncMemory.close)


def _plan(seed: int) -> list[tuple[str, str, list[str]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(8):
        n = rng.randrange(6)  # few distinct texts: tasks reinforce each other's facts
        out.append(("add", f"Fact {n}: something I care about.", rng.sample(WORDS, rng.randint(1, 3))))
        out.append(("search", f"what do I know about {rng.choice(WORDS)}?", []))
    return out


def test_many_tasks_equal_a_sequential_run(embedder, clock) -> None:
    plans = [_plan(seed) for seed in range(12)]
    users = [f"u{i % 3}" for i in range(len(plans))]

    async def run() -> None:
        async with AsyncMemory(_memory(embedder, clock), workers=4) as am:

            async def task(i: int) -> None:
                for op, text, cs in plans[i]:
                    if op == "add":
                        res = await am.add(text, user_id=users[i], infer=False, concepts=cs)
                        assert res.ids
                    else:
                        recall = await am.search(text, user_id=users[i], limit=3)
                        assert all(h.score >= 0 for h in recall.hits)

            await asyncio.gather(*(task(i) for i in range(len(plans))))
            shared = am.memory
            for user in sorted(set(users)):
                assert_consistent(shared, "default", user)
            got = {user: _state(shared, user) for user in set(users)}

        sequential = _memory(embedder, clock)
        for i, plan in enumerate(plans):
            for op, text, cs in plan:
                if op == "add":
                    sequential.add(text, user_id=users[i], infer=False, concepts=cs)
        assert got == {user: _state(sequential, user) for user in set(users)}
        sequential.close()

    asyncio.run(run())


def test_at_most_workers_calls_run_at_once(embedder, clock) -> None:
    m = _memory(embedder, clock)
    m.add("I keep bees on the roof.", user_id="u", infer=False)
    running, peak = 0, 0
    guard = threading.Lock()
    inner = m.get_all

    def counted(**kw: Any) -> Any:
        nonlocal running, peak
        with guard:
            running += 1
            peak = max(peak, running)
        try:
            threading.Event().wait(0.02)  # long enough for the others to pile up
            return inner(**kw)
        finally:
            with guard:
                running -= 1

    m.get_all = counted  # type: ignore[method-assign]

    async def run() -> list[int]:
        am = AsyncMemory(m, workers=2)
        found = await asyncio.gather(*(am.get_all(user_id="u") for _ in range(10)))
        await am.close()
        return [len(f) for f in found]

    assert asyncio.run(run()) == [1] * 10
    assert peak == 2


def test_close_waits_for_calls_in_flight_then_refuses(embedder, clock) -> None:
    async def run() -> None:
        am = AsyncMemory(_memory(embedder, clock), workers=2)
        adds = [
            asyncio.create_task(am.add(f"Note {i} about the garden.", user_id="u", infer=False))
            for i in range(6)
        ]
        await asyncio.sleep(0)  # the adds are under way
        await am.close()
        done = await asyncio.gather(*adds, return_exceptions=True)
        stored = [r for r in done if not isinstance(r, BaseException)]
        refused = [r for r in done if isinstance(r, StoreClosedError)]
        assert len(stored) + len(refused) == 6 and stored  # none failed any other way
        with pytest.raises(StoreClosedError):
            await am.search("garden", user_id="u")

    asyncio.run(run())


def test_opens_a_memory_from_arguments(tmp_path, embedder) -> None:
    async def run() -> None:
        async with AsyncMemory(path=str(tmp_path / "s"), embedder=embedder) as am:
            await am.add("I'm vegetarian.", user_id="ana", infer=False)
            recall = await am.search("what do I eat?", user_id="ana", min_score=0.0)
            assert recall.hits and recall.hits[0].text == "I'm vegetarian."
        async with AsyncMemory(path=str(tmp_path / "s"), embedder=embedder) as am:  # reopened
            assert [f.text for f in await am.get_all(user_id="ana")] == ["I'm vegetarian."]

    asyncio.run(run())
