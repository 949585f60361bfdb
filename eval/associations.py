"""Association benchmark: can a read that names only X reach a note about Z, through Y?

    python -m eval.associations [--users 4] [--distractors 1000] [--chains 25] [--json OUT]

Synthetic, written for this project. Each user gets ``--distractors`` filler notes (concepts from
a separate vocabulary, one "status" hub concept on 5% of them) and ``--chains`` chains: two notes
linking X and Y (the pair seen twice) and one note linking Y and Z that never names X. The query
names only X ("What do we know about <x>?"). By construction neither vector nor lexical search
can reach the Z note from the query; the concept layer can, through Y.

Reported, links off vs on: Z-note recall (in the results at all: direct top-k plus association
hits), association precision (share of association hits that belong to the query's chain), the
number of unrelated association hits per query, hub leaks (filler notes reached through
"status"), and a feedback round: helpful feedback on the Z note for half the chains, then
held-out queries (another wording naming X) for chains with and without feedback.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from mem_pipeline import LocalEmbedder, Memory, MemoryConfig

ADJ = (
    "amber azure brisk cobalt dusky ember fallow gilded hazel indigo jade kestrel lunar "
    "maple nimbus onyx pewter quartz russet sable tawny umber velvet willow xenon yarrow "
    "zephyr arctic basalt cedar"
).split()
NOUN = (
    "falcon harbor lantern meadow orchard pylon quarry ridge summit tundra valley beacon "
    "canyon delta estuary fjord glacier heath island jetty knoll lagoon marsh "
).split()
FILL_A = "budget roadmap hiring offsite invoice audit payroll survey newsletter onboarding".split()
FILL_B = "review sync retro kickoff demo planning handover training workshop checkin".split()

XY = [
    "The {x} rollout depends on {y} being ready.",
    "We paired {x} with {y} for the launch.",
    "{X} only works when {y} is configured first.",
    "The {x} team asked for {y} access again.",
    "Testing {x} showed it needs {y}.",
]
YZ = [
    "{Y} kept failing until we tuned {z}.",
    "For {y}, the fix was {z}.",
    "{Y} is stable now thanks to {z}.",
    "We replaced the {y} settings with {z}.",
    "{Y} problems were traced back to {z}.",
]
Q1 = "What do we know about {x}?"
Q2 = "Any notes on {x}?"


def _names(rng: random.Random, used: set[str]) -> tuple[str, str, str]:
    """Three new names sharing no word: the Z note cannot name X or anything like it."""
    while True:
        adj, noun = rng.sample(ADJ, 3), rng.sample(NOUN, 3)
        names = tuple(f"{a} {n}" for a, n in zip(adj, noun))
        if not used & set(names):
            used.update(names)
            return names  # type: ignore[return-value]


def build(m: Memory, users: int, distractors: int, chains: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out = []
    total = users * (distractors + 3 * chains)
    with tqdm(total=total, desc="ingest", file=sys.stderr) as bar:
        for u in range(users):
            user, used = f"user-{u}", set()
            for i in range(distractors):
                a, b = rng.choice(FILL_A), rng.choice(FILL_B)
                concepts = [a, f"{b} {i % 50}"] + (["status"] if i % 20 == 0 else [])
                m.add(
                    f"Note {i}: the {a} {b} moved to slot {rng.randint(1, 99)}.",
                    user_id=user,
                    infer=False,
                    concepts=concepts,
                )
                bar.update()
            for c in range(chains):
                x, y, z = _names(rng, used)
                ids = []
                for t in rng.sample(XY, 2):
                    ids += m.add(
                        t.format(x=x, y=y, X=x.capitalize()), user_id=user, infer=False, concepts=[x, y]
                    ).ids
                    bar.update()
                zt = rng.choice(YZ).format(y=y, z=z, Y=y.capitalize())
                (zid,) = m.add(zt, user_id=user, infer=False, concepts=[y, z]).ids
                bar.update()
                out.append(
                    {"user": user, "x": x, "y": y, "z": z, "z_id": zid, "xy_ids": ids, "feedback": c % 2 == 0}
                )
    return out


def measure(m: Memory, chains: list[dict[str, Any]], template: str, expand: bool, k: int) -> dict[str, Any]:
    found = assoc_total = assoc_right = unrelated = hub = 0
    ms = []
    for ch in chains:
        t = time.perf_counter()
        r = m.search(template.format(x=ch["x"]), user_id=ch["user"], limit=k, expand=expand, reinforce=False)
        ms.append((time.perf_counter() - t) * 1000)
        # what the links reach comes beside the hits (``Recall.associations``), not inside them
        got = [*r.hits, *r.associations]
        found += ch["z_id"] in {h.id for h in got}
        chain_ids = {ch["z_id"], *ch["xy_ids"]}
        for h in got:
            if h.source in ("association", "concept"):
                assoc_total += 1
                assoc_right += h.id in chain_ids
                unrelated += h.id not in chain_ids
                hub += h.text.startswith("Note ")
    n = len(chains)
    return {
        "z_recall": round(found / n, 3),
        "association_precision": round(assoc_right / assoc_total, 3) if assoc_total else None,
        "unrelated_association_hits_per_query": round(unrelated / n, 3),
        "hub_leaks": hub,
        "queries": n,
        "search_ms_p50": round(statistics.median(ms), 2),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=4)
    ap.add_argument("--distractors", type=int, default=1000)
    ap.add_argument("--chains", type=int, default=25)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    m = Memory(config=MemoryConfig(path=":memory:"), embedder=LocalEmbedder())
    t = time.perf_counter()
    chains = build(m, args.users, args.distractors, args.chains, args.seed)
    ingest_s = time.perf_counter() - t
    res: dict[str, Any] = {"setup": vars(args), "ingest_s": round(ingest_s, 1)}
    res["links_off"] = measure(m, chains, Q1, False, args.k)
    res["links_on"] = measure(m, chains, Q1, True, args.k)
    fb = [c for c in chains if c["feedback"]]
    held = [c for c in chains if not c["feedback"]]
    res["before_feedback_heldout_wording"] = {
        "feedback_chains": measure(m, fb, Q2, True, args.k),
        "other_chains": measure(m, held, Q2, True, args.k),
    }
    for c in fb:  # the Z note helped for the first wording
        m.feedback([c["z_id"]], True, user_id=c["user"], query=Q1.format(x=c["x"]))
    res["after_feedback_heldout_wording"] = {
        "feedback_chains": measure(m, fb, Q2, True, args.k),
        "other_chains": measure(m, held, Q2, True, args.k),
    }
    # the Z note is now one hop from X: check the direct link exists for feedback chains
    r = m.search(Q2.format(x=fb[0]["x"]), user_id=fb[0]["user"], limit=args.k, reinforce=False)
    res["example_after_feedback"] = {
        "query": r.query,
        "expanded": r.expanded_concepts,
        "paths": [h.via.path for h in [*r.hits, *r.associations] if h.via],
    }
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
