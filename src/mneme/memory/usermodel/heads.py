"""The user model's classifiers: what a statement is about, and what a request touches, read from E5 vectors."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mneme.classifier import Heads, unit
from mneme.memory.usermodel.refer import gives_pet_name, pet_subject
from mneme.memory.usermodel.taxonomy import OTHERS_ASPECT, taxonomy

WEIGHTS = "user_model"
"""`mneme/data/user_model.npz`: the heads, trained by `python -m mneme.memory.usermodel.train`."""

HEADS = Heads(WEIGHTS, trainer="mneme.memory.usermodel.train")
"""`memorable` (does a statement say something about the speaker worth keeping), `aspect`,
`constraint` (is it a hard limit), `change` (does it revise an earlier state), `domain` (of a
request), `local` (does a request's answer depend on where the person is), `supersedes` (does a
statement replace a given earlier one: read on the pair), `forget` (does a message ask the agent
to forget something it knows about the speaker; read with the neighbour vote `forget_vote`),
`whose` (is a statement about the speaker, a family member or someone else: "我哥住在成都" is
the brother's home, not the speaker's), `pet` (is a line about the speaker's pet lasting, "我家狗
对鸡肉过敏", or a passing remark, "My cat Mochi fell asleep in the sink"), `given_name` (is one
word a person's given name: "Oluwaseun", "Kathryn"; not "Canadian", "Monday")."""

DOMAIN_FLOOR = 0.2
"""A domain less likely than this share of the most likely one touches nothing (the tail of a
softmax is noise)."""
RANK_DECAY = 0.12
"""A domain's aspects weigh 1.0, then this much less per place in its list, down to `RANK_MIN`."""
RANK_MIN = 0.4
EVERYWHERE = 0.5
"""The touch every request has on an aspect marked `everywhere` in the taxonomy."""
PET_LASTING = 0.1
"""A statement about the speaker's pet that the `pet` head reads below this is a passing remark,
not worth keeping however the `memorable` head reads it ("My dog just stole a sock and ran off
lol"). Chosen by cross-validation on the tuning half of the helpers' pet lines: the highest step
that loses none of the lasting facts the `memorable` head keeps (0.3 would leave 13 more of 107
passing remarks alone and lose 2 of 143 facts, among them changes said with "now")."""
WISH_KEEP = 0.85
"""A statement read as an instruction to the assistant (`communication`, `boundary`) that the
`standing` head reads at least this surely as a wish about every later answer is kept however
low the `memorable` head reads it: "以后用英文回答我" (memorable 0.20) and "Keep your answers
short." (0.14) read as requests. Chosen on the standing-wish set's report half (0.5 kept 12 more
wishes for 10 more one-off requests, 0.85 8 for 1); a third set held out (docs/benchmarks.md)."""
PET_KEEP = 0.7
"""...and one it reads at least this lasting is kept however low the `memorable` head reads it
("我家小猫（芝麻）不能喝牛奶，喝了会吐": memorable 0.36, pet 0.95). Chosen by cross-validation on
the same tuning half: lasting facts kept 129 → 139 of 143, passing remarks left alone 82 → 81
of 107 (0.5 keeps 2 more facts and 2 more remarks)."""
NEAR_ASPECT = 0.15
"""Aspects read with at least this probability besides the best one are kept as alternatives
(a revision may replace a memory under any of them)."""


def _local() -> object:
    from mneme.embeddings import resolve_embeddings

    return resolve_embeddings("local")


def passage_vectors(texts: Sequence[str]) -> np.ndarray:
    """E5 passage vectors of statements (the bundled model, whatever embeddings the store uses)."""
    if not texts:
        return np.zeros((0, 384), dtype=np.float32)
    emb = _local()
    return unit(emb.embed_documents(list(texts)))  # type: ignore[attr-defined]


def query_vector(text: str) -> np.ndarray:
    """The E5 query vector of a request (cached: the read path embeds the same text)."""
    emb = _local()
    return unit(emb.embed_query(text))[0]  # type: ignore[attr-defined]


def given_name(words: Sequence[str]) -> list[float]:
    """How likely each word is a person's given name, read on its E5 query vector.

    The head was trained on census given names against the words of the examples, so it
    carries to names no list holds ("Oluwaseun", "Siobhan", "Aarav"). A word typed in lower
    case is read capitalised ("im tom").
    """
    if not words:
        return []
    vecs = np.vstack([query_vector(w[:1].upper() + w[1:]) for w in words])
    return [float(p) for p in HEADS["given_name"].prob(vecs, "yes")]


@dataclass(frozen=True)
class Reading:
    """What the classifiers read in one statement."""

    text: str
    memorable: float
    """Probability that it says something about the speaker worth keeping."""
    aspect: str
    """The most likely aspect."""
    aspect_p: float
    """Its probability."""
    constraint: float
    """Probability that it is a hard limit (an allergy, a diet, a fear, a boundary)."""
    change: float
    """Probability that it revises an earlier state ("moved to Shanghai last month")."""
    aspects: tuple[str, ...] = ()
    """The likely aspects, best first (the top one and any other above `NEAR_ASPECT`)."""
    forget: float = 0.0
    """Probability that it asks the agent to forget something about the speaker ("邮箱那个就当我没说过")."""
    others: float = 0.0
    """Probability that it is about someone else than the speaker: a family member ("My brother
    lives in Perth"), a friend, a colleague ("小王在阿里上班")."""
    correction: float = 0.0
    """Probability that it says something the speaker told before was wrong ("你记岔了，豆豆是比熊
    不是泰迪", "oops, I meant legal secretary, not paralegal")."""
    about: str = ""
    """The most likely aspect other than the people in the speaker's life: what a statement about
    a family member is about ("我老公对海鲜过敏": allergy, "my wife works at Amazon": employer)."""
    area_p: float = 0.0
    """Probability that it is about the part of life its aspect belongs to (the aspect's and its
    neighbours' together: "work as a dental hygienist" reads employer 0.36, occupation 0.33)."""
    supposition: float = 0.0
    """Probability that a conditional sentence supposes, plans, wishes or asks ("If I move to Berlin
    next year, which area?", "要是我中了彩票…") rather than tells how the speaker is ("If I have
    coffee after 2pm, I'm awake until 3am"); read on conditionals only (`statements.supposes`)."""
    request: float = 0.0
    """Probability that it asks the assistant for something ("帮我准备几句祝酒词", "can you suggest
    some wineries?") rather than tells something about the speaker."""


def read_statements(texts: Sequence[str], vectors: np.ndarray | None = None) -> list[Reading]:
    """Read statements (one E5 passage vector each, computed unless given)."""
    if not texts:
        return []
    vecs = passage_vectors(texts) if vectors is None else unit(vectors)
    # the neighbour vote only lowers what the head reads: it is there for the chat glue the head
    # reads as lasting ("never mind, I found it" 0.84); near a routine, a one-off ("下周三去医院复查")
    # gets the votes of the routines
    head = HEADS["memorable"].prob(vecs, "yes")
    memorable = np.minimum(head, (head + HEADS.vote("memorable_vote").prob(vecs, "yes")) / 2)
    aspect_head = HEADS["aspect"]
    aspects = aspect_head.probs(vecs)
    constraint = HEADS["constraint"].prob(vecs, "yes")
    change = HEADS["change"].prob(vecs, "yes")
    pets = [i for i, t in enumerate(texts) if pet_subject(t) and not gives_pet_name(t)]
    if pets:  # the `pet` head judges a line about the pet: a passing remark, or a lasting fact
        memorable = memorable.copy()
        lasting = HEADS["pet"].prob(vecs[pets], "yes")
        at = np.array(pets)
        memorable[at] = np.where(lasting >= PET_KEEP, np.maximum(memorable[at], lasting), memorable[at])
        memorable[at[lasting < PET_LASTING]] = 0.0  # (a line giving its name is never passing)
    tax = taxonomy()
    wishes = [i for i, k in enumerate(np.argmax(aspects, axis=1)) if tax.instruction(aspect_head.labels[k])]
    if wishes:  # the `standing` head judges an instruction: for every later answer, or this one
        memorable = memorable.copy()
        at = np.array(wishes)
        standing = HEADS["standing"].prob(vecs[at], "yes")
        memorable[at] = np.where(standing >= WISH_KEEP, np.maximum(memorable[at], standing), memorable[at])
    forget = (HEADS["forget"].prob(vecs, "yes") + HEADS.vote("forget_vote").prob(vecs, "yes")) / 2
    others = 1.0 - HEADS["whose"].prob(vecs, "self")
    correction = HEADS["correction"].prob(vecs, "yes")
    supposition = HEADS["supposition"].prob(vecs, "yes")
    request = HEADS["request"].prob(vecs, "yes")
    areas = [tax.aspects[a].area if a in tax.aspects else a for a in aspect_head.labels]
    out = []
    for i, text in enumerate(texts):
        best = int(np.argmax(aspects[i]))
        area_p = float(sum(p for p, area in zip(aspects[i], areas, strict=True) if area == areas[best]))
        order = np.argsort(-aspects[i])
        near = tuple(aspect_head.labels[j] for j in order[:3] if j == best or aspects[i, j] >= NEAR_ASPECT)
        about = next((aspect_head.labels[j] for j in order if aspect_head.labels[j] != OTHERS_ASPECT), "")
        out.append(
            Reading(
                text=text,
                memorable=float(memorable[i]),
                aspect=aspect_head.labels[best],
                aspect_p=float(aspects[i, best]),
                constraint=float(constraint[i]),
                change=float(change[i]),
                aspects=near,
                forget=float(forget[i]),
                others=float(others[i]),
                correction=float(correction[i]),
                about=about,
                area_p=area_p,
                supposition=float(supposition[i]),
                request=float(request[i]),
            )
        )
    return out


def outsider_of(texts: Sequence[str]) -> np.ndarray:
    """Probability that each statement is about someone outside the speaker's family (`whose` head)."""
    if not texts:
        return np.zeros(0)
    return HEADS["whose"].prob(passage_vectors(texts), "other")


def pair_features(old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """What the `supersedes` head reads of (earlier statement, new statement) pairs.

    The new statement itself, what the two share (their product) and where the new one moved
    away from the old (their difference): "我住杭州" and "上个月搬到上海了" share a place and
    differ in which, "我坐轮椅" and "我怀孕了" share little but health. Rows of `old` pair with
    the rows of `new` (one row of `new` pairs with every row of `old`).
    """
    old, new = unit(old), unit(new)
    new = np.broadcast_to(new, old.shape)
    return np.hstack([new, old * new, new - old]).astype(np.float32)


def supersedes(old: Sequence[str], new: str) -> np.ndarray:
    """The probability that `new` replaces each of `old` (earlier statements of the same person).

    A change of mind ("I'm vegetarian" then "Had the best steak of my life last night") against
    a statement that stands beside the old one ("我坐轮椅" then "我怀孕了"): read on the pair,
    not on the new statement alone, which is all the `change` head sees.
    """
    if not old:
        return np.zeros(0)
    vecs = passage_vectors([*old, new])
    return HEADS["supersedes"].prob(pair_features(vecs[:-1], vecs[-1:]), "yes")


def aspect_certainty(text: str, aspect: str) -> float:
    """How surely the `aspect` head reads a statement as of one aspect (its passage vector only)."""
    head = HEADS["aspect"]
    return float(head.prob(passage_vectors([text]), aspect)[0]) if aspect in head.labels else 0.0


def passing(texts: Sequence[str]) -> np.ndarray:
    """The probability that each statement about the speaker holds only for now or once.

    A trip ("这周在上海出差，周五回去"), a treat ("treated myself to a pumpkin spice latte today"), a
    week off with a cold: against a lasting fact or change said as casually ("我调到上海分公司了").
    """
    if not texts:
        return np.zeros(0)
    return HEADS["passing"].prob(np.stack([query_vector(t) for t in texts]), "yes")


def domains_of(vector: np.ndarray) -> dict[str, float]:
    """The probability of each request domain for a request's E5 query vector."""
    head = HEADS["domain"]
    probs = head.probs(vector)[0]
    return {label: float(p) for label, p in zip(head.labels, probs, strict=True)}


def local_of(vector: np.ndarray) -> float:
    """The probability that a request's answer depends on where the person lives or is.

    The weather, somewhere to eat nearby, a commute; read on the request's E5 query vector.
    """
    return float(HEADS["local"].prob(vector, "yes")[0])


def touched(domains: dict[str, float]) -> dict[str, float]:
    """How much a request touches each aspect (0..1), from its domain probabilities.

    Each domain lists the aspects it touches, most important first. A domain counts by its
    probability relative to the most likely one (a request the head reads as 45% dining and
    30% cooking touches both); an aspect's weight is the best over domains of that share
    times the aspect's rank weight in the domain.
    """
    tax = taxonomy()
    top = max(domains.values(), default=0.0)
    out: dict[str, float] = {a.key: EVERYWHERE for a in tax.aspects.values() if a.everywhere}
    if top <= 0:
        return out
    for key, p in domains.items():
        share = p / top
        if share < DOMAIN_FLOOR or key not in tax.domains:
            continue
        for rank, aspect in enumerate(tax.domains[key].aspects):
            w = share * max(RANK_MIN, 1.0 - RANK_DECAY * rank)
            out[aspect] = max(out.get(aspect, 0.0), w)
    return out


ITEM_DOMAINS = 5
"""A memory keeps its this-many most likely domains."""


def item_domains(text: str) -> dict[str, float]:
    """The request domains a statement matters for: the domain head read on it as on a request."""
    ranked = sorted(domains_of(query_vector(text)).items(), key=lambda kv: -kv[1])[:ITEM_DOMAINS]
    return {k: round(v, 3) for k, v in ranked if v >= 0.01}


def overlap(request: dict[str, float], item: dict[str, float]) -> float:
    """How alike two domain distributions are (cosine, 0..1)."""
    if not request or not item:
        return 0.0
    dot = sum(p * item.get(k, 0.0) for k, p in request.items())
    norm = math.sqrt(sum(p * p for p in request.values())) * math.sqrt(sum(p * p for p in item.values()))
    return dot / norm if norm else 0.0
