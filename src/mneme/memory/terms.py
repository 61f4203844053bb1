"""Lexical terms of a text for the lexical index: jieba words for Chinese, stemmed words for English."""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache
from typing import Any

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9]+")
_ASCII_WORD = re.compile(r"^[a-z0-9']+$")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


EN_STOP = _words(
    """a an the and or but if then of to in on at for with from by about as is are was were be been being
    am do does did doing have has had having i me my mine myself you your yours yourself he him his she her
    hers it its we us our ours they them their theirs this that these those what which who whom whose when
    where why how there here so too very can could would should will shall may might must not no nor just
    than also into out up down over under again further once all any both each few more most other some
    such only own same s t don doesn didn isn aren wasn weren hasn haven hadn won wouldn shouldn couldn ll
    re ve d m o y oh hey hi hello yeah yes wow really like get got go going went gonna please thanks
    thank ok okay"""
)
"""Function words, question words and chat fillers: they match everything and mean nothing."""

ZH_STOP = _words(
    """的 了 是 我 你 他 她 它 我们 你们 他们 她们 它们 在 吗 呢 吧 啊 呀 哦 嗯 哈 和 与 及 也 都 就 还 又 很 这 那
    这个 那个 这些 那些 什么 怎么 怎样 怎么样 哪 哪个 哪些 哪里 哪儿 谁 有 没 没有 一个 个 会 要 想 能 可以
    说 过 着 把 被 给 让 对 从 到 上 下 里 中 吗 么 之 以 为 而 但 但是 因为 所以 如果 或 或者 啦 嘛 咯 呗
    多少 几 为什么 如何 是不是 有没有 一下 一些 已经 现在 时候 一直 自己 真的 挺 比较 非常 特别 请 请问 告诉
    知道 记得 一 不 没 得 地"""
)
"""Chinese function words, pronouns and question words."""

_stemmer_lock = threading.Lock()
_stemmer: Any = None
_jieba_lock = threading.Lock()
_jieba: Any = None


def has_cjk(text: str) -> bool:
    """Whether a text contains Chinese characters."""
    return _CJK.search(text) is not None


def is_chinese(text: str) -> bool:
    """Whether a text is mainly Chinese (the query language decides the fusion weights)."""
    cjk = len(_CJK.findall(text))
    return cjk > 0 and cjk * 3 >= len(re.sub(r"\s", "", text))


def _stem_words(words: list[str]) -> list[str]:
    global _stemmer
    if _stemmer is None:
        with _stemmer_lock:
            if _stemmer is None:
                import Stemmer  # PyStemmer: Snowball stemmers in C

                _stemmer = Stemmer.Stemmer("english")
    stems: list[str] = _stemmer.stemWords(words)
    return stems


def _loaded() -> Any:
    """jieba, with its dictionary loaded (once, on the first Chinese text)."""
    global _jieba
    if _jieba is None:
        with _jieba_lock:
            if _jieba is None:
                import logging

                import jieba

                jieba.setLogLevel(logging.WARNING)
                jieba.initialize()
                _jieba = jieba
    return _jieba


def _cut(text: str) -> list[str]:
    """Words of a Chinese text by jieba."""
    words: list[str] = _loaded().lcut(text)
    return words


def dictionary_tag(word: str) -> str | None:
    """The part of speech jieba's dictionary gives a whole Chinese word, None if it holds no such word.

    "穆斯林" is `nz` (a proper noun that names no person), "钟表匠" `n`, "林黛玉" `nr` (a person);
    a name no dictionary holds ("张雨婷") gives None.
    """
    _loaded()
    import jieba.posseg

    tag: str | None = jieba.posseg.dt.word_tag_tab.get(word)
    return tag


def _english(words: list[str]) -> list[str]:
    """Stems of the words that carry meaning ("caroline's" gives "carolin" and a dropped "s")."""
    kept = [w for w in words if w not in EN_STOP]
    return _stem_words(kept) if kept else []


@lru_cache(maxsize=4096)
def _terms_cached(text: str) -> tuple[str, ...]:
    return tuple(_terms(text))


def _terms(text: str) -> list[str]:
    text = unicodedata.normalize("NFKC", text).casefold()
    if not has_cjk(text):
        return _english(_WORD.findall(text))
    out: list[str] = []
    ascii_words: list[str] = []
    for word in _cut(text):
        word = word.strip()
        if not word:
            continue
        if _ASCII_WORD.match(word):
            ascii_words.extend(_WORD.findall(word))
        elif has_cjk(word):
            if word not in ZH_STOP:
                out.append(word)
        else:  # numbers and mixed tokens such as "3点"
            out.extend(_WORD.findall(word))
    return out + _english(ascii_words)


def terms(text: str) -> list[str]:
    """The index terms of a text, in order, repeats kept (term frequency counts).

    English: lower-cased words without function words, Snowball-stemmed ("paintings" and
    "painted" both give "paint"). Chinese: jieba words without function words and
    punctuation; Latin words inside Chinese text get the English treatment.

    Args:
        text: Any text.

    Returns:
        The terms.
    """
    if len(text) <= 200:  # queries and short memories repeat: cache them
        return list(_terms_cached(text))
    return _terms(text)


__all__ = ["EN_STOP", "ZH_STOP", "has_cjk", "is_chinese", "terms"]
