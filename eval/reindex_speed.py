"""How fast ``Memory.reindex`` updates an older store: every turn of a LoCoMo-format file is
written the way lexical version 1 did (average entry length 16) and without the reply-link
mark, then reindexed (lexical vectors rebuilt, reply links found).

    python -m eval.reindex_speed ../shared/data/locomo/locomo_dev.json --engine edge
"""

from __future__ import annotations

import argparse
import tempfile
import time

from eval.retrieval import load
from mem_pipeline import LocalEmbedder, Memory, MemoryConfig
from mem_pipeline import store as store_module
from mem_pipeline.store import _payload
from mem_pipeline.text import lexical


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", help="LoCoMo-format JSON")
    ap.add_argument("--engine", choices=store_module.ENGINES, default=store_module.DEFAULT_ENGINE)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        m = Memory(config=MemoryConfig(path=f"{tmp}/s", engine=args.engine), embedder=LocalEmbedder())
        current = (lexical._AVG_LEN, lexical.LEXICAL_VERSION, _payload.TURN_LINKS_VERSION)
        # what version 1 wrote: the old length constant, no reply-link mark
        lexical._AVG_LEN, lexical.LEXICAL_VERSION, _payload.TURN_LINKS_VERSION = 16.0, 1, 0
        try:
            n = 0
            for c in load(args.path):
                for t in c.turns:
                    m.add(
                        [{"role": "user", "content": t.text, "name": t.speaker}],
                        user_id=c.sample_id,
                        infer=False,
                        timestamp=t.when,
                        metadata={"session": t.session},
                    )
                    n += 1
        finally:
            lexical._AVG_LEN, lexical.LEXICAL_VERSION, _payload.TURN_LINKS_VERSION = current
        t0 = time.perf_counter()
        counted = m.reindex(dry_run=True)
        t1 = time.perf_counter()
        rebuilt = m.reindex()
        t2 = time.perf_counter()
        again = m.reindex()
        m.close()
    print(
        f"{args.engine}: {n} facts; dry run counted {counted} in {t1 - t0:.2f} s; updated {rebuilt} "
        f"in {t2 - t1:.2f} s ({rebuilt / (t2 - t1):.0f} facts/s); a second run updated {again}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
