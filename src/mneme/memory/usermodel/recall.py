"""The read side of the user model: what a request's domain touches of a person, whatever words it uses."""

from __future__ import annotations

from dataclasses import dataclass

from langgraph.store.base import BaseStore

from mneme.memory.extract import own_fields
from mneme.memory.record import MemoryHit
from mneme.memory.search import SearchSettings, search
from mneme.memory.usermodel.heads import (
    aspect_certainty,
    domains_of,
    local_of,
    overlap,
    query_vector,
    touched,
)
from mneme.memory.usermodel.refer import about_pets, kin_in, pet_names
from mneme.memory.usermodel.taxonomy import OTHERS_ASPECT, PET_ASPECT, taxonomy

TOUCH_MIN = 0.25
"""An aspect a request touches less than this (0..1, see `heads.touched`) brings nothing in."""
NEAR_WEIGHT = 0.7
"""A memory's other likely aspects count this much of its main one's."""
W_TOUCH = 0.5
"""Weight of how much the request's domain touches a memory's aspect (the taxonomy's links)."""
W_DOMAIN = 0.5
"""Weight of how alike the request's domains and the domains the memory matters for are."""
W_RELEVANCE = 1.0
"""Weight of a memory's relevance to the request (its search score, 0..1)."""
PICK_MIN = 0.8
"""A memory is shown only when its score (the three weighed together) reaches this."""
MARGIN = 0.2
"""...and when it scores within this of the best one: a request about hotels needs the hotel
preference, not every travel habit the aspects reach. The weights, floor and margin were
chosen on the tuning halves of the preference sets (docs/benchmarks.md)."""
CONSTRAINT_TOUCH = 0.8
"""A hard constraint whose aspect the request touches at least this much is shown whenever it
scores `CONSTRAINT_MIN`, however much better a like scores: a dinner request needs the peanut
allergy beside the dislike of spicy food, since constraints outrank likes."""
CONSTRAINT_MIN = 0.5
"""(the score such a constraint needs: lower than `PICK_MIN`, since a constraint shares no words
with most requests it binds; both chosen on the tuning halves, docs/benchmarks.md)"""
LOCAL_MIN = 0.5
"""A request whose answer depends on where the person is (`heads.local_of` at least this: the
weather, brunch nearby, a plumber) touches their home fully, whatever its domain, and their home
is shown where the picks leave room (the head's even odds; docs/benchmarks.md)."""
PLACE = "residence"
"""The aspect such a request needs."""
PERSON_RELEVANCE = 0.3
"""A fact about someone in the person's life is shown, where the picks leave room, when the request
is at least this relevant to it (calibrated) and more relevant to it than to any of the person's
own memories: "寒假想给孩子报个补习班" is about the child, so "娃今年上三年级，数学比较吃力" comes,
although tutoring barely touches family. Chosen on the tuning halves of
benchmarks/data/family_reads.json and the Chinese preference set; 0.2 showed a daughter's school
for "给我推荐一本科幻小说" (docs/benchmarks.md)."""
CANDIDATES = 12
"""User-model memories considered per person and turn (the best by relevance within the
aspects the request touches)."""


@dataclass(frozen=True)
class Touch:
    """What one request touches: its domains and the aspects they reach."""

    domains: dict[str, float]
    aspects: dict[str, float]
    local: float = 0.0
    """Probability that the answer depends on where the person is."""
    kin: frozenset[str] = frozenset()
    """The asker's family members the request names ("想去看看我哥", `refer.kin_in`)."""

    def elsewhere(self) -> Touch:
        """The same request for a group participant other than the asker.

        "明天我那边会下雨吗" needs the asker's home, not everyone's; "我妈" is the asker's mother.
        """
        return Touch(domains=self.domains, aspects=touched(self.domains), local=0.0)

    def top_domains(self, n: int = 2) -> list[tuple[str, float]]:
        """The most likely domains, best first (for debugging and the benchmark)."""
        return sorted(self.domains.items(), key=lambda kv: -kv[1])[:n]


def touch_of(request: str) -> Touch:
    """The domains of a request and the aspects of a person they touch."""
    vector = query_vector(request)
    domains = domains_of(vector)
    aspects = touched(domains)
    local = local_of(vector)
    if local >= LOCAL_MIN:
        aspects[PLACE] = 1.0
    for subject in own_fields(request):  # "落款用我的名字": the name, whatever the domain
        if (aspect := taxonomy().by_subject(subject)) is not None:
            aspects[aspect.key] = 1.0
    return Touch(domains=domains, aspects=aspects, local=local, kin=frozenset(kin_in(request)))


def user_model_hits(
    store: BaseStore,
    person: str,
    request: str,
    queries: list[tuple[str, float]],
    settings: SearchSettings,
    limit: int,
    touch: Touch | None = None,
    relevant: list[MemoryHit] | None = None,
) -> list[MemoryHit]:
    """The memories of a person's user model this request needs, constraints first.

    A restaurant request touches diet, allergies, drink and home, so "我不吃辣" is brought in
    although the request names none of it; within the touched aspects the memories are ranked
    by how much the request touches their aspect and by their relevance to the request.

    Args:
        store: The memory store.
        person: Whose user model.
        request: The new input (its domain decides what is touched).
        queries: The retrieval queries (the new input first), for relevance.
        settings: Search settings (sensitivity limit, ranking weights).
        limit: At most this many memories.
        touch: The request's touch, when already computed (several participants).
        relevant: User-model memories the request resembles (from the turn's general
            search): candidates too, whatever aspect they are under.

    Returns:
        Hits in the order they should be shown.
    """
    if limit <= 0 or not request.strip():
        return []
    touch = touch or touch_of(request)
    aspects = sorted(
        {a for a, w in touch.aspects.items() if w >= TOUCH_MIN}
        | ({OTHERS_ASPECT} if touch.kin else set())  # what was said of them, whatever the domain
        | {PET_ASPECT}  # a request may name a pet by its name only ("does Ginger need…")
    )
    pool = {h.id: h for h in relevant or [] if h.aspects}
    hits = (
        search(
            store,
            person,
            queries,
            SearchSettings(
                limit=CANDIDATES,
                kinds=("profile", "semantic"),
                filters={"aspects": {"$in": aspects}},
                max_sensitivity=settings.max_sensitivity,
                min_relevance=0.0,
                candidates=settings.candidates,
                ranking=settings.ranking,
            ),
        )
        if aspects
        else []
    )
    pool.update({h.id: h for h in hits})
    scored = [(score_of(hit, touch), hit) for hit in pool.values()]
    if not scored:
        return []
    best = max(score for score, _ in scored)
    floor = max(PICK_MIN, best - MARGIN)
    kept = sorted((p for p in scored if p[0] >= floor or binding(p[1], p[0], touch)), key=lambda p: -p[0])[
        :limit
    ]
    # where the person lives, for a request that depends on it, where there is room
    kept += [p for p in scored if placed(p[1], touch) and p not in kept][: max(0, limit - len(kept))]
    # how the person wants every answer ("以后跟我说话用英文吧"), whatever the request, where there is room
    if len(kept) < limit:
        kept += [p for p in scored if p not in kept and standing(p[1])][: limit - len(kept)]
    # what is kept about the people and pets the request involves, the most relevant first, where there is room
    own = max((h.score for _, h in scored if h.aspect != OTHERS_ASPECT), default=0.0)
    pets = [p for p in scored if p[1].aspect == PET_ASPECT]
    names = {name for _, hit in pets for name in pet_names(hit.text)}  # "我家猫叫团子": 团子
    asked = pets if pets and about_pets(request, names) else []
    theirs = sorted(
        (p for p in scored if (about_them(p[1], own, touch.kin) or p in asked) and p not in kept),
        key=lambda p: -p[1].score,
    )
    kept += theirs[: max(0, limit - len(kept))]
    kept.sort(key=lambda p: (not p[1].constraint, -p[0]))  # hard constraints first
    return [hit for _, hit in kept]


def binding(hit: MemoryHit, score: float, touch: Touch) -> bool:
    """A hard constraint, or the person's one setting, the request's domain reaches first.

    Shown even when a like scores higher, and whatever words the request uses: a dinner request
    needs the peanut allergy; a flight, the seat ("I prefer aisle seats" shares nothing with "Book
    me a flight to Denver next Friday", and the domain classifier, trained on requests, reads the
    statement as about dining: it scored 0.75 where `PICK_MIN` is 0.8). A setting is a memory of an
    aspect marked so in the taxonomy (a seat, a courier, an invoice title, a way to pay: every
    single-valued aspect was tried, and the Chinese preference set's noise rose 0.08 for nothing).
    Any of a constraint's aspects counts fully ("不吃辣" is a taste and a diet; a restaurant touches
    diets first).
    """
    aspect = taxonomy().aspect(hit.aspect)
    setting = aspect is not None and aspect.setting
    return (
        (hit.constraint or setting)
        and score >= CONSTRAINT_MIN
        and touch_weight(hit, touch, near=1.0 if hit.constraint else NEAR_WEIGHT) >= CONSTRAINT_TOUCH
    )


STANDING_CERTAINTY = 0.5
"""A memory of an aspect every request touches is shown to every request only when it is read as
of that aspect at least this surely: "以后跟我说话用英文吧" (0.87), "No emojis in your replies
please." (0.75), not "我不喜欢死记硬背，喜欢理解原理" (0.31) nor "给我推荐茶叶，直接说名字和产地就行"
(0.44, a wish about one kind of request). Chosen on the tuning halves' noise (docs/benchmarks.md)."""


def standing(hit: MemoryHit) -> bool:
    """A standing wish about every answer: a reply language, a length, a tone.

    Its aspect is an instruction every request touches (`Aspect.everywhere`), and it shares no
    words with most requests: "以后跟我说话用英文吧" scored under `PICK_MIN` for "周末去哪儿玩比较好？",
    whose answer it decides. Read again here (`STANDING_CERTAINTY`), since a memory keeps its
    aspect and not how surely it was read (the `aspect` head alone, on a cached passage vector).
    """
    aspect = taxonomy().aspect(hit.aspect)
    if aspect is None or not aspect.everywhere or not aspect.instruction:
        return False
    return aspect_certainty(hit.text, aspect.key) >= STANDING_CERTAINTY


def placed(hit: MemoryHit, touch: Touch) -> bool:
    """Where the person lives, for a request whose answer depends on it (the weather, a gym nearby)."""
    return touch.local >= LOCAL_MIN and hit.aspect == PLACE


def about_them(hit: MemoryHit, own: float, kin: set[str] | frozenset[str] = frozenset()) -> bool:
    """A fact about someone in the person's life that the request is about.

    The request names them ("想去看看我哥, 帮我订个酒店" and "我哥上周调到上海分公司了"), or it is at
    least `PERSON_RELEVANCE` relevant to the fact and more than to any of the person's own.

    Args:
        hit: The memory.
        own: The highest relevance among the person's own memories.
        kin: The family relations the request names (`refer.kin_in`).
    """
    if hit.aspect != OTHERS_ASPECT:
        return False
    return bool(kin & kin_in(hit.text)) or hit.score >= max(PERSON_RELEVANCE, own)


def score_of(hit: MemoryHit, touch: Touch) -> float:
    """How much a request needs a user-model memory: its aspect's touch, its domains, its relevance."""
    return (
        W_TOUCH * touch_weight(hit, touch)
        + W_DOMAIN * overlap(touch.domains, hit.domains)
        + W_RELEVANCE * hit.score
    )


def touch_weight(hit: MemoryHit, touch: Touch, near: float = NEAR_WEIGHT) -> float:
    """How much a request touches a memory: the best of its aspects.

    Args:
        hit: The memory.
        touch: What the request touches.
        near: What a memory's other likely aspects count, against its main one's 1.0.
    """
    aspects = hit.aspects or ([hit.aspect] if hit.aspect else [])
    return max(
        (touch.aspects.get(a, 0.0) * (1.0 if i == 0 else near) for i, a in enumerate(aspects)),
        default=0.0,
    )
