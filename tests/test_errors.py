"""Bad input gets a clear error of our tree, and nothing is stored half-way."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mem_pipeline import (
    EmbedderMismatchError,
    InvalidInputError,
    Memory,
    MemoryConfig,
    MemPipelineError,
    ScopeError,
    StoreLockedError,
)


@pytest.mark.parametrize("bad", ["", "   \n\t", [], [{"role": "user", "content": "  "}]])
def test_empty_input(mem, bad) -> None:
    with pytest.raises(InvalidInputError):
        mem.add(bad, user_id="ana")
    assert mem.get_all(user_id="ana") == []


@pytest.mark.parametrize(
    "bad",
    [
        [{"role": "user", "content": 42}],
        [{"role": "user"}],
        [{"role": "robot", "content": "hi there friend"}],
        3.5,
        [None],
        b"I like tea",
    ],
)
def test_malformed_messages(mem, bad) -> None:
    with pytest.raises(InvalidInputError):
        mem.add(bad, user_id="ana")


@pytest.mark.parametrize(
    "kwargs",
    [
        {"user_id": None},
        {"user_id": ""},
        {"user_id": 7},
        {"user_id": "a", "tenant": ""},
        {"user_id": "a\x00b"},
        {"user_id": "x" * 300},
    ],
)
def test_bad_scope(mem, kwargs) -> None:
    with pytest.raises(ScopeError):
        mem.add("I like tea a lot.", **kwargs)
    with pytest.raises(ScopeError):
        mem.search("tea", **kwargs)


def test_missing_user_id_is_a_type_error_at_the_call(mem) -> None:
    with pytest.raises(TypeError):
        mem.add("I like tea a lot.")  # type: ignore[call-arg]


def test_huge_turn_is_refused_whole(mem) -> None:
    huge = "I like tea. " * 9000  # ~100 KB
    with pytest.raises(InvalidInputError, match="limit"):
        mem.add(
            [{"role": "user", "content": "I collect stamps."}, {"role": "user", "content": huge}],
            user_id="ana",
        )
    assert mem.get_all(user_id="ana") == []  # the valid first message was not stored either


def test_bad_ids_metadata_limits(mem) -> None:
    with pytest.raises(InvalidInputError):
        mem.get("not-a-uuid", user_id="ana")
    with pytest.raises(InvalidInputError):
        mem.add("I like tea a lot.", user_id="ana", metadata={"x": object()})
    with pytest.raises(InvalidInputError):
        mem.add("I like tea a lot.", user_id="ana", metadata={1: "x"})
    with pytest.raises(InvalidInputError):
        mem.search("tea", user_id="ana", limit=0)
    with pytest.raises(InvalidInputError):
        mem.search("tea", user_id="ana", filters={"x": {"nested": 1}})
    with pytest.raises(InvalidInputError):
        mem.add("I like tea a lot.", user_id="ana", timestamp="yesterday")
    assert mem.get_all(user_id="ana") == []


class _OtherEmbedder:
    """A second, real embedder (character-trigram hashing) with another id and dimension."""

    model_id = "trigram-hash-64"
    dimensions = 64

    def embed_batch(self, texts):  # type: ignore[no-untyped-def]
        out = np.zeros((len(texts), 64), dtype=np.float32)
        for i, t in enumerate(texts):
            for j in range(len(t) - 2):
                out[i, hash(t[j : j + 3]) % 64] += 1
        return out / np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-9, None)


def test_mixing_embedders_is_refused(open_memory, store_path, embedder) -> None:
    m = open_memory(store_path)
    m.add("I like tea a lot.", user_id="ana")
    m.close()
    with pytest.raises(EmbedderMismatchError, match="all-MiniLM"):
        Memory(config=MemoryConfig(path=store_path), embedder=_OtherEmbedder())
    # another prefix is a separate collection: fine
    other = Memory(
        config=MemoryConfig(path=store_path, collection_prefix="trigram"), embedder=_OtherEmbedder()
    )
    other.add("I like tea a lot.", user_id="ana")
    other.close()


def test_store_held_by_another_process(store_path, open_memory, engine) -> None:
    holder = textwrap.dedent(f"""
        import sys, time
        from mem_pipeline import Memory, MemoryConfig
        m = Memory(config=MemoryConfig.from_env(path={store_path!r}))  # the test's engine
        print("ready", m.store.engine, flush=True)
        sys.stdin.readline()
    """)
    p = subprocess.Popen(
        [sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == f"ready {engine}"
        with pytest.raises(StoreLockedError, match="another process") as err:
            open_memory(store_path)
        assert isinstance(err.value, MemPipelineError)
    finally:
        assert p.stdin is not None
        p.stdin.write("\n")
        p.stdin.close()
        p.wait(timeout=30)
    open_memory(store_path).add("I like tea a lot.", user_id="ana")  # free again
