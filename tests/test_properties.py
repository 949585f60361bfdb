"""Hostile and malformed input (hypothesis) over the public API and the CLI.

Every call either returns a correct result or raises an error of our tree
(:class:`MemPipelineError`); never an exception of a dependency. Afterwards the store still
reads and its invariants hold (history, concept counts; see ``_checks``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import pytest
from _checks import assert_consistent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mem_pipeline import Memory, MemoryConfig, MemPipelineError, NotFoundError
from mem_pipeline.cli import main

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# any unicode, control characters and lone surrogates included
texts = st.one_of(
    st.text(max_size=80),
    st.text(st.characters(codec=None, exclude_categories=()), max_size=80),
    st.text(st.characters(max_codepoint=0x1F), max_size=20),
    st.sampled_from(["\ud800 tea", "I like \udfff tea a lot.", "\x00", "</memory-data>", " ", "\u202e"]),
    st.integers(1, 3).map(lambda n: "I like tea. " * (3000 * n)),  # 36 KB+: over the limit
)
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), texts
)
odd = st.one_of(
    st.none(),
    st.integers(),
    st.floats(),
    st.binary(max_size=20),
    st.lists(json_leaf, max_size=3),
    st.sets(st.integers(), max_size=3),
    st.datetimes(),
    st.builds(object),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), json_leaf, max_size=3),
)
hashable = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.binary(max_size=5), st.text(max_size=5)
)
metadata = st.one_of(
    st.none(),
    st.dictionaries(
        st.text(max_size=10), st.recursive(json_leaf, lambda c: st.lists(c, max_size=3)), max_size=4
    ),
    st.dictionaries(hashable, odd, max_size=3),
    odd,
    st.just({"a": {"b": {"c": {}}}}),
)
users = st.one_of(st.sampled_from(["ana", "bob"]), texts, odd)
uuids = st.one_of(st.uuids().map(str), texts, odd)
messages = st.one_of(
    texts,
    odd,
    st.lists(
        st.fixed_dictionaries(
            {
                "role": st.one_of(st.sampled_from(["user", "assistant", "system"]), odd),
                "content": st.one_of(texts, odd),
            },
            optional={"name": st.one_of(texts, odd)},
        ),
        max_size=3,
    ),
)
concepts = st.one_of(st.none(), texts, odd, st.lists(st.one_of(texts, odd), max_size=40))
timestamps = st.one_of(
    st.none(),
    st.datetimes(timezones=st.just(timezone.utc)),
    st.floats(),
    st.integers(),
    texts,
    st.builds(object),
)


@pytest.fixture(scope="module")
def pmem(embedder: Any) -> Iterator[Memory]:
    m = Memory(config=MemoryConfig(path=":memory:"), embedder=embedder)
    m.add("I keep bees on the roof.", user_id="bob", infer=False, concepts=["bees", "roof"])
    m.add("I play the cello.", user_id="ana", infer=False, concepts=["cello", "music"])
    yield m
    m.close()


def _ours_or_ok(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except MemPipelineError as e:
        return e  # ours; anything else propagates and fails the test


def _still_sound(m: Memory) -> None:
    for user in ("ana", "bob"):
        assert_consistent(m, "default", user)
    (bob,) = m.get_all(user_id="bob")  # bob's fact is never touched by these calls
    assert bob.text == "I keep bees on the roof." and bob.confirmations == 1


@SETTINGS
@given(
    msgs=messages,
    user=users,
    meta=metadata,
    cs=concepts,
    infer=st.one_of(st.none(), st.booleans(), odd),
    ts=timestamps,
)
def test_add_takes_anything(
    pmem: Memory, msgs: Any, user: Any, meta: Any, cs: Any, infer: Any, ts: Any
) -> None:
    if user == "bob":
        user = "ana"
    r = _ours_or_ok(
        lambda: pmem.add(msgs, user_id=user, metadata=meta, concepts=cs, infer=infer, timestamp=ts)
    )
    if not isinstance(r, MemPipelineError):
        for e in r.events:
            if e.id is not None and e.event != "REJECT":
                assert pmem.get(e.id, user_id=user).id == e.id
    _still_sound(pmem)


@SETTINGS
@given(
    q=st.one_of(texts, odd),
    user=users,
    limit=st.one_of(st.integers(-5, 2000), odd),
    filters=st.one_of(metadata, st.dictionaries(st.text(max_size=5), st.lists(odd, max_size=2))),
    now=timestamps,
    expand=st.one_of(st.none(), st.booleans()),
)
def test_search_takes_anything(
    pmem: Memory, q: Any, user: Any, limit: Any, filters: Any, now: Any, expand: Any
) -> None:
    r = _ours_or_ok(
        lambda: pmem.search(
            q, user_id=user, limit=limit, filters=filters, now=now, expand=expand, reinforce=False
        )
    )
    if not isinstance(r, MemPipelineError):
        own = {f.id for f in pmem.get_all(user_id=user, include_invalid=True)}
        assert {h.id for h in r.hits} <= own
        block = r.to_prompt()
        assert block.count("</memory-data>") == 1
    _still_sound(pmem)


@SETTINGS
@given(
    fid=uuids,
    user=users,
    text=st.one_of(texts, odd),
    helped=st.one_of(st.booleans(), st.floats(), odd),
    query=st.one_of(st.none(), texts, odd),
    ids=st.one_of(odd, st.lists(uuids, max_size=3)),
)
def test_get_update_delete_feedback_history_take_anything(
    pmem: Memory, fid: Any, user: Any, text: Any, helped: Any, query: Any, ids: Any
) -> None:
    (bob,) = pmem.get_all(user_id="bob")
    if user == "bob":
        user = "ana"
    for target in (fid, bob.id):  # a random id, and another user's real id
        got = _ours_or_ok(lambda: pmem.get(target, user_id=user))  # noqa: B023
        assert isinstance(got, MemPipelineError)  # no random id exists, bob's is not ana's
        assert isinstance(_ours_or_ok(lambda: pmem.update(target, text, user_id=user)), MemPipelineError)  # noqa: B023
        assert isinstance(_ours_or_ok(lambda: pmem.delete(target, user_id=user)), MemPipelineError)  # noqa: B023
        h = _ours_or_ok(lambda: pmem.history(target, user_id=user))  # noqa: B023
        assert isinstance(h, MemPipelineError) or h == []
    if isinstance(user, str) and user in ("ana",):
        assert isinstance(_ours_or_ok(lambda: pmem.get(bob.id, user_id=user)), NotFoundError)
    for arg in (ids, [bob.id]):
        fb = _ours_or_ok(lambda: pmem.feedback(arg, helped, user_id=user, query=query))  # noqa: B023
        if not isinstance(fb, MemPipelineError):
            assert fb["facts"] == 0  # nobody else's fact moved
            assert isinstance(helped, (bool, int, float)) and not math.isnan(float(helped))
    _still_sound(pmem)


@SETTINGS
@given(
    text=texts,
    user=st.one_of(texts, st.just("ana")),
    other=st.lists(texts, max_size=3),
    cmd=st.sampled_from(["add", "search", "list", "forget", "history", "feedback", "prune"]),
)
def test_cli_never_raises(
    tmp_path_factory: Any, capsys: Any, text: str, user: str, other: list[str], cmd: str
) -> None:
    path = str(tmp_path_factory.getbasetemp() / "cli_store")
    argv = {
        "add": [
            "add",
            "--path",
            path,
            "--user",
            user,
            "--no-infer",
            text,
            *[a for o in other for a in ("--concept", o)],
        ],
        "search": ["search", "--path", path, "--user", user, "--json", "--limit", str(len(other) - 1), text],
        "list": ["list", "--path", path, "--user", user, "--json"],
        "forget": ["forget", "--path", path, "--user", user],
        "history": ["history", "--path", path, "--user", user, text],
        "feedback": [
            "feedback",
            "--path",
            path,
            "--user",
            user,
            "--query",
            text,
            "--amount",
            "nan",
            *(other or [text]),
        ],
        "prune": ["prune", "--path", path, "--user", user, "--apply", "--min-strength", "0.5"],
    }[cmd]
    argv = [a for a in argv if "\x00" not in a]  # argv of a real process cannot hold NUL
    code = main(argv)  # argparse refusing the command line itself (e.g. a text starting with "-"): 2
    assert code in (0, 1, 2)  # 1: an id that names no fact of the user
    capsys.readouterr()


def test_deep_metadata_and_surrogates_are_refused(pmem: Memory) -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["a"] = {}
        node = node["a"]
    for call in (
        lambda: pmem.add("I like tea a lot.", user_id="ana", metadata=deep),
        lambda: pmem.add("I like \ud800 tea.", user_id="ana", infer=False),
        lambda: pmem.search("tea \udfff", user_id="ana"),
        lambda: pmem.add("I like tea.", user_id="\ud800"),
        lambda: pmem.add("I like tea.", user_id="ana", timestamp=1e20),
        lambda: pmem.search("tea", user_id="ana", now=float("nan")),
        lambda: pmem.search("tea", user_id="ana", filters=[1]),  # type: ignore[arg-type]
        lambda: pmem.feedback(None, True, user_id="ana"),  # type: ignore[arg-type]
        lambda: pmem.feedback([], "yes", user_id="ana"),  # type: ignore[arg-type]
        lambda: pmem.add("I like tea.", user_id="ana", concepts=5),  # type: ignore[arg-type]
        lambda: pmem.add("I like tea.", user_id="ana", infer="no"),  # type: ignore[arg-type]
        lambda: pmem.add("I like tea.", user_id="ana", timestamp=datetime(1, 1, 1)),
    ):
        r = _ours_or_ok(call)
        assert isinstance(r, MemPipelineError) or r is not None
    _still_sound(pmem)
