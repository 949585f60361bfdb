"""The offline path's learned models' weights: JSON files in ``_data/``, each trained for one
embedder (its ``model_id``), read once per process."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np

__all__ = ["DATA", "Embeds", "read", "shipped"]

DATA = Path(__file__).resolve().parent.parent / "_data"


class Embeds(Protocol):
    """What the models embed with: the store's embedding cache, so that a sentence they look at
    is not embedded a second time when it is stored."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@lru_cache(maxsize=8)
def read(path: Path) -> dict[str, Any] | None:
    """The weights in ``path``, or None without the file (callers only read them)."""
    if not path.exists():
        return None
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def shipped(path: Path, model_id: str) -> dict[str, Any] | None:
    """The weights in ``path`` if they were trained for the embedder ``model_id``, else None."""
    weights = read(path)
    return weights if weights is not None and weights.get("model_id") == model_id else None
