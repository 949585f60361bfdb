"""The demo (``mem-pipeline demo``): a three-session conversation played into a store, what was
stored, recalls with their score parts, the prompt block, a restart, and the concept links."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from typing import Any

from ._inputs import abbreviations
from .config import MemoryConfig
from .memory import Memory
from .models import Scope

__all__ = ["run_demo"]

_SESSIONS: list[tuple[str, list[str]]] = [
    (
        "2026-01-10T09:00:00+00:00",
        [
            "Hi! I work as a data engineer at a logistics startup in Leeds.",
            "I am vegetarian. My sister Ana lives in Lisbon.",
            "What's a good podcast for the commute?",
        ],
    ),
    (
        "2026-02-02T19:30:00+00:00",
        [
            "I love trail running and I'm training for the Leeds half marathon in May.",
            "Just so you know, I'm vegetarian.",
        ],
    ),
    (
        "2026-03-15T08:15:00+00:00",
        [
            "Actually, my sister Ana lives in Porto now.",
            "I started learning Portuguese so I can chat with her neighbours.",
        ],
    ),
]
_QUESTIONS = [
    "what should I cook for dinner?",
    "where does my sister live?",
    "what race am I preparing for?",
]


_NOTES = [
    ("The deploy timed out after the release.", ["timeout", "deploy"]),
    ("Retried the request and it went through.", ["timeout", "retry"]),
    ("Backoff of two seconds fixed the flaky call.", ["retry", "backoff"]),
    ("The upload timed out again; one retry fixed it.", ["timeout", "retry"]),
]


def _demo_associations(cfg: MemoryConfig, out: Any) -> dict[str, Any]:
    """The concept-link scenario: a read for "timeout" reaches the backoff note through
    "retry"; feedback makes "backoff" a neighbour of "timeout", kept across a restart."""
    user = "dev"
    out("\n== associations (notes with concepts, infer=False)")
    with Memory(config=cfg) as m:
        for text, concepts in _NOTES:
            m.add(text, user_id=user, infer=False, concepts=concepts)
            out(f"  note {concepts}: {text}")
        r = m.search("timeout", user_id=user, limit=1, reinforce=False)
        out(f"? timeout   query concepts {r.query_concepts}, expanded {r.expanded_concepts}")
        out(r.explain())
        assoc = [h for h in r.hits if h.source == "association" and "backoff" in h.concepts]
        if assoc:
            fb = m.feedback([assoc[0].id], True, user_id=user, query="timeout")
            out(f"  feedback: the backoff note helped -> {fb['links']} links strengthened")
    with Memory(config=cfg) as m:  # a new process would see the same
        r = m.search("timeout", user_id=user, limit=1, reinforce=False)
        out(f"  after restart: expanded concepts {r.expanded_concepts}")
        return {
            "expanded_after_feedback": r.expanded_concepts,
            "association_paths": [h.via.path for h in r.hits if h.via],
        }


def _short(m: Memory, user: str, fid: str) -> str:
    """``fid`` as the CLI shows it: its shortest unique prefix (``mem-pipeline history`` takes it)."""
    ids = [i for _, i in m.store.fact_order(Scope.of(user), include_invalid=True)]
    return abbreviations(ids).get(fid, fid)


def run_demo(path: str | None, out: Callable[..., None]) -> dict[str, Any]:
    """Play the demo conversation into the store at ``path`` (None: a temporary one), telling
    what happens through ``out`` (``print``, or a no-op); return the report."""
    t0 = time.perf_counter()
    tmp = None
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="mem-pipeline-demo-")
        path = tmp.name
    user = "priya"
    cfg = MemoryConfig.from_env(path=path)
    out(f"mem_pipeline demo: store at {path}")
    llm = f"LLM at {cfg.llm_base_url or 'api.openai.com'}" if cfg.llm_configured else None
    unused = " (an OpenAI key or URL is set: MEM_PIPELINE_LLM=openai extracts with it)"
    out(f"extractor: {llm or 'offline' + (unused if cfg.llm_endpoint_set else '')}\n")
    report: dict[str, Any] = {"path": path, "sessions": []}
    with Memory(config=cfg) as m:
        for when, turns in _SESSIONS:
            out(f"== session of {when[:10]}")
            sess = []
            for text in turns:
                res = m.add(text, user_id=user, timestamp=when)
                out(f"user: {text}")
                for e in res.events:
                    extra = f"  (supersedes {_short(m, user, e.previous_id)})" if e.previous_id else ""
                    out(f"   -> {e.event:<9} {e.text}{extra}   [{e.reason}]")
                if not res.events:
                    out("   -> nothing durable (question or greeting)")
                sess.append(res.model_dump(mode="json"))
            report["sessions"].append(sess)
            out()
        facts = m.get_all(user_id=user, include_invalid=True, kind="fact")
        said = m.get_all(user_id=user, include_invalid=True, kind="turn")
        out("== the facts stored")
        for f in facts:
            state = "valid" if f.is_valid else "superseded"
            out(f"  [{f.category.value:<12}] x{f.confirmations} {state:<10} {f.text}")
        kept = sum(1 for t in said if t.is_valid)
        out(f"== and the {len(said)} turns they came from ({len(said) - kept} superseded with their fact)")
        out("\n== recall")
        for q in _QUESTIONS:
            r = m.search(q, user_id=user, limit=3, reinforce=False)
            out(f"? {q}")
            out(r.explain())
        r = m.search(_QUESTIONS[0], user_id=user, limit=3, reinforce=False)
        out("\n== the prompt block handed to a chatbot for the first question")
        out(r.to_prompt(max_tokens=300))
    out("\n== restart: a new Memory on the same path")
    with Memory(config=cfg) as m:
        facts2 = m.get_all(user_id=user, include_invalid=True, kind="fact")
        turns2 = m.get_all(user_id=user, include_invalid=True, kind="turn")
        out(f"  {len(facts2)} facts and {len(turns2)} turns after reopening")
        out(f"  (before: {len(facts)} and {len(said)})")
        sister = [f for f in facts2 if "sister" in f.text and not f.is_valid]
        if sister:
            out(f"  history of {sister[0].text!r}:")
            for h in m.history(sister[0].id, user_id=user):
                out(f"    {h.event:<9} {h.old_text!r} -> {h.new_text!r}")
        r = m.search("where does my sister live?", user_id=user, limit=1, reinforce=False)
        out(f"  where does my sister live? -> {r.hits[0].text if r.hits else '(nothing)'}")
        out(f"  another user sees: {len(m.get_all(user_id='someone-else'))} facts")
        report["facts_after_restart"] = len(facts2)
        report["turns_after_restart"] = len(turns2)
    report["associations"] = _demo_associations(cfg, out)
    report["seconds"] = round(time.perf_counter() - t0, 2)
    out(f"\ndemo finished in {report['seconds']} s")
    if tmp is not None:
        tmp.cleanup()
    return report
