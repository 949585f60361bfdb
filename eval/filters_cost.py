"""What the offline path's learned models cost an add, paired in one process.

    python -m eval.filters_cost

The main behaviour set's user turns, twice, added one a call into two stores, alternating which
goes first: one with the learned filter and categories on (the defaults), one with both off
(``memorable_filter=False, category_model=False``). Prints p50 and mean per add and the ratio.
"""

from __future__ import annotations

import glob
import json
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from mem_pipeline import Memory, MemoryConfig


def main() -> int:
    turns = [
        t["content"]
        for f in sorted(glob.glob("eval/data/behaviour/*.json"))
        for s in json.loads(Path(f).read_text(encoding="utf-8"))
        for t in s["turns"]
        if t["role"] == "user"
    ]
    t0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
    times: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as d:
        stores = {
            "on": Memory(MemoryConfig(path=d + "/on")),
            "off": Memory(MemoryConfig(path=d + "/off", memorable_filter=False, category_model=False)),
        }
        for i, text in enumerate(turns * 2):
            for name in ("on", "off") if i % 2 == 0 else ("off", "on"):
                start = time.perf_counter()
                at = t0 + timedelta(minutes=i)
                stores[name].add([{"role": "user", "content": text}], user_id=f"u{i % 20}", timestamp=at)
                times[name].append(time.perf_counter() - start)
        for m in stores.values():
            m.close()
    for name, v in times.items():
        p50, mean = 1000 * statistics.median(v), 1000 * statistics.mean(v)
        print(f"{name}: {len(v)} adds, p50 {p50:.2f} ms, mean {mean:.2f} ms")
    ratio = statistics.median(times["on"]) / statistics.median(times["off"])
    print(f"p50 on / off: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
