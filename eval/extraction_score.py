"""Score the LLM extractor on the hand-written labelled set (turn -> expected facts).

    OPENAI_BASE_URL=http://127.0.0.1:8089/v1 OPENAI_API_KEY=local \
        python -m eval.extraction_score --model qwen2.5-coder-1.5b-instruct --json out.json

Each item's turns go through the real pipeline's extraction and grounding (not the store). A
predicted fact matches an expected fact when their embeddings (both in the third person) have
cosine >= 0.75 and they share the same key specifics (no conflicting numbers, dates, names or
negations); each expected fact is matched at most once. Reports fact precision and recall,
category accuracy on matched facts, and how many "nothing durable" items stayed empty.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from tqdm import tqdm

from mem_pipeline._inputs import as_datetime as _as_datetime
from mem_pipeline.embed import LocalEmbedder
from mem_pipeline.llm import LLMClient
from mem_pipeline.models import Message
from mem_pipeline.text.voice import conflicting_specifics, third_person
from mem_pipeline.write.extract import LLMExtractor
from mem_pipeline.write.ground import fact_sources, ground

HERE = Path(__file__).parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(HERE / "data" / "extraction_labelled.jsonl"))
    ap.add_argument("--model", default=os.environ.get("MEM_PIPELINE_LLM_MODEL", "gpt-4o-mini"))
    ap.add_argument("--json", default=None)
    ap.add_argument("--limit", type=int, default=0)
    args = ap.parse_args(argv)
    items = [json.loads(x) for x in Path(args.data).read_text().splitlines() if x.strip()]
    if args.limit:
        items = items[: args.limit]
    llm = LLMClient(
        model=args.model,
        base_url=os.environ.get("OPENAI_BASE_URL"),
        api_key=os.environ.get("OPENAI_API_KEY"),
        timeout_s=600,
        max_retries=1,
    )
    ex, emb = LLMExtractor(llm), LocalEmbedder()
    tp = fp = fn = cat_ok = empty_ok = empty_n = rejected = 0
    secs, calls, ptok, ctok, rows = [], 0, 0, 0, []
    for it in tqdm(items, file=sys.stderr, desc="extract"):
        msgs = [Message(**m) for m in it["messages"]]
        t = time.perf_counter()
        out = ex.extract(msgs, _as_datetime(it["timestamp"]))
        secs.append(time.perf_counter() - t)
        calls, ptok, ctok = calls + out.llm_calls, ptok + out.prompt_tokens, ctok + out.completion_tokens
        kept = [
            f
            for f in out.facts
            if (src := fact_sources(msgs, f.source_turns)) and ground(f.text, src) is None
        ]
        rejected += len(out.facts) - len(kept)
        expected = it["expected_facts"]
        if not expected:
            empty_n += 1
            empty_ok += int(not kept)
        matched: set[int] = set()
        if kept and expected:
            pv = emb.embed_batch([third_person(f.text) for f in kept])
            ev = emb.embed_batch([third_person(e["text"]) for e in expected])
            sims = pv @ ev.T
            for i, f in enumerate(kept):
                best = max(
                    (
                        j
                        for j in range(len(expected))
                        if j not in matched
                        and not conflicting_specifics(third_person(f.text), third_person(expected[j]["text"]))
                    ),
                    key=lambda j: sims[i, j],
                    default=None,
                )
                if best is not None and sims[i, best] >= 0.75:
                    matched.add(best)
                    cat_ok += int(f.category.value == expected[best]["category"])
        tp += len(matched)
        fp += len(kept) - len(matched)
        fn += len(expected) - len(matched)
        rows.append(
            {
                "id": it["id"],
                "predicted": [f.text for f in kept],
                "expected": [e["text"] for e in expected],
                "matched": len(matched),
            }
        )
    res = {
        "items": len(items),
        "expected_facts": tp + fn,
        "predicted_facts": tp + fp,
        "matched": tp,
        "precision": round(tp / max(tp + fp, 1), 3),
        "recall": round(tp / max(tp + fn, 1), 3),
        "category_accuracy": round(cat_ok / max(tp, 1), 3),
        "empty_items_kept_empty": f"{empty_ok}/{empty_n}",
        "grounding_rejects": rejected,
        "llm_calls_per_turn": round(calls / len(items), 2),
        "prompt_tokens_per_turn": round(ptok / len(items)),
        "completion_tokens_per_turn": round(ctok / len(items)),
        "seconds_per_turn_p50": round(statistics.median(secs), 1),
        "model": args.model,
        "endpoint": os.environ.get("OPENAI_BASE_URL", "api.openai.com"),
    }
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({**res, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
