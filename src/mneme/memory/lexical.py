"""The lexical index of one user's memories: BM25 over their terms, plus what filters and boosts read.

The index is a mirror of the store (see `mirror.py`), never the source of truth: it holds, per
memory, its terms and the few attributes that searching needs without touching the store
(space, session, speaker, times, sensitivity, importance, metadata for filters), in numpy
columns so that a filter or a score over 100,000 memories is a handful of vector operations.
Deleted or replaced memories leave a dead slot that is skipped, and the index compacts itself
when dead slots pile up.
"""

from __future__ import annotations

import bisect
import math
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from mneme.errors import InputError
from mneme.memory.dates import Period, parse_time, said_at
from mneme.memory.terms import has_cjk, terms

SPACES: tuple[str, ...] = ("profile", "semantic", "episodic", "archive")
"""Where a memory lives: one of the current kinds, or the archive of superseded versions."""

K1 = 1.2
"""BM25 term-frequency saturation (1.2 is the usual default; 0.9 to 2.0 changed LoCoMo recall@10
by under 0.005)."""
B = 0.75
"""BM25 length normalization."""

COVERAGE_DOCS = 1000
"""Coverage weighs query terms by how specific they would be among at least this many memories,
so that a user with three memories does not make every shared word look decisive."""

RECORD_FILTERS = frozenset(
    {
        "importance",
        "confidence",
        "sensitivity",
        "version",
        "confirmed",
        "subject",
        "value",
        "agent_id",
        "lang",
        "session_id",
        "speaker",
        "aspect",
        "aspects",
        "constraint",
    }
)
"""Filter keys that name a record attribute; any other key names a metadata key
(`metadata.<key>` always does)."""

_OPS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"})
_NEVER = math.inf


def check_filters(filters: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Validate metadata / record filters and normalize them to `{key: {op: operand}}`.

    Raises:
        InputError: for a key or an operator that is not supported, or a bad operand.
    """
    out: dict[str, dict[str, Any]] = {}
    if not filters:
        return out
    if not isinstance(filters, dict):
        raise InputError("mneme: filters must be a dict such as {'topic': 'travel'}")
    for key, cond in filters.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise InputError(f"mneme: unsupported filter key {key!r}")
        ops = cond if isinstance(cond, dict) else {"$eq": cond}
        for op, operand in ops.items():
            if op not in _OPS:
                raise InputError(f"mneme: unsupported filter operator {op!r} on {key!r}; use {sorted(_OPS)}")
            if op in ("$in", "$nin"):
                if not isinstance(operand, list | tuple) or not operand:
                    raise InputError(f"mneme: {op} on {key!r} needs a non-empty list")
            elif not isinstance(operand, str | int | float | bool) and operand is not None:
                raise InputError(f"mneme: the filter on {key!r} needs a scalar, got {operand!r}")
        out[key] = dict(ops)
    return out


def _matches(value: Any, ops: dict[str, Any]) -> bool:
    if isinstance(value, list | tuple):  # a list field matches when any of its elements does
        return _list_matches(list(value), ops)
    for op, operand in ops.items():
        try:
            if op == "$eq":
                ok = value == operand
            elif op == "$ne":
                ok = value != operand
            elif op == "$in":
                ok = value in operand
            elif op == "$nin":
                ok = value not in operand
            elif value is None:
                ok = False
            elif op == "$gt":
                ok = value > operand
            elif op == "$gte":
                ok = value >= operand
            elif op == "$lt":
                ok = value < operand
            else:
                ok = value <= operand
        except TypeError:  # comparing a string with a number: no match
            ok = False
        if not ok:
            return False
    return True


def _list_matches(values: list[Any], ops: dict[str, Any]) -> bool:
    for op, operand in ops.items():
        if op == "$eq":
            ok = operand == values or operand in values
        elif op == "$ne":
            ok = operand != values and operand not in values
        elif op == "$in":
            ok = any(v in operand for v in values)
        elif op == "$nin":
            ok = not any(v in operand for v in values)
        else:
            ok = any(_matches(v, {op: operand}) for v in values)
        if not ok:
            return False
    return True


def doc_allowed(
    doc: Doc,
    spaces: Iterable[str],
    *,
    now: float,
    max_sensitivity: int | None = None,
    session: str | None = None,
    filters: dict[str, dict[str, Any]] | None = None,
) -> bool:
    """The filters of `LexicalIndex.mask`, applied to one memory."""
    if doc.space not in spaces or doc.expires <= now:
        return False
    if max_sensitivity is not None and doc.sensitivity > max_sensitivity:
        return False
    if session is not None and doc.session != session:
        return False
    return all(_matches(doc.field(k), ops) for k, ops in (filters or {}).items())


def _ts(at: datetime | None, default: float) -> float:
    return at.timestamp() if at is not None else default


@dataclass(slots=True)
class Doc:
    """What the index keeps about one stored memory."""

    space: str
    key: str
    id: str
    content_hash: str
    session: str | None
    speaker: str | None
    said: float
    created: float
    updated: float
    expires: float
    sensitivity: int
    importance: float
    extras: dict[str, Any] = field(default_factory=dict)
    terms: list[str] = field(default_factory=list)

    def field(self, key: str) -> Any:
        """The value a filter key names: a record attribute, else a metadata key."""
        meta = self.extras.get("metadata") or {}
        if key.startswith("metadata."):
            return meta.get(key[len("metadata.") :])
        if key in RECORD_FILTERS:
            return self.extras.get(key)
        return meta.get(key)

    @classmethod
    def of(cls, space: str, key: str, value: dict[str, Any]) -> Doc:
        """Read a stored record value (any schema version: `text` or the old `memory`)."""
        text = str(value.get("text") or value.get("memory") or "")
        raw_meta, raw_source = value.get("metadata"), value.get("source")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        source: dict[str, Any] = raw_source if isinstance(raw_source, dict) else {}
        created = _ts(parse_time(value.get("created_at")), 0.0)
        speaker = meta.get("speaker") or source.get("speaker")
        try:
            importance = float(value.get("importance", 0.5))
            sensitivity = int(value.get("sensitivity", 0))
        except (TypeError, ValueError):
            importance, sensitivity = 0.5, 0
        return cls(
            space=space,
            key=key,
            id=str(value.get("id") or key),
            content_hash=str(value.get("content_hash") or ""),
            session=sys.intern(str(source["thread_id"])) if source.get("thread_id") else None,
            speaker=sys.intern(str(speaker)) if speaker else None,
            said=_ts(said_at(value), created),
            created=created,
            updated=_ts(parse_time(value.get("updated_at")), created),
            expires=_ts(parse_time(value.get("expires_at")), _NEVER),
            sensitivity=sensitivity,
            importance=importance,
            extras={
                **{k: v for k in RECORD_FILTERS if (v := value.get(k)) is not None},
                **({"session_id": source["thread_id"]} if source.get("thread_id") else {}),
                **({"speaker": speaker} if speaker else {}),
                **({"metadata": meta} if meta else {}),
                **({} if value.get("aspect") else _legacy_aspect(value.get("subject"))),
            },
            terms=terms(text),
        )


def _legacy_aspect(subject: Any) -> dict[str, Any]:
    """The aspect of a profile field stored before aspects existed (schema 2), if it has one."""
    from mneme.memory.record import legacy_aspect

    aspect = legacy_aspect(subject)
    return {"aspect": aspect, "aspects": [aspect]} if aspect else {}


class _Postings:
    """The documents containing one term, with the term's frequency in each (append-only)."""

    __slots__ = ("docs", "n", "tfs")

    def __init__(self) -> None:
        self.docs = np.empty(4, dtype=np.int32)
        self.tfs = np.empty(4, dtype=np.float32)
        self.n = 0

    def add(self, doc: int, tf: float) -> None:
        if self.n == len(self.docs):
            self.docs = np.resize(self.docs, 2 * self.n)
            self.tfs = np.resize(self.tfs, 2 * self.n)
        self.docs[self.n] = doc
        self.tfs[self.n] = tf
        self.n += 1


@dataclass
class LexicalScores:
    """BM25 of one query over every slot of the index."""

    bm25: np.ndarray
    """BM25 score per slot (0 where no query term occurs)."""
    coverage: np.ndarray
    """Share (0..1) of the query's terms (weighted by specificity) that occur in each slot: an
    absolute measure of lexical match, comparable across queries (BM25 itself is not)."""
    matched: np.ndarray
    """Slots containing at least one query term."""


_COLUMNS: dict[str, tuple[type, Any]] = {
    "alive": (np.bool_, False),
    "space": (np.int8, -1),
    "session": (np.int32, -1),
    "speaker": (np.int32, -1),
    "said": (np.float64, 0.0),
    "created": (np.float64, 0.0),
    "updated": (np.float64, 0.0),
    "expires": (np.float64, _NEVER),
    "sensitivity": (np.int16, 0),
    "importance": (np.float32, 0.5),
    "length": (np.float32, 0.0),
    "prev": (np.int32, -1),
    "next": (np.int32, -1),
    "use_count": (np.float32, 0.0),
    "last_used": (np.float64, 0.0),
}


_BULK_COLUMNS = (
    "space",
    "session",
    "speaker",
    "said",
    "created",
    "updated",
    "expires",
    "sensitivity",
    "importance",
    "use_count",
    "last_used",
)


class LexicalIndex:
    """BM25 and attribute columns over one user's memories (current ones and the archive)."""

    def __init__(self) -> None:
        self.n = 0
        """Slots used (live and dead)."""
        self.version = 0
        """Bumped at every change (caches of filter masks key on it)."""
        self.cols: dict[str, np.ndarray] = {
            name: np.full(16, d, dtype=t) for name, (t, d) in _COLUMNS.items()
        }
        self.docs: list[Doc | None] = []
        self._doc_terms: list[tuple[np.ndarray, np.ndarray]] = []
        self.slot_of: dict[tuple[str, str], int] = {}
        self.vocab: dict[str, int] = {}
        self.postings: list[_Postings] = []
        self.df = np.zeros(16, dtype=np.int32)
        self.live = np.zeros(len(SPACES), dtype=np.int64)
        self.total_length = 0.0
        self.sessions: dict[str, int] = {}
        self._members: dict[int, list[tuple[float, float, int]]] = {}
        self.speakers: dict[str, int] = {}
        self.speaker_names: list[str] = []
        self._speaker_live: list[int] = []
        self._speaker_patterns: dict[int, re.Pattern[str]] = {}
        self._mask_cache: dict[str, np.ndarray] = {}
        self.id_slot: dict[str, int] = {}
        """Slot of each current memory (not archived versions) by memory id."""
        self.usage: dict[str, tuple[float, float]] = {}
        """(use count, last use as a POSIX time) by memory id."""

    # -- size ---------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Live memories in the index."""
        return int(self.live.sum())

    def count(self, space: str) -> int:
        """Live memories of one space."""
        return int(self.live[SPACES.index(space)])

    def _grow(self, need: int) -> None:
        cap = len(self.cols["alive"])
        if need <= cap:
            return
        new = max(need, cap * 2)
        for name, arr in self.cols.items():
            grown = np.full(new, _COLUMNS[name][1], dtype=arr.dtype)
            grown[: self.n] = arr[: self.n]
            self.cols[name] = grown

    def _term_id(self, term: str) -> int:
        tid = self.vocab.get(term)
        if tid is None:
            tid = len(self.postings)
            self.vocab[term] = tid
            self.postings.append(_Postings())
            if tid >= len(self.df):
                self.df = np.resize(self.df, 2 * len(self.df))
                self.df[tid:] = 0
        return tid

    def _code(self, table: dict[str, int], value: str | None) -> int:
        if value is None:
            return -1
        code = table.get(value)
        if code is None:
            code = len(table)
            table[value] = code
        return code

    # -- changes ----------------------------------------------------------------------------------

    def upsert(self, space: str, key: str, value: dict[str, Any]) -> None:
        """Add or replace the memory stored under (space, key)."""
        self.put(Doc.of(space, key, value))

    def put(self, doc: Doc, *, link: bool = True) -> int:
        """Add or replace a parsed memory; returns its slot."""
        counts: dict[int, int] = {}
        for term in doc.terms:
            tid = self._term_id(term)
            counts[tid] = counts.get(tid, 0) + 1
        doc.terms = []  # kept as term ids from here on
        tids = np.fromiter(counts.keys(), dtype=np.int32, count=len(counts))
        tfs = np.fromiter(counts.values(), dtype=np.float32, count=len(counts))
        return self._put_parsed(doc, tids, tfs, link=link)

    def _put_parsed(self, doc: Doc, tids: np.ndarray, tfs: np.ndarray, *, link: bool) -> int:
        self.remove(doc.space, doc.key)
        slot = self.n
        self._grow(slot + 1)
        self.n += 1
        self.version += 1
        for tid, tf in zip(tids.tolist(), tfs.tolist(), strict=True):
            self.postings[tid].add(slot, tf)
        if len(tids):
            self.df[tids] += 1
        speaker = self._speaker_code(doc.speaker)
        c = self.cols
        c["alive"][slot] = True
        c["space"][slot] = SPACES.index(doc.space)
        c["session"][slot] = self._code(self.sessions, doc.session)
        c["speaker"][slot] = speaker
        c["said"][slot] = doc.said
        c["created"][slot] = doc.created
        c["updated"][slot] = doc.updated
        c["expires"][slot] = doc.expires
        c["sensitivity"][slot] = doc.sensitivity
        c["importance"][slot] = doc.importance
        length = float(tfs.sum()) if len(tfs) else 0.0
        c["length"][slot] = length
        c["prev"][slot] = c["next"][slot] = -1
        self.docs.append(doc)
        self._doc_terms.append((tids, tfs))
        self.slot_of[(doc.space, doc.key)] = slot
        if doc.space != "archive":
            self.id_slot[doc.id] = slot
        c["use_count"][slot], c["last_used"][slot] = self.usage.get(doc.id, (0.0, 0.0))
        self.live[c["space"][slot]] += 1
        self.total_length += length
        if speaker >= 0:
            self._speaker_live[speaker] += 1
        if link:
            self._link(slot)
        return slot

    def _speaker_code(self, name: str | None) -> int:
        if not name:
            return -1
        key = name.casefold()
        code = self.speakers.get(key)
        if code is None:
            code = len(self.speaker_names)
            self.speakers[key] = code
            self.speaker_names.append(name)
            self._speaker_live.append(0)
        return code

    def remove(self, space: str, key: str) -> bool:
        """Forget the memory stored under (space, key); False if it was not indexed."""
        slot = self.slot_of.pop((space, key), None)
        if slot is None:
            return False
        self.version += 1
        c = self.cols
        self._unlink(slot)
        c["alive"][slot] = False
        self.live[c["space"][slot]] -= 1
        tids, tfs = self._doc_terms[slot]
        if len(tids):
            self.df[tids] -= 1
        self.total_length -= float(tfs.sum()) if len(tfs) else 0.0
        speaker = int(c["speaker"][slot])
        if speaker >= 0:
            self._speaker_live[speaker] -= 1
        doc = self.docs[slot]
        if doc is not None and self.id_slot.get(doc.id) == slot:
            del self.id_slot[doc.id]
        self.docs[slot] = None
        self._doc_terms[slot] = (np.empty(0, np.int32), np.empty(0, np.float32))
        if self.n - self.size > max(1000, self.n // 4):
            self.compact()
        return True

    def bulk(self, docs: Iterable[Doc]) -> None:
        """Load many memories into an empty index at once (a full load).

        Columns and postings are built as whole arrays, and sessions linked once at the end.
        """
        docs = list(docs)
        if self.n or not docs:
            for doc in docs:
                self.put(doc, link=False)
            self._relink_all()
            return
        k = len(docs)
        self._grow(k)
        term_ids: list[int] = []
        doc_of: list[int] = []
        freqs: list[int] = []
        spans: list[tuple[int, int]] = []
        values: dict[str, list[Any]] = {name: [] for name in _BULK_COLUMNS}
        for slot, doc in enumerate(docs):
            counts = Counter(doc.terms)
            doc.terms = []
            start = len(term_ids)
            term_ids.extend(self._term_id(t) for t in counts)
            freqs.extend(counts.values())
            doc_of.extend([slot] * len(counts))
            spans.append((start, len(term_ids)))
            values["space"].append(SPACES.index(doc.space))
            values["session"].append(self._code(self.sessions, doc.session))
            speaker = self._speaker_code(doc.speaker)
            values["speaker"].append(speaker)
            if speaker >= 0:
                self._speaker_live[speaker] += 1
            values["said"].append(doc.said)
            values["created"].append(doc.created)
            values["updated"].append(doc.updated)
            values["expires"].append(doc.expires)
            values["sensitivity"].append(doc.sensitivity)
            values["importance"].append(doc.importance)
            use = self.usage.get(doc.id, (0.0, 0.0))
            values["use_count"].append(use[0])
            values["last_used"].append(use[1])
            self.slot_of[(doc.space, doc.key)] = slot
            if doc.space != "archive":
                self.id_slot[doc.id] = slot
        tids = np.asarray(term_ids, dtype=np.int32)
        tfs = np.asarray(freqs, dtype=np.float32)
        owners = np.asarray(doc_of, dtype=np.int32)
        for name, column in values.items():
            self.cols[name][:k] = column
        self.cols["alive"][:k] = True
        lengths = np.bincount(owners, weights=tfs, minlength=k)
        self.cols["length"][:k] = lengths
        self.total_length = float(lengths.sum())
        self.live = np.bincount(self.cols["space"][:k], minlength=len(SPACES)).astype(np.int64)
        self.docs = list(docs)
        self._doc_terms = [(tids[a:b], tfs[a:b]) for a, b in spans]
        self.n = k
        if len(tids):
            order = np.argsort(tids, kind="stable")
            sorted_t = tids[order]
            cuts = np.nonzero(np.diff(sorted_t))[0] + 1
            starts = np.r_[0, cuts]
            ends = np.r_[cuts, len(sorted_t)]
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                post = self.postings[int(sorted_t[a])]
                post.docs = owners[order[a:b]].copy()
                post.tfs = tfs[order[a:b]].copy()
                post.n = b - a
            terms_known = len(self.postings)
            self.df[:terms_known] = np.bincount(tids, minlength=terms_known)[:terms_known]
        self.version += 1
        self._relink_all()

    def set_usage(self, memory_id: str, count: float, last_used: float) -> None:
        """Record how often a memory was used (injected or shown by a tool), and when last."""
        self.usage[memory_id] = (count, last_used)
        slot = self.id_slot.get(memory_id)
        if slot is not None:
            self.cols["use_count"][slot] = count
            self.cols["last_used"][slot] = last_used

    # -- sessions: the order of episodes within a conversation ------------------------------------

    def _sort_key(self, slot: int) -> tuple[float, float, int]:
        c = self.cols
        return (float(c["said"][slot]), float(c["created"][slot]), slot)

    def _linkable(self, slot: int) -> bool:
        return bool(self.cols["session"][slot] >= 0 and SPACES[self.cols["space"][slot]] == "episodic")

    def _link(self, slot: int) -> None:
        if not self._linkable(slot):
            return
        members = self._members.setdefault(int(self.cols["session"][slot]), [])
        key = self._sort_key(slot)
        i = bisect.bisect_left(members, key)
        members.insert(i, key)
        self._relink(members, max(0, i - 1), min(len(members), i + 2))

    def _unlink(self, slot: int) -> None:
        if not self._linkable(slot):
            return
        members = self._members.get(int(self.cols["session"][slot]), [])
        key = self._sort_key(slot)
        i = bisect.bisect_left(members, key)
        if i < len(members) and members[i] == key:
            members.pop(i)
            self._relink(members, max(0, i - 1), min(len(members), i + 1))

    def _relink(self, members: list[tuple[float, float, int]], lo: int, hi: int) -> None:
        prev, nxt = self.cols["prev"], self.cols["next"]
        for i in range(lo, hi):
            slot = members[i][2]
            prev[slot] = members[i - 1][2] if i > 0 else -1
            nxt[slot] = members[i + 1][2] if i + 1 < len(members) else -1

    def _relink_all(self) -> None:
        self._members = {}
        for slot in range(self.n):
            if self.cols["alive"][slot] and self._linkable(slot):
                self._members.setdefault(int(self.cols["session"][slot]), []).append(self._sort_key(slot))
        for members in self._members.values():
            members.sort()
            self._relink(members, 0, len(members))

    def compact(self) -> None:
        """Drop dead slots: rebuild columns and postings from the live memories."""
        keep = [(self.docs[s], self._doc_terms[s]) for s in range(self.n) if self.cols["alive"][s]]
        vocab = list(self.vocab)  # in id order, so that kept term ids stay valid
        version, usage = self.version, self.usage
        self.__init__()  # type: ignore[misc]
        self.usage = usage
        for term in vocab:
            self._term_id(term)
        for doc, (tids, tfs) in keep:
            assert doc is not None
            self._put_parsed(doc, tids, tfs, link=False)
        self._relink_all()
        self.version = version + 1

    # -- reading -----------------------------------------------------------------------------------

    def idf(self, tids: np.ndarray) -> np.ndarray:
        """BM25 idf of term ids (a term no memory has gets the highest idf)."""
        n = max(self.size, 1)
        df = self.df[tids].astype(np.float64) if len(tids) else np.empty(0)
        return np.log1p((n - df + 0.5) / (df + 0.5))

    def score(self, query_terms: list[str]) -> LexicalScores:
        """BM25 and coverage of a query over every slot (dead slots included: mask them)."""
        n = self.n
        bm25 = np.zeros(n, dtype=np.float32)
        coverage = np.zeros(n, dtype=np.float32)
        matched = np.zeros(n, dtype=bool)
        qcounts: dict[str, int] = {}
        for t in query_terms:
            qcounts[t] = qcounts.get(t, 0) + 1
        if not qcounts or n == 0:
            return LexicalScores(bm25, coverage, matched)
        live_n = max(self.size, 1)
        prior_n = max(live_n, COVERAGE_DOCS)
        avgdl = max(self.total_length / live_n, 1.0)
        length = self.cols["length"][:n]
        total_idf = 0.0
        for term, qtf in qcounts.items():
            tid = self.vocab.get(term)
            df = int(self.df[tid]) if tid is not None else 0
            specificity = math.log1p((prior_n - df + 0.5) / (df + 0.5))
            total_idf += specificity
            if tid is None or df <= 0:
                continue
            idf = float(self.idf(np.array([tid]))[0])
            post = self.postings[tid]
            docs, tfs = post.docs[: post.n], post.tfs[: post.n]
            denom = tfs + K1 * (1.0 - B + B * length[docs] / avgdl)
            bm25[docs] += qtf * idf * tfs * (K1 + 1.0) / denom
            coverage[docs] += specificity
            matched[docs] = True
        if total_idf > 0:
            coverage /= total_idf
        return LexicalScores(bm25, coverage, matched)

    def mask(
        self,
        spaces: Iterable[str],
        *,
        now: float,
        max_sensitivity: int | None = None,
        session: str | None = None,
        filters: dict[str, dict[str, Any]] | None = None,
    ) -> np.ndarray:
        """Slots a search may return: alive, in these spaces, not expired, allowed by every filter."""
        c, n = self.cols, self.n
        codes = [SPACES.index(s) for s in spaces]
        allowed = c["alive"][:n] & np.isin(c["space"][:n], codes) & (c["expires"][:n] > now)
        if max_sensitivity is not None:
            allowed &= c["sensitivity"][:n] <= max_sensitivity
        if session is not None:
            code = self.sessions.get(session, -2)
            allowed &= c["session"][:n] == code
        if filters:
            allowed &= self._filter_mask(filters)
        return allowed

    def _filter_mask(self, filters: dict[str, dict[str, Any]]) -> np.ndarray:
        import json

        key = f"{self.version}:{json.dumps(filters, sort_keys=True, default=str)}"
        cached = self._mask_cache.get(key)
        if cached is not None and len(cached) == self.n:
            return cached
        out = np.zeros(self.n, dtype=bool)
        for slot, doc in enumerate(self.docs):
            if doc is None:
                continue
            out[slot] = all(_matches(doc.field(k), ops) for k, ops in filters.items())
        if len(self._mask_cache) > 32:
            self._mask_cache.clear()
        self._mask_cache[key] = out
        return out

    def named_speakers(self, query: str) -> list[int]:
        """Codes of the known speakers a query names ("What did Melanie paint?")."""
        out = []
        folded = query.casefold()
        for code, name in enumerate(self.speaker_names):
            if self._speaker_live[code] <= 0:
                continue
            key = name.casefold()
            if has_cjk(key):
                if key in folded:
                    out.append(code)
                continue
            pattern = self._speaker_patterns.get(code)
            if pattern is None:
                pattern = re.compile(rf"(?<![\w]){re.escape(key)}(?![\w])")
                self._speaker_patterns[code] = pattern
            if pattern.search(folded):
                out.append(code)
        return out

    def said_in(self, periods: list[Period], slots: np.ndarray, slack_after_days: int) -> np.ndarray:
        """Which of `slots` were said within one of the periods (or a few days after)."""
        out = np.zeros(len(slots), dtype=bool)
        if not periods or not len(slots):
            return out
        said = self.cols["said"][slots]
        days = [datetime.fromtimestamp(float(s), UTC).date() if s > 0 else None for s in said]
        for i, day in enumerate(days):
            if day is not None and any(p.contains(day, slack_after_days) for p in periods):
                out[i] = True
        return out

    def doc(self, slot: int) -> Doc:
        """The memory in a live slot."""
        doc = self.docs[slot]
        if doc is None:
            raise KeyError(slot)
        return doc


__all__ = ["RECORD_FILTERS", "SPACES", "Doc", "LexicalIndex", "LexicalScores", "check_filters", "doc_allowed"]
