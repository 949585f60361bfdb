"""What listing a scope's speakers costs a search: the facet over the ``metadata.speaker``
index (``QdrantStore.speakers``) on an edge store of N facts, 100 users, two speakers each
(half the facts have none), timed over 100 calls.

    python -m eval.speaker_facet --facts 100000
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
import uuid

from mem_pipeline import store as store_module
from mem_pipeline.models import Scope
from mem_pipeline.store import QdrantStore
from mem_pipeline.store._edge import EdgeClient


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--facts", type=int, default=100_000)
    ap.add_argument("--calls", type=int, default=100)
    args = ap.parse_args(argv)
    rnd = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        store = QdrantStore(EdgeClient(tmp), embedder_id="none", dimensions=4)
        for start in range(0, args.facts, 5000):
            points = []
            for i in range(start, min(start + 5000, args.facts)):
                user = f"u{i % 100}"
                speaker = rnd.choice([f"{user}-a", f"{user}-b", None, None])
                meta = {"speaker": speaker} if speaker else {}
                payload = {"tenant": "default", "user_id": user, "metadata": meta}
                pid = str(uuid.UUID(int=i + 1))
                points.append(store_module.models.PointStruct(id=pid, vector={}, payload=payload))
            store.client.upsert(store.facts, points)
        scope = Scope.of("u7")
        found = store.speakers(scope)
        t0 = time.perf_counter()
        for _ in range(args.calls):
            store.speakers(scope)
        ms = (time.perf_counter() - t0) / args.calls * 1000
        store.close()
    print(f"{args.facts} facts, 100 users: speakers of one user {found}; {ms:.3f} ms a call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
