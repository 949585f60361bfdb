"""The embedded engines: a store keeps the engine it was written with, and the edge adapter's
translations (booleans, ids, metadata) give the same answers as qdrant-client's local mode."""

from __future__ import annotations

import pytest

from mem_pipeline import MemoryConfig, StoreError
from mem_pipeline.store import ENGINES


def test_store_keeps_its_engine(open_memory, store_path, engine) -> None:
    m = open_memory(store_path)
    assert m.store.engine == engine
    m.add("I keep bees on the roof.", user_id="ana", infer=False)
    m.close()
    other = next(e for e in ENGINES if e != engine)
    with pytest.raises(StoreError, match=f"written by the {engine!r} engine"):
        open_memory(store_path, engine=other)
    again = open_memory(store_path)  # no engine named: the store's own
    assert again.store.engine == engine
    assert [f.text for f in again.get_all(user_id="ana")] == ["I keep bees on the roof."]


def test_config_engine_from_env() -> None:
    assert MemoryConfig.from_env(env={"MEM_PIPELINE_ENGINE": "local"}).engine == "local"
    with pytest.raises(Exception, match="engine"):
        MemoryConfig.from_env(env={"MEM_PIPELINE_ENGINE": "sqlite"})


def test_boolean_metadata_filters_and_updates(mem) -> None:
    """Booleans are matched exactly, also after an update changes or removes them."""
    a = mem.add("The roof garden needs water daily.", user_id="ana", infer=False, metadata={"urgent": True})
    b = mem.add("The bike needs new tyres.", user_id="ana", infer=False, metadata={"urgent": False})
    ida, idb = a.events[0].id, b.events[0].id

    def urgent(flag: bool) -> set[str]:
        return {f.id for f in mem.get_all(user_id="ana", filters={"urgent": flag})}

    assert urgent(True) == {ida} and urgent(False) == {idb}
    assert {
        h.id
        for h in mem.search("what needs doing", user_id="ana", filters={"urgent": True}, min_score=0).hits
    } == {ida}
    # the store's own boolean: a superseded fact is invalid and leaves every default read
    mem.store.set_fact_fields(ida, {"valid": False})
    assert {f.id for f in mem.get_all(user_id="ana")} == {idb}
    assert {f.id for f in mem.get_all(user_id="ana", include_invalid=True)} == {ida, idb}
    mem.store.set_fact_fields(ida, {"valid": True, "metadata": {"urgent": False}})
    assert urgent(True) == set() and urgent(False) == {ida, idb}
    mem.store.set_fact_fields(ida, {"metadata": {"note": "no flag any more"}})
    assert urgent(True) == set() and urgent(False) == {idb}


def test_edge_point_ids_read_from_the_repr_are_the_ids(tmp_path) -> None:
    """``_edge_types.point_id`` cuts a UUID id out of the binding's repr (faster than
    ``str(p.id)``); it must give the same string, and fall back for other ids."""
    import qdrant_edge as qe

    from mem_pipeline.store._edge_types import point_id

    cfg = qe.EdgeConfig(vectors={"v": qe.EdgeVectorParams(size=2, distance=qe.Distance.Cosine)})
    shard = qe.EdgeShard.create(str(tmp_path / "shard"), cfg)
    ids = ["01a22d69-91ea-7000-9cf5-3ab7a278f46f", "5f0c7a52-3d4e-4f6b-9a51-6d2f1b0e8c11", 7]
    shard.update(qe.UpdateOperation.upsert_points([qe.Point(i, {"v": [1.0, 0.5]}, {}) for i in ids]))
    found = shard.query(qe.QueryRequest(limit=5, query=qe.Query.Nearest([1.0, 0.0], using="v")))
    assert sorted(point_id(p) for p in found) == sorted(str(p.id) for p in found) == sorted(map(str, ids))
    shard.close()
