"""Behaviour benchmark: is what memory holds RIGHT, not only findable?

    python -m eval.behaviour                                         # main set, offline
    python -m eval.behaviour --data eval/data/behaviour_heldout --json out.json
    python -m eval.behaviour --kinds correction stale_repeat --json out.json
    OPENAI_BASE_URL=... OPENAI_API_KEY=... MEM_PIPELINE_LLM_MODEL=... \\
        python -m eval.behaviour --extractor llm --json out.json
    python -m eval.behaviour --cassette cassettes/behaviour/main.yaml   # the LLM path, replayed
    OPENAI_BASE_URL=http://127.0.0.1:8089/v1 python -m eval.behaviour \\
        --cassette cassettes/behaviour/main.yaml --record                # ... recorded

``--cassette`` runs the LLM path under a vcrpy cassette (``eval/_cassette.py``): by default it
only replays, with no key and no network, and exits 3 when a request the pipeline sends is not
in the cassette or a recorded one is never asked for (the prompts, the model or the pipeline's
requests changed: re-record). ``--record`` sends the requests the cassette lacks to the
endpoint, records them and drops recorded ones this run did not ask for. The endpoint and model
default to those the cassettes were recorded with (:data:`CASSETTE_URL`,
:data:`CASSETTE_MODEL`); replay must use the same ones, since the URL and the model's name are
part of each request matched.

Hand-written chat scenarios (``eval/data/behaviour/README.md`` describes the format): each is a
short dated chat of a user with an assistant, then probes (queries asked later) and checks on
what was stored. Everything goes through the public API only (``Memory``, ``MemoryConfig``):
one Memory on a temporary store, one fresh ``user_id`` per scenario.

Feeding the turns: each user turn is added together with the assistant turn just before it
when that turn is of the same day (a chatbot wrapper adds the assistant's question and the
user's reply in one call, so "Yes, book it" can be understood); an assistant turn that no user
turn of its day answers is added on its own. The user turn's ``at`` is the add's timestamp.

Probes: ``memory.search(query, limit=5, now=at)``. The rank-1 hit is ``hits[0]``; the prompt
block is ``Recall.to_prompt()``; its items are its ``- [`` lines. Stored facts are
``memory.get_all()`` (valid facts only; only ``kind == "fact"`` objects when they have a kind).

Metrics, per kind and overall, each a share with its count (k/n):

- rank-1 correct: probes with ``expect_top`` whose rank-1 text contains one of them;
- stale in block (lower is better): probes with ``stale`` whose block has an item that contains
  a stale string and none of the probe's ``expect_top`` strings (an item that states the
  current value, "moved from Lisbon to Porto", is not stale, and neither is one that says the
  stale value ended: "I quit my job at Deloitte", "I've gone off Arctic Monkeys");
- abstention recall: ``expect_empty`` probes that got an empty block;
- abstention precision: of the probes that got an empty block, those that expected one;
- small talk stored (lower is better): scenarios with ``max_facts`` that stored more facts
  (``max_facts: 0``: any fact);
- kept: ``must_store`` entries found in some stored fact;
- suggestions stored (lower is better): ``must_not_store`` strings found in a stored fact;
- category: ``categories`` entries whose fact was stored and has an accepted category (entries
  whose fact was not stored are counted apart, as missing).

The exit code is 0 whatever the scores (this is a measurement); 2 when the data is malformed;
3 when a ``--cassette`` replay does not match the cassette.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
DEFAULT_DATA = HERE / "data" / "behaviour"

KINDS = (
    "correction",
    "abstention",
    "smalltalk",
    "short",
    "preference_change",
    "stale_repeat",
    "assistant",
    "category",
)
CATEGORIES = (
    "preference",
    "biography",
    "relationship",
    "work",
    "plan",
    "health",
    "event",
    "skill",
    "other",
)
#: kinds whose scenarios must say in ``note`` why the expectation is what it is
NOTE_REQUIRED = ("stale_repeat", "category")

_SCENARIO_KEYS = {"id", "kind", "note", "turns", "probes", "store"}
_TURN_KEYS = {"role", "content", "at"}
_PROBE_KEYS = {"query", "at", "expect_top", "stale", "expect_empty", "note"}
_STORE_KEYS = {"must_store", "max_facts", "must_not_store", "categories"}
_CATEGORY_KEYS = {"contains", "category"}

#: (label, key, True when lower is better), in table order
METRICS = (
    ("rank-1 correct", "rank1", False),
    ("stale in block", "stale", True),
    ("abstention recall", "abst_recall", False),
    ("abstention precision", "abst_precision", False),
    ("small talk stored", "smalltalk_stored", True),
    ("kept (must_store)", "kept", False),
    ("suggestions stored", "suggestions_stored", True),
    ("category", "category", False),
)


#: the endpoint and model the committed cassettes were recorded with (``local-llm.sh start 8089``)
CASSETTE_URL = "http://127.0.0.1:8089/v1"
CASSETTE_MODEL = "qwen2.5-coder-1.5b-instruct"


class DataError(ValueError):
    """The scenario files are malformed."""


# ----------------------------------------------------------------------------- data


def parse_at(value: Any) -> datetime:
    """An ISO 8601 timestamp with a time zone (``Z`` accepted); ValueError otherwise."""
    if not isinstance(value, str):
        raise ValueError(f"a timestamp is an ISO 8601 string, got {value!r:.40}")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    at = datetime.fromisoformat(text)
    if at.tzinfo is None or at.utcoffset() is None:
        raise ValueError(f"timestamp {value!r} has no time zone")
    return at


def _strings(value: Any, what: str, errors: list[str], *, alternatives: bool = False) -> None:
    """``value`` must be a non-empty list of non-empty strings (or, with ``alternatives``, of
    non-empty lists of them: any one of the alternatives satisfies the entry)."""
    if not isinstance(value, list) or not value:
        errors.append(f"{what} must be a non-empty list")
        return
    for item in value:
        if alternatives and isinstance(item, list):
            if not item or not all(isinstance(x, str) and x.strip() for x in item):
                errors.append(f"{what}: an alternatives entry must be a non-empty list of strings")
        elif not isinstance(item, str) or not item.strip():
            errors.append(f"{what}: {item!r:.40} is not a non-empty string")


def validate_scenario(s: Any) -> list[str]:
    """What is wrong with one scenario (empty when nothing is)."""
    if not isinstance(s, dict):
        return [f"a scenario is a JSON object, got {type(s).__name__}"]
    errors: list[str] = []
    unknown = set(s) - _SCENARIO_KEYS
    if unknown:
        errors.append(f"unknown keys {sorted(unknown)}")
    if not isinstance(s.get("id"), str) or not s["id"].strip():
        errors.append("id must be a non-empty string")
    kind = s.get("kind")
    if kind not in KINDS:
        errors.append(f"kind {kind!r} is not one of {', '.join(KINDS)}")
    note = s.get("note")
    if note is not None and not isinstance(note, str):
        errors.append("note must be a string")
    if kind in NOTE_REQUIRED and not (isinstance(note, str) and note.strip()):
        errors.append(f"a {kind} scenario says in 'note' why its expectation is what it is")

    turns = s.get("turns")
    last: datetime | None = None
    if not isinstance(turns, list) or not turns:
        errors.append("turns must be a non-empty list")
        turns = []
    for i, t in enumerate(turns):
        if not isinstance(t, dict):
            errors.append(f"turn {i} is not an object")
            continue
        if set(t) != _TURN_KEYS:
            errors.append(f"turn {i} must have exactly the keys {sorted(_TURN_KEYS)}, has {sorted(t)}")
        if t.get("role") not in ("user", "assistant"):
            errors.append(f"turn {i}: role must be 'user' or 'assistant'")
        if not isinstance(t.get("content"), str) or not t["content"].strip():
            errors.append(f"turn {i}: content must be a non-empty string")
        try:
            at = parse_at(t.get("at"))
        except ValueError as e:
            errors.append(f"turn {i}: {e}")
            continue
        if last is not None and at < last:
            errors.append(f"turn {i} is dated before the turn before it")
        last = at
    if turns and not any(isinstance(t, dict) and t.get("role") == "user" for t in turns):
        errors.append("no user turn")

    probes = s.get("probes", [])
    if not isinstance(probes, list):
        errors.append("probes must be a list")
        probes = []
    for i, p in enumerate(probes):
        where = f"probe {i}"
        if not isinstance(p, dict):
            errors.append(f"{where} is not an object")
            continue
        unknown = set(p) - _PROBE_KEYS
        if unknown:
            errors.append(f"{where}: unknown keys {sorted(unknown)}")
        if not isinstance(p.get("query"), str) or not p["query"].strip():
            errors.append(f"{where}: query must be a non-empty string")
        try:
            at = parse_at(p.get("at"))
            if last is not None and at < last:
                errors.append(f"{where} is dated before the last turn")
        except ValueError as e:
            errors.append(f"{where}: {e}")
        has_top, has_stale = "expect_top" in p, "stale" in p
        empty = p.get("expect_empty", False)
        if not isinstance(empty, bool):
            errors.append(f"{where}: expect_empty must be true or false")
        if has_top:
            _strings(p["expect_top"], f"{where}: expect_top", errors)
        if has_stale:
            _strings(p["stale"], f"{where}: stale", errors)
        if empty is True and (has_top or has_stale):
            errors.append(f"{where}: expect_empty cannot go with expect_top or stale")
        if not (has_top or has_stale or empty is True):
            errors.append(f"{where} has no expectation (expect_top, stale or expect_empty)")

    store = s.get("store", {})
    if not isinstance(store, dict):
        errors.append("store must be an object")
        store = {}
    unknown = set(store) - _STORE_KEYS
    if unknown:
        errors.append(f"store: unknown keys {sorted(unknown)}")
    if store.get("must_store"):
        _strings(store["must_store"], "store.must_store", errors, alternatives=True)
    elif "must_store" in store and store["must_store"] != []:
        errors.append("store.must_store must be a list")
    if store.get("must_not_store"):
        _strings(store["must_not_store"], "store.must_not_store", errors)
    elif "must_not_store" in store and store["must_not_store"] != []:
        errors.append("store.must_not_store must be a list")
    mf = store.get("max_facts")
    if mf is not None and (not isinstance(mf, int) or isinstance(mf, bool) or mf < 0):
        errors.append("store.max_facts must be null or an integer >= 0")
    cats = store.get("categories", [])
    if not isinstance(cats, list):
        errors.append("store.categories must be a list")
        cats = []
    for i, c in enumerate(cats):
        if not isinstance(c, dict) or set(c) != _CATEGORY_KEYS:
            errors.append(f"store.categories[{i}] must have exactly the keys contains, category")
            continue
        contains = c["contains"] if isinstance(c["contains"], list) else [c["contains"]]
        if not contains or not all(isinstance(x, str) and x.strip() for x in contains):
            errors.append(f"store.categories[{i}].contains must be a non-empty string or a list of them")
        labels = c["category"] if isinstance(c["category"], list) else [c["category"]]
        if not labels or any(x not in CATEGORIES for x in labels):
            errors.append(f"store.categories[{i}].category must be among {', '.join(CATEGORIES)}")

    checks = bool(probes) or bool(store.get("must_store")) or bool(store.get("must_not_store"))
    checks = checks or mf is not None or bool(cats)
    if not checks:
        errors.append("nothing is checked (no probe, no store expectation)")
    return errors


def load_scenarios(path: str | Path) -> list[dict[str, Any]]:
    """Every scenario of ``path`` (a directory of ``*.json`` files, or one file), each file a
    JSON list of scenarios. Raises :class:`DataError` naming every problem found."""
    path = Path(path)
    files = sorted(path.glob("*.json")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise DataError(f"no scenario files at {path}")
    problems: list[str] = []
    out: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for f in files:
        try:
            data = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            problems.append(f"{f.name}: not readable JSON: {e}")
            continue
        if not isinstance(data, list):
            problems.append(f"{f.name}: the file must hold a JSON list of scenarios")
            continue
        for i, s in enumerate(data):
            sid = s.get("id") if isinstance(s, dict) else None
            label = f"{f.name}[{i}] {sid or ''}".strip()
            problems.extend(f"{label}: {e}" for e in validate_scenario(s))
            if isinstance(sid, str):
                if sid in seen:
                    problems.append(f"{label}: id {sid!r} is also used in {seen[sid]}")
                seen[sid] = f.name
            if isinstance(s, dict):
                out.append({**s, "_file": f.name})
    if problems:
        raise DataError("malformed scenario data:\n  " + "\n  ".join(problems))
    return out


def exchanges(turns: Sequence[Mapping[str, Any]]) -> list[tuple[list[dict[str, str]], str]]:
    """The ``add`` calls a chatbot wrapper makes for ``turns``: (messages, timestamp) each.

    A user turn goes with the assistant turn just before it when both are of the same day
    (the question and its reply, so that "Yes, book it" has its object); an assistant turn
    that no user turn of its day follows is added alone, at its own time.
    """
    out: list[tuple[list[dict[str, str]], str]] = []
    held: Mapping[str, Any] | None = None  # an assistant turn waiting for the user's reply

    def msg(t: Mapping[str, Any]) -> dict[str, str]:
        return {"role": str(t["role"]), "content": str(t["content"])}

    for t in turns:
        if t["role"] == "assistant":
            if held is not None:
                out.append(([msg(held)], str(held["at"])))
            held = t
            continue
        batch = []
        if held is not None:
            if parse_at(held["at"]).date() == parse_at(t["at"]).date():
                batch.append(msg(held))
            else:
                out.append(([msg(held)], str(held["at"])))
            held = None
        batch.append(msg(t))
        out.append((batch, str(t["at"])))
    if held is not None:
        out.append(([msg(held)], str(held["at"])))
    return out


# ----------------------------------------------------------------------------- judging


def block_items(block: str) -> list[str]:
    """The texts of a prompt block's items (``- [label] "json text"`` lines), unescaped."""
    items = []
    for line in block.splitlines():
        if not line.startswith("- ["):
            continue
        end = line.find("] ")
        raw = line[end + 2 :] if end >= 0 else line[3:]
        text = html.unescape(raw)
        try:
            value = json.loads(text)
            items.append(value if isinstance(value, str) else text)
        except ValueError:
            items.append(text)
    return items


def _has(text: str, needles: Iterable[str]) -> bool:
    low = text.lower()
    return any(n.lower() in low for n in needles)


#: An item that says its value ended is history, not the stale fact ("I quit my job at X").
_ENDED = re.compile(
    r"\b(?:quit|left|no longer|not \w+(?: \w+)? any ?more|anymore|any more|broke up|split up|sold|"
    r"gone off|went off|done with|stopped|gave up|used to|moved (?:out|away) from|didn['’]t last|"
    r"didn['’]t work out|cancell?ed|ended|not into|ex-|(?:my|his|her|their|our) (?:old|former|previous)\b)",
    re.IGNORECASE,
)


def judge_probe(probe: Mapping[str, Any], top: str | None, items: Sequence[str]) -> dict[str, Any]:
    """One probe's outcome (pure). ``top``: the rank-1 hit's text, None without hits;
    ``items``: the texts in the prompt block. A metric the probe does not test is None."""
    expect = probe.get("expect_top")
    stale = probe.get("stale")
    rank1 = None if not expect else (top is not None and _has(top, expect))
    stale_items = (
        [t for t in items if _has(t, stale) and not (expect and _has(t, expect)) and not _ENDED.search(t)]
        if stale
        else []
    )
    return {
        "rank1_ok": rank1,
        "stale_in_block": None if not stale else bool(stale_items),
        "stale_items": stale_items,
        "empty": top is None and not items,
        "expect_empty": bool(probe.get("expect_empty", False)),
    }


def judge_store(store: Mapping[str, Any], facts: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """The store checks of one scenario (pure). ``facts``: (text, category) of each stored fact."""
    texts = [t for t, _ in facts]
    kept = []
    for entry in store.get("must_store") or []:
        alts = entry if isinstance(entry, list) else [entry]
        kept.append({"entry": entry, "found": any(_has(t, alts) for t in texts)})
    violations = [s for s in store.get("must_not_store") or [] if any(_has(t, [s]) for t in texts)]
    max_facts = store.get("max_facts")
    cats = []
    for c in store.get("categories") or []:
        accepted = c["category"] if isinstance(c["category"], list) else [c["category"]]
        contains = c["contains"] if isinstance(c["contains"], list) else [c["contains"]]
        got = [cat for t, cat in facts if _has(t, contains)]
        cats.append(
            {
                "contains": c["contains"],
                "accepted": accepted,
                "got": got,
                "ok": None if not got else all(g in accepted for g in got),
            }
        )
    return {
        "n_facts": len(facts),
        "kept": kept,
        "must_not_store_found": violations,
        "must_not_store_n": len(store.get("must_not_store") or []),
        "over_max": None if max_facts is None else len(facts) > max_facts,
        "categories": cats,
    }


@dataclass
class Share:
    k: int = 0
    n: int = 0

    def add(self, hit: bool | None) -> None:
        if hit is None:
            return
        self.n += 1
        self.k += int(hit)

    @property
    def value(self) -> float | None:
        return self.k / self.n if self.n else None

    def as_dict(self) -> dict[str, Any]:
        v = self.value
        return {"k": self.k, "n": self.n, "share": None if v is None else round(v, 4)}


@dataclass
class Tally:
    scenarios: int = 0
    probes: int = 0
    pending: int = 0
    category_missing: int = 0
    m: dict[str, Share] = field(default_factory=lambda: {key: Share() for _, key, _ in METRICS})

    def add(self, result: Mapping[str, Any]) -> None:
        """Count one scenario's result (``run_scenario``'s shape: ``store``, ``probes``)."""
        self.scenarios += 1
        self.pending += int(result.get("pending", 0))
        st = result["store"]
        for p in result["probes"]:
            self.probes += 1
            self.m["rank1"].add(p["rank1_ok"])
            self.m["stale"].add(p["stale_in_block"])
            if p["expect_empty"]:
                self.m["abst_recall"].add(p["empty"])
            if p["empty"]:
                self.m["abst_precision"].add(p["expect_empty"])
        self.m["smalltalk_stored"].add(st["over_max"])
        for entry in st["kept"]:
            self.m["kept"].add(entry["found"])
        for i in range(st["must_not_store_n"]):
            self.m["suggestions_stored"].add(i < len(st["must_not_store_found"]))
        for c in st["categories"]:
            if c["ok"] is None:
                self.category_missing += 1
            self.m["category"].add(c["ok"])

    def as_dict(self) -> dict[str, Any]:
        return {
            "scenarios": self.scenarios,
            "probes": self.probes,
            "pending": self.pending,
            "category_missing": self.category_missing,
            **{key: self.m[key].as_dict() for _, key, _ in METRICS},
        }


def summarize(results: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Metrics per kind (in ``KINDS`` order, kinds present only) and ``overall``."""
    by_kind: dict[str, Tally] = {}
    overall = Tally()
    for r in results:
        by_kind.setdefault(r["kind"], Tally()).add(r)
        overall.add(r)
    out = {k: by_kind[k].as_dict() for k in KINDS if k in by_kind}
    out["overall"] = overall.as_dict()
    return out


def _cell(m: Mapping[str, Any]) -> str:
    return "–" if not m["n"] else f"{m['share']:.2f} ({m['k']}/{m['n']})"


def markdown_table(summary: Mapping[str, Mapping[str, Any]]) -> str:
    """Kind x metric, each cell ``share (k/n)``; "–" where the kind does not test the metric."""
    head = ["kind", "scenarios", *(f"{label} {'↓' if low else '↑'}" for label, _, low in METRICS)]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * len(head)) + "|"]
    for kind, m in summary.items():
        name = f"**{kind}**" if kind == "overall" else kind
        row = [name, str(m["scenarios"]), *(_cell(m[key]) for _, key, _ in METRICS)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- running


def run_scenario(memory: Any, s: Mapping[str, Any], user_id: str) -> dict[str, Any]:
    """Feed one scenario's turns, read what was stored, ask its probes."""
    from mem_pipeline import ExtractionPendingError

    pending = 0
    adds = []
    for messages, at in exchanges(s["turns"]):
        try:
            res = memory.add(messages, user_id=user_id, timestamp=at)
            adds.append(
                {
                    "at": at,
                    "roles": [m["role"] for m in messages],
                    "events": len(res.events),
                    "decisions": [[e.event, e.text, e.reason] for e in res.events],
                }
            )
        except ExtractionPendingError as e:
            pending += 1
            adds.append({"at": at, "roles": [m["role"] for m in messages], "pending": str(e)[:200]})
    stored = [f for f in memory.get_all(user_id=user_id) if getattr(f, "kind", "fact") == "fact"]
    facts = [(f.text, getattr(f.category, "value", str(f.category))) for f in stored]
    store = judge_store(s.get("store") or {}, facts)
    probes = []
    for p in s.get("probes") or []:
        recall = memory.search(p["query"], user_id=user_id, limit=5, now=p["at"])
        block = recall.to_prompt()
        items = block_items(block)
        top = recall.hits[0].text if recall.hits else None
        verdict = judge_probe(p, top, items)
        probes.append(
            {
                "query": p["query"],
                "at": p["at"],
                **{k: p[k] for k in ("expect_top", "stale", "expect_empty") if k in p},
                **verdict,
                "hits": [
                    {"text": h.text, "score": round(h.score, 4), "category": h.category.value}
                    for h in recall.hits
                ],
                "block": block,
            }
        )
    return {
        "id": s["id"],
        "kind": s["kind"],
        "file": s.get("_file"),
        "note": s.get("note"),
        "pending": pending,
        "adds": adds,
        "stored": [{"text": t, "category": c} for t, c in facts],
        "store": store,
        "probes": probes,
    }


def _config(extractor: str, path: str, cassette: bool = False) -> Any:
    """The store's config. Under a cassette the endpoint and model default to the recorded ones
    (a dummy key: none is recorded), the timeout is long (a 2-core machine can take minutes on
    one call) and there are no transport retries (a replayed request not in the cassette fails
    at once, and a recording holds exactly the calls a replay makes)."""
    from mem_pipeline import MemoryConfig

    if extractor == "offline":
        return MemoryConfig(path=path)
    base_url, key = os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY")
    model = os.environ.get("MEM_PIPELINE_LLM_MODEL")
    if cassette:
        return MemoryConfig(
            path=path,
            llm="openai",
            llm_base_url=base_url or CASSETTE_URL,
            llm_api_key=key or "local",
            llm_model=model or CASSETTE_MODEL,
            llm_timeout_s=3600,
            llm_max_retries=0,
        )
    if not (base_url or key):
        raise SystemExit("--extractor llm needs OPENAI_BASE_URL and/or OPENAI_API_KEY")
    extra = {"llm_model": model} if model else {}  # else the library's default model
    return MemoryConfig(path=path, llm="openai", llm_base_url=base_url, llm_api_key=key, **extra)


def run(
    scenarios: Sequence[Mapping[str, Any]],
    extractor: str = "offline",
    *,
    cassette: bool = False,
    after: Callable[[], None] | None = None,
) -> dict[str, Any]:
    """Run every scenario on one fresh temporary store; the per-scenario results. ``after`` is
    called after each scenario (a recording saves its cassette there)."""
    from mem_pipeline import Memory

    nonce = uuid.uuid4().hex[:8]
    results = []
    with tempfile.TemporaryDirectory(prefix="mem-behaviour-") as tmp:
        config = _config(extractor, tmp, cassette)
        with Memory(config=config) as memory:
            for s in scenarios:
                t0 = time.perf_counter()
                r = run_scenario(memory, s, f"{s['id']}-{nonce}")
                r["seconds"] = round(time.perf_counter() - t0, 3)
                results.append(r)
                print(f"  {r['id']}: {_brief(r)}", file=sys.stderr)
                if after is not None:
                    after()
        model = config.llm_model if config.llm_configured else None
    return {"extractor": extractor, "llm_model": model, "results": results}


def _brief(r: Mapping[str, Any]) -> str:
    bad = []
    for p in r["probes"]:
        if p["rank1_ok"] is False:
            bad.append("rank-1")
        if p["stale_in_block"]:
            bad.append("stale")
        if p["expect_empty"] and not p["empty"]:
            bad.append("not empty")
    st = r["store"]
    bad += ["missing " + str(k["entry"]) for k in st["kept"] if not k["found"]]
    bad += ["stored " + x for x in st["must_not_store_found"]]
    if st["over_max"]:
        bad.append(f"{st['n_facts']} facts")
    bad += [f"category {c['got']} for {c['contains']}" for c in st["categories"] if c["ok"] is False]
    return "ok" if not bad else "; ".join(bad)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="a directory of *.json scenario files, or one")
    ap.add_argument("--extractor", choices=("offline", "llm"), default=None, help="offline (the default)")
    ap.add_argument("--json", default=None, help="write the summary and per-scenario details here")
    ap.add_argument("--kinds", nargs="+", choices=KINDS, default=None, help="only these kinds")
    ap.add_argument(
        "--cassette",
        default=None,
        help="run the LLM path under this vcrpy cassette: replay only, unless --record",
    )
    ap.add_argument("--record", action="store_true", help="with --cassette: record what the cassette lacks")
    args = ap.parse_args(argv)
    if args.record and not args.cassette:
        ap.error("--record needs --cassette")
    if args.cassette and args.extractor == "offline":
        ap.error("--cassette is for the LLM path (--extractor llm)")
    extractor = "llm" if args.cassette else (args.extractor or "offline")
    try:
        scenarios = load_scenarios(args.data)
    except DataError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.kinds:
        scenarios = [s for s in scenarios if s["kind"] in args.kinds]
    t0 = time.perf_counter()
    if args.cassette:
        from vcr.errors import CannotOverwriteExistingCassetteException

        from eval._cassette import tape

        if not args.record and not Path(args.cassette).exists():
            print(f"error: no cassette at {args.cassette} (record it with --record)", file=sys.stderr)
            return 3
        try:
            with tape(args.cassette, record=args.record) as cass:
                out = run(scenarios, extractor, cassette=True, after=cass.save if args.record else None)
        except CannotOverwriteExistingCassetteException as e:
            print(
                f"error: a request is not in {args.cassette}: the prompts, the model or the "
                f"pipeline's requests changed (record again with --record)\n{str(e).splitlines()[0]}",
                file=sys.stderr,
            )
            return 3
        verb = "recorded" if args.record else "not in the cassette"
        print(
            f"cassette {args.cassette}: {cass.requests} requests, {cass.live} {verb}, "
            f"{cass.played} of {cass.interactions} recorded ones replayed"
            + (f", {cass.pruned} unused dropped" if cass.pruned else ""),
            file=sys.stderr,
        )
        problems = cass.problems()
        tape_info: dict[str, Any] | None = {
            "path": args.cassette,
            "record": args.record,
            "requests": cass.requests,
            "live": cass.live,
            "interactions": cass.interactions,
            "played": cass.played,
        }
    else:
        out = run(scenarios, extractor)
        problems, tape_info = [], None
    summary = summarize(out["results"])
    table = markdown_table(summary)
    print(table)
    pending = summary["overall"]["pending"]
    if pending:
        print(f"\n{pending} add call(s) raised ExtractionPendingError (turns kept as pending)")
    if args.json:
        report = {
            "data": args.data,
            "extractor": out["extractor"],
            "llm_model": out["llm_model"],
            "cassette": tape_info,
            "kinds": args.kinds,
            "seconds": round(time.perf_counter() - t0, 1),
            "summary": summary,
            "table": table,
            "scenarios": out["results"],
        }
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    if problems:
        print("error: the replay does not match the cassette:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
