"""Offline reading of what a user said: the rules' candidates tagged with their aspect, plus the statements the classifiers keep."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from mneme.memory.extract import (
    MENTION,
    Candidate,
    clauses,
    extract,
    forget_request,
    forget_topic,
    is_chinese,
    name_text,
    reminds,
    segments,
)
from mneme.memory.gist import filler_only_difference
from mneme.memory.record import normalize_text
from mneme.memory.redact import redact_text
from mneme.memory.terms import terms
from mneme.memory.usermodel.heads import Reading, outsider_of, read_statements
from mneme.memory.usermodel.names import spoken_names
from mneme.memory.usermodel.refer import (
    OUTSIDERS_EN,
    OUTSIDERS_ZH,
    gives_pet_name,
    kin_subject,
    leads_with_kin,
    pet_subject,
    resolved,
)
from mneme.memory.usermodel.taxonomy import OTHERS_ASPECT, PET_ASPECT, taxonomy

MEMORABLE = 0.45
"""A clause no rule read is kept when the `memorable` head gives it at least this probability
(0.5 before; 0.45 keeps one more fact of the tune half at the same precision, 0.35 costs
precision: docs/benchmarks.md)."""
CONSTRAINT = 0.5
"""A kept statement is a hard constraint at this probability (or when its aspect is one)."""
REVISES = 0.6
"""A statement revises an earlier one of its aspect at this probability of the `change` head.
0.75 was tried: it kept some independent preferences from being replaced, but the issue's own
changes of mind read below it ("我现在开始吃肉了" 0.61, "我最近戒咖啡了" 0.70, docs/benchmarks.md)."""
TENTATIVE = 0.15
"""A clause below `MEMORABLE` but at least this memorable that reads as a revision is kept
tentatively: only if it revises a memory the user already has."""
TENTATIVE_CHANGE = 0.9
"""A clause below even `TENTATIVE` is kept tentatively when it reads as a change at least this much..."""
TENTATIVE_ASPECT = 0.5
"""...and is clearly about one aspect: "Relocated to Toronto for a job this spring." (0.04
memorable, 1.00 change, residence 0.68) and "Went back to an iPhone." replace what they revise,
a request that only mentions a change ("帮我把这段话缩短一点：…活动将顺延至下周六", aspect 0.27) does
not. Neutral on the tuning half's pairs and homes (docs/benchmarks.md)."""
TENTATIVE_REQUEST = 0.65
"""A clause kept tentatively (either way above) must read as a request less than this: "周五下班想去
喝一杯放松下，杭州哪里好" (0.18 memorable, 0.77 change, 0.69 request) had replaced "不喝酒"."""
EVENT_ASPECT = 0.5
"""A dated event the rules read ("我上个月搬到上海了") also updates a single-valued aspect it
changes (home, employer) when the classifier reads that aspect with at least this probability."""
ASPECT_MIN = 0.3
"""A memory stored as given (a tool, the API, an LLM without an aspect) is tagged with the aspect
the classifier reads only at this probability or more."""
INTRODUCED_ASPECT = 0.2
"""What a self-introduction says beside the name (`after_name`) is kept when it reads as an
aspect of the person at this probability ("我在成都开火锅店" 0.23; "我请多关照" 0.10, "I'm Hi" 0.11)."""
SEPARATE_ASPECT = 0.5
"""Each piece of a clause needs at least this aspect probability to be kept on its own
(`separate`; chosen on the tune halves: below it, 21 of 22 split clauses of the Chinese
preference set's tune half had a piece that made no sense alone)."""
CONTEXT_CHARS = 80
"""A like or dislike a rule read is kept with its clause (`in_context`) up to this length..."""
CONTEXT_MORE = 4
"""...when the clause says at least this many characters more than the rule's match."""
CORRECTS = 0.7
"""A statement says that something the user told before was wrong at this probability of the
`correction` head ("刚才说错了，我是研二", "no no, you've got it wrong, I'm at Bank of America"): it
is read as a correction (`action="correct"`), which replaces the closest memory of its area of
life whatever the pair head reads. Chosen on the tuning half of benchmarks/data/change_pairs.json
(not trained on): at 0.7, 11 of its later statements that correct an earlier one read as such,
and 4 that do not ("I'm a dad!!", 0.87); at 0.6, 13 and 8, and on the extraction set's tuning half
"我儿子刚上初一" (0.60) replaced "我女儿在上小学"."""
FORGET = 0.5
"""A clause asks the agent to forget something about the speaker at this probability of the
`forget` head, whatever its words ("邮箱那个就当我没说过哈", "you don't need to know where I work");
below it, "我又忘了带钥匙" or "delete the second paragraph" is no request (docs/benchmarks.md)..."""
FORGET_WORDED = 0.2
"""...except that a clause worded as one ("Please forget that I like jazz", `forget_topic`) needs
only this much (its own fact pulls the head down): such a request is tentative, it deletes only
a memory that clearly matches. A reminder ("趁我还没忘，…", `reminds`) is never a request."""
FORGET_STATEMENT = 0.4
"""A clause the `memorable` head reads this much higher than the `forget` head is a statement,
not a request ("I'm on a low-potassium diet, so I have to limit my intake of …": 0.93 against
0.51, with the classifier of the first batch of its round). Chosen on the tuning half of the
forget set (its requests read at 0.5 or more are at most 0.2 apart, its near misses read so
0.38 and more) and PrefEval's tuning topics."""
BACK_ASPECT = 0.5
"""A short clause that points back ("这件事你就当没听过吧", "Wipe it.") and reads as no aspect of
the person at this probability is read with the clause before it (`refers_back`)."""
SOMEONE_ELSE = 0.7
"""A statement the `whose` head reads as about someone else than the speaker at this probability
("我哥住在成都", "wife just got a new job at Deloitte!!") is kept as a fact about the people in
their life (`OTHERS_ASPECT`): it never becomes the speaker's home or employer, nor replaces
them. Chosen on the tuning half of benchmarks/data/whose_facts.json (docs/benchmarks.md)."""
OUTSIDER = 0.4
"""A sentence the `whose` head reads as about someone outside the family at this probability is
about them (`outsider`): a pronoun right after it is not taken for a family member named before.
Chosen on the tuning half of benchmarks/data/pronoun_reads.json."""
LIMIT = 0.9
"""A clause read as a hard limit at this probability of the `constraint` head..."""
LIMIT_ASPECT = 0.5
"""...and clearly about one aspect is kept even below `MEMORABLE` (`is_limit`)."""
SUPPOSITION = 0.5
"""A conditional clause the `supposition` head reads at this probability is a supposition, not a
fact (`supposes`). On the tuning set of conditional lines every fact reads below it and all but
one supposition above (docs/benchmarks.md, twenty-first round)."""
MAX_CLAUSE_CHARS = 300
"""Longer clauses are not statements about the speaker (a pasted text)."""

_BACK = re.compile(r"这件事|这事|这个|那个|这些|那些|这条|那条|它|\b(?:that|it|this|those|these)\b", re.I)
_HERE = re.compile(r"这边|那边|这里|那里|这儿|那儿|\b(?:here|there)\b", re.I)
_ADDITIVE = re.compile(r"也|另外|此外|还有|还会|还在|还养|还喜欢|\b(?:also|too|as well|either)\b", re.I)
_CONDITIONAL = re.compile(
    r"如果|要是|假如|假设|万一|倘若|只要|一旦|的话|\b(?:if|unless|suppose|imagine)\b", re.I
)
_QUESTION_END = re.compile(r"(?:[?？]|[吗呢嘛][。.!！~～]*)\s*$")
_OTHERS = f"{OUTSIDERS_ZH}|{OUTSIDERS_EN}"
_ABOUT_OTHERS = re.compile(
    rf"^(?:(?:我|我的|我们|我们的)?(?:{_OTHERS})|(?:他|她|它|他们|她们|它们|人家|别人|大家(?!好))(?!们)|"
    rf"(?:my|our)\s+(?:\w+\s+)?(?:{_OTHERS})s?(?:'s?)?\b|(?:he|she|they|his|her|their|its)\b)",
    re.I,
)


def is_question(clause: str) -> bool:
    """Whether a clause asks something (a question mark, or a Chinese question particle at its end)."""
    return bool(_QUESTION_END.search(clause.strip()))


def adds_to(clause: str) -> bool:
    """Whether a clause adds to what was said before ("芒果也过敏", "I also swim"): no revision."""
    return bool(_ADDITIVE.search(clause))


ADDITIVE_CHANGE = 0.7
"""A statement with an additive word ("也", "also") still reads as a change when the `change` head
reads it at least this surely: in a list of changes the word joins them ("工作也换了" 1.00, "咖啡也戒了"
0.72, "车也卖了" 0.94), where an addition reads low ("芒果也过敏" 0.07, "周末也会去爬山" 0.24)."""


def additive(reading: Reading) -> bool:
    """Whether a statement adds to what was said before, and so revises nothing (`adds_to`, `ADDITIVE_CHANGE`)."""
    return adds_to(reading.text) and reading.change < ADDITIVE_CHANGE


def is_conditional(clause: str) -> bool:
    """Whether a clause says something under a condition ("如果我搬到上海的话…", "I get migraines if I skip lunch")."""
    return bool(_CONDITIONAL.search(clause))


def supposes(clause: str, reading: Reading) -> bool:
    """Whether a clause is a supposition, which says nothing lasting about the speaker.

    A conditional sentence may tell how the speaker is ("If I have coffee after 2pm, I'm wide
    awake until 3am.", "要是吃海鲜我就过敏。") or suppose, plan, wish or ask ("If I get the
    promotion, I'll take everyone out to dinner.", "要是我中了彩票，第一件事就是辞职"): the
    `supposition` head tells them apart (`SUPPOSITION`), where the words of the condition cannot.
    """
    return is_conditional(clause) and reading.supposition >= SUPPOSITION


_REPORTED = re.compile(
    r"^\S{0,12}?(?:说|讲|觉得|认为|建议|让|叫|要求|告诉我|嘱咐|提醒)(?:了)?(?:我|咱)"
    r"|^[\w\s']{0,40}?\b(?:says?|said|thinks?|thought|told|tells|wants?|advised|recommends?|recommended)"
    r"\s+(?:that\s+)?(?:I|I'm|me|my)\b",
    re.I,
)


def about_someone_else(clause: str) -> bool:
    """Whether a clause's subject is another person outside the speaker's family, or a thing.

    "我同事不吃香菜" or "My neighbor's kid goes to UCLA" say nothing about the speaker, although
    they read almost like "我不吃香菜": an embedding barely tells them apart, the grammatical
    subject does. Family members stay: what is true of the speaker's child is part of their life.
    Reported speech about the speaker is about the speaker ("医生说我缺铁", "My doctor told me
    to cut down on salt"). A pronoun no one was named for is someone else, or a thing ("它们都怕生
    人" after the shop owner's cats; a family member's or a pet's is resolved before, `resolved`).
    """
    said = clause.strip()
    return bool(_ABOUT_OTHERS.match(said)) and not _REPORTED.match(said)


def outsider(sentence: str) -> bool:
    """Whether a sentence is about someone outside the speaker's family.

    By its subject ("我同事…"), or, unless its subject is a family member it names ("我哥之前一直在
    北京工作" reads 0.83), as the `whose` head reads it (`OUTSIDER`: "There's this kid in my son's
    class named Leo").
    """
    if about_someone_else(sentence):
        return True
    return not kin_subject(sentence) and float(outsider_of([sentence])[0]) >= OUTSIDER


def _sensitivity(aspects: tuple[str, ...]) -> int:
    """The most sensitive of a statement's likely aspects (health: kept from groups)."""
    tax = taxonomy()
    return max((tax.aspects[a].sensitivity for a in aspects if a in tax.aspects), default=0)


def _as_sensitive_as(cand: Candidate, pieces: list[Reading]) -> Candidate:
    """A whole clause kept as one memory is as sensitive as its most sensitive piece.

    "我最近一直在吃降压药，医生让我少喝酒" reads as drink, and its first piece as health: kept from
    groups, as health is.
    """
    held = _sensitivity(tuple(p.aspect for p in pieces if p.aspect_p >= ASPECT_MIN))
    return replace(cand, sensitivity=max(cand.sensitivity, held)) if held > cand.sensitivity else cand


def theirs(reading: Reading) -> bool:
    """Whether a statement is someone else's than the speaker's.

    As the `whose` head reads it (`SOMEONE_ELSE`), or by its grammatical subject: a family member
    it names ("我妹在杭州找了份工作" read 0.3 and became the speaker's employer; "My sister just
    quit and started med school in Glasgow." 0.69, the speaker's school). Reported speech about the
    speaker stays the speaker's ("我妈说我胖了").
    """
    return reading.others >= SOMEONE_ELSE or family_subject(reading.text)


def family_subject(clause: str) -> bool:
    """Whether a clause's grammatical subject is a family member it names, not reported speech."""
    said = clause.strip()
    return leads_with_kin(said) and not _REPORTED.match(said)


def corrects(reading: Reading) -> bool:
    """Whether a statement says something told before was wrong (`CORRECTS`)."""
    return reading.correction >= CORRECTS


def _importance(constraint: bool, single: bool) -> float:
    return 0.8 if constraint else 0.6 if single else 0.5


def _new_candidate(reading: Reading, *, tentative: bool = False) -> Candidate:
    sensitivity = _sensitivity(reading.aspects or (reading.aspect,))  # a mother's diabetes: health
    others = theirs(reading) or pet_subject(reading.text)
    reading = _as_theirs(reading) if others else reading
    aspect = taxonomy().aspects[reading.aspect]
    constraint = aspect.constraint or reading.constraint >= CONSTRAINT
    return Candidate(
        tentative=tentative,
        action="correct" if corrects(reading) else "add",
        kind=aspect.kind,
        text=reading.text.strip(),
        importance=_importance(constraint, aspect.single),
        sensitivity=max(sensitivity, aspect.sensitivity),
        evidence=reading.text,
        tags=["user_model"],
        aspect=aspect.key,
        constraint=constraint,
        revises=reading.change >= REVISES and not additive(reading),
        change=_change(reading),
        near=reading.aspects,
        certainty=reading.aspect_p * (1.0 - reading.others),  # an aspect of the speaker's, if theirs
        others=others,
    )


def _as_theirs(reading: Reading) -> Reading:
    """A reading of someone else's fact: kept about them, with what it is about as a second aspect.

    The brother's home is no home of the speaker's; the son's allergy still bears on a recipe. A
    pet's fact is kept as one about pets ("我家狗对鸡肉过敏" is no allergy of the speaker's).
    """
    whose = PET_ASPECT if pet_subject(reading.text) else OTHERS_ASPECT
    about = next((a for a in (reading.about, *reading.aspects) if a not in (OTHERS_ASPECT, whose)), "")
    near = (whose, about) if about else (whose,)
    return replace(reading, aspect=whose, aspects=near)


def _change(reading: Reading) -> float:
    """The change probability a candidate carries: none for a statement that adds ("也", "also")."""
    return 0.0 if additive(reading) else reading.change


def _changes_a_field(reading: Reading, clause: str) -> bool:
    """Whether a dated event also changes what is kept about someone.

    The speaker's home or employer ("我上个月搬到上海了"), or a family member's ("my brother
    moved to Sydney last month").
    """
    aspect = taxonomy().aspects[reading.aspect]
    if theirs(reading):  # replaces only what is kept about them (`OTHERS_RELEVANCE`)
        return reading.change >= REVISES and reading.memorable >= MEMORABLE and not about_someone_else(clause)
    return (
        (aspect.single or reading.change >= REVISES)  # a new job; "我最近开始吃肉了" revises a diet
        and reading.aspect_p >= EVENT_ASPECT
        and reading.memorable >= MEMORABLE
        and not about_someone_else(clause)
    )


def _tagged(cand: Candidate, reading: Reading | None) -> Candidate:
    """A rule's candidate with the aspect its field names, or the one the classifier reads."""
    if cand.aspect is not None or cand.action == "forget":
        return cand
    tax = taxonomy()
    by_field = tax.by_subject(cand.subject)
    if by_field is not None:
        return replace(
            cand,
            aspect=by_field.key,
            constraint=cand.constraint or by_field.constraint,
            sensitivity=max(cand.sensitivity, by_field.sensitivity),
        )
    if cand.subject is not None or cand.kind == "episodic" or reading is None:
        return cand  # an order, an event: not part of the user model
    sensitivity = _sensitivity(reading.aspects or (reading.aspect,))
    # "我小女儿每天中午都得睡午觉" is the daughter's routine. Only the grammatical subject decides
    # here, not the `whose` head (`theirs`): a rule matched the speaker's own pattern, and the head
    # reads "The user likes window seats" (a memory given as is) as someone else's.
    others = family_subject(reading.text) or pet_subject(reading.text)
    reading = _as_theirs(reading) if others else reading
    aspect = tax.aspects[reading.aspect]
    return replace(
        cand,
        action="correct" if cand.action == "add" and corrects(reading) else cand.action,
        aspect=aspect.key,
        sensitivity=max(cand.sensitivity, sensitivity),
        constraint=cand.constraint or aspect.constraint or reading.constraint >= CONSTRAINT,
        revises=cand.revises or (reading.change >= REVISES and not additive(reading)),
        change=max(cand.change, _change(reading)),
        near=reading.aspects,
        certainty=reading.aspect_p * (1.0 - reading.others) if others else reading.aspect_p,
        others=others,
    )


def _merge(cands: list[Candidate], zh: bool) -> list[Candidate]:
    """Adjacent statements of one aspect in one message become one memory (one thought)."""
    out: list[Candidate] = []
    for cand in cands:
        prev = out[-1] if out else None
        if prev is not None and "user_model" in prev.tags and prev.aspect == cand.aspect:
            joiner = "" if zh else " "
            # a piece beside its own clause ("首付都在这笔钱里。" and "我明年要买房，首付都在这笔钱里。")
            # is said once: the longer holds the shorter
            longer = cand if _holds(cand.text, prev.text) else prev if _holds(prev.text, cand.text) else None
            out[-1] = replace(
                prev,
                text=longer.text if longer else f"{prev.text}{joiner}{cand.text}",
                evidence=longer.evidence if longer else f"{prev.evidence}{joiner}{cand.evidence}",
                constraint=prev.constraint or cand.constraint,
                revises=prev.revises or cand.revises,
                change=max(prev.change, cand.change),
                tentative=prev.tentative and cand.tentative,
                importance=max(prev.importance, cand.importance),
                sensitivity=max(prev.sensitivity, cand.sensitivity),
            )
        else:
            out.append(cand)
    return out


def read_message(text: str, *, now: datetime | None = None, before: Sequence[str] = ()) -> list[Candidate]:
    """The memory candidates of one user message, offline.

    The rules read what they have patterns for (a courier, an order number, a name, a dated
    event, a forget request) with structured values; every clause is also read by the
    classifiers on the bundled embedding model, which keep the statements about the speaker
    that no rule saw ("我是做前端开发的", "Shellfish gives me hives") and tag every candidate with
    the aspect of the person it is about.

    Args:
        text: What the user said.
        now: When it was said (for relative dates).
        before: The user's messages just before it, oldest first: only read, for whom a
            sentence that starts with a pronoun is about ("他上个月跳槽去腾讯了" after "我老公在
            阿里工作" is a fact about the husband, `refer.resolved`).

    Returns:
        Candidates in the user's language.
    """
    now = now or datetime.now(UTC)
    text = MENTION.sub(" ", text).strip() or text  # "@bot 你好": addressed, not said of oneself
    text = resolved(text, before, outsider)
    ruled = extract(text, now=now, forget=False)
    if not any(c.subject == "name" for c in ruled):
        ruled += spoken_names(text)  # "Marcus here", "I'm Gabriel", "— Priya"
    parts = [c for c in clauses(text) if len(c) <= MAX_CLAUSE_CHARS]
    pieces = {p: segments(p) for p in parts}
    # One batch: each clause, its comma-separated pieces, and what each rule read its fact from.
    texts = list(dict.fromkeys([*parts, *(s for p in parts for s in pieces[p] if s != p)]))
    texts += [e for e in dict.fromkeys(c.evidence for c in ruled if c.evidence) if e not in texts]
    # a short clause pointing back is also read with the one before it ("Shellfish allergy. Wipe it.")
    follows = {n: f"{parts[n - 1]} {parts[n]}" for n in range(1, len(parts)) if refers_back(parts[n])}
    texts += [t for t in dict.fromkeys(follows.values()) if t not in texts]
    read = dict(zip(texts, read_statements(texts), strict=True))
    used: set[int] = set()
    out: list[Candidate] = []
    new: list[Candidate] = []
    asked: Candidate | None = None  # the forget request of the clause just before, if any
    marks: list[tuple[int, int]] = []  # what `out` and `new` held before each clause
    introduced: list[str] = []  # what a self-introduction says beside the name (`after_name`)
    for n, clause in enumerate(parts):
        marks.append((len(out), len(new)))
        reading = read[clause]
        mine = [i for i, c in enumerate(ruled) if i not in used and c.evidence and c.evidence in clause]
        request = asks_to_forget(clause, reading)
        if asked is None and n in follows and reading.aspect_p < BACK_ASPECT:
            found = asks_to_forget(follows[n], read[follows[n]]) or request
            if found is not None:  # the clause before says what to forget, it is no new fact
                del out[marks[n - 1][0] :], new[marks[n - 1][1] :]
                request = replace(found, text=follows[n], topic=follows[n], evidence=follows[n])
        if request is not None:
            used.update(mine)  # what it names is what to forget, not a new fact
            if asked is not None and asked is out[-1]:  # "Forget the allergy? I'd rather you didn't have it."
                topic = f"{asked.topic} {request.topic}"
                request = replace(
                    asked,
                    text=topic,
                    topic=topic,
                    evidence=f"{asked.evidence} {clause}",
                    tentative=asked.tentative and request.tentative,
                )
                out[-1] = request
            else:
                out.append(request)
            asked = request
            continue
        if asked is not None and not mine and reading.aspect_p < BACK_ASPECT:
            continue  # why the request was made ("kinda private", "他不喜欢被打听"): no fact to keep
        asked = None
        if supposes(clause, reading):  # no fact, whatever a rule read in it ("If I were vegan…")
            used.update(mine)
            continue
        pets = pet_subject(clause)
        if mine and (pets or about_someone_else(clause)):
            # "My boss keeps saying "I hate sushi"": what a rule read is the other person's; of a
            # pet ("我家猫晚上睡在我床脚") its plans and events too (a boss's words may tell the
            # speaker's own: "My boss says I'm flying to Paris next week")
            theirs = _ABOUT_SPEAKER_TAGS | (_PLAN_TAGS if pets else frozenset())
            # (what others call the speaker is the speaker's: "朋友们都叫我老猫")
            dropped = [i for i in mine if theirs & set(ruled[i].tags) and "called" not in ruled[i].tags]
            used.update(dropped)
            mine = [i for i in mine if i not in dropped]
        if mine:
            used.update(mine)
            parts_read = [read[s] for s in pieces[clause] if s in read]
            unread = _unread(parts_read, [ruled[i] for i in mine])
            if (
                len(mine) == 1
                and in_context(ruled[mine[0]], clause)
                and not separate(memorable(parts_read))
                and not unread
            ):
                rule = ruled[mine[0]]
                own = read.get(rule.evidence or "")
                cand = _tagged(replace(rule, text=_field_text(rule, clause), evidence=clause), reading)
                if own is not None and own.constraint >= CONSTRAINT:  # "我不吃辣" is, whatever follows
                    cand = replace(cand, constraint=True)
                out.append(_as_sensitive_as(cand, parts_read))
            else:
                out.extend(
                    _tagged(_in_piece(ruled[i], pieces[clause]), read.get(ruled[i].evidence, reading))
                    for i in mine
                )
                unread = _unread(parts_read, [ruled[i] for i in mine], of_their_aspect=True)
                # whose it is, the clause says, as it did for the rules: "今年35岁" alone reads as
                # someone else's (0.75), and beside "我住在杭州" or "在银行上班" it is the speaker's
                # age (a piece that names someone is no piece of this kind, `_unread`)
                whose = reading.others if about_someone_else(clause) else 0.0
                new.extend(_new_candidate(replace(p, others=whose)) for p in unread)
            if all(ruled[i].kind == "episodic" for i in mine) and (
                _changes_a_field(reading, clause) or _says_more(clause, [ruled[i] for i in mine], parts_read)
            ):
                new.append(_as_sensitive_as(_new_candidate(reading), parts_read))
            if all(ruled[i].subject == "name" for i in mine) and (
                rest := after_name(clause, [ruled[i] for i in mine], kept=[p.text for p in unread])
            ):
                introduced.append(rest)
            continue
        if is_question(clause) or about_someone_else(clause):
            continue
        parts_read = [read[s] for s in pieces[clause] if s in read]
        new.extend(
            _as_sensitive_as(c, parts_read) if c.evidence == reading.text else c
            for c in _statements(clause, reading, parts_read)
        )
    for rest, reading in zip(introduced, read_statements(introduced), strict=True):
        aspect = taxonomy().aspect(reading.aspect)
        # not "我请多关照" (0.10), nor "你也这么叫我吧" (the name again)
        if reading.aspect_p >= INTRODUCED_ASPECT and aspect is not None and not aspect.ruled:
            new.extend(_statements(rest, reading, [reading]))
    out.extend(_tagged(c, read.get(c.evidence)) for i, c in enumerate(ruled) if i not in used)
    zh = bool(re.search(r"[\u4e00-\u9fff]", text))
    said = [k for c in one_name(out) + _merge(new, zh) for k in _unasked(c, parts, pieces, read)]
    return said + _changes_beside(said, parts, pieces, read, zh)


REQUEST = 0.85
"""A piece of a clause the `request` head reads as asking the assistant for something at least
this surely is no part of what the speaker says of themself (`_unasked`): "帮我排个行程" 0.94,
"can you suggest some wineries?" 1.00, where a change said tersely reads up to 0.66 ("switched
phone plan to Fido.", "在成都一家酒店做前台"). Chosen on the tuning half of
benchmarks/data/multi_changes.json."""


def asks(reading: Reading) -> bool:
    """Whether a piece only asks the assistant for something now.

    It reads as a request (`REQUEST`) and as nothing worth keeping (`MEMORABLE`).
    """
    return reading.request >= REQUEST and reading.memorable < MEMORABLE


def _unasked(
    cand: Candidate, parts: list[str], pieces: dict[str, list[str]], read: dict[str, Reading]
) -> list[Candidate]:
    """A memory without the words that ask the assistant for something, read again.

    "公司年会要我上台敬一圈，帮我准备几句祝酒词。" read as of alcohol and replaced "我这人滴酒不沾的。";
    "下个月去青岛，想逛逛啤酒博物馆和几家精酿馆，帮我排个行程。", as a tentative update, did too. A
    request (the `request` head, `REQUEST`) is no part of what the asker says of themself: the rest
    is read again alone and kept as any clause would be ("I'm vegetarian, can you find me a
    restaurant?" keeps the diet), or not at all.
    """
    said = cand.text.strip()
    part = next((p for p in parts if said and (said in p or p in said)), None)
    if part is None or cand.action == "forget" or cand.subject is not None:
        return [cand]
    segs = pieces[part] or [part]
    asking = [s for s in segs if s in said and (r := read.get(s)) is not None and asks(r)]
    if not asking:
        return [cand]
    rest = ("，" if is_chinese(said) else ", ").join(s.strip() for s in segs if s in said and s not in asking)
    if not rest:
        return []
    [reading] = read_statements([rest])
    found = _statements(rest, reading, [reading])
    return [replace(c, tentative=c.tentative or cand.tentative) for c in found]


PIECE_CHANGE = 0.5
"""A piece of a clause that no memory holds, and that reads as a change at least this surely
(`change` head), is kept as a tentative change of its own (`_changes_beside`)."""


def _changes_beside(
    found: list[Candidate],
    parts: list[str],
    pieces: dict[str, list[str]],
    read: dict[str, Reading],
    zh: bool,
) -> list[Candidate]:
    """The changes a message states beside the memories read from it, as tentative candidates.

    "跟你说下，我搬到上海了，工作也换了，现在在字节跳动": the new home is kept; "工作也换了" and
    "现在在字节跳动" are no memory alone (too little, too unsure of its aspect), and were lost,
    leaving the old employer current. Kept as one change (adjacent pieces of one area of life
    read together), tentative: stored only where it replaces a memory the user has (the
    `supersedes` head on the pair), never as a new fact from a fragment.
    """
    tax = taxonomy()
    groups: list[list[Reading]] = []
    clause_of: list[str] = []  # the clause each group was read in
    for part in parts:
        # what a memory holds as its own; a memory of the whole clause (a home with what was said
        # around it, `in_context`) keeps its words, and a change in them of another part of life
        # still replaces what it changes (one of its own part of life was judged with the whole)
        if len(pieces[part]) < 2 or not any(c.evidence and c.evidence in part for c in found):
            continue  # a clause no memory came from was left for a reason (a question, a supposition)
        if any((r := read.get(seg)) is not None and asks(r) for seg in pieces[part]):
            continue  # "下个月去青岛，…，帮我排个行程": what a request tells is its setting, no change
        if redact_text(part) != part:
            continue  # "手机换号了，新号码是…": news of personal data is about that data (`write.replaceable`)
        if pet_subject(part):
            continue  # "我家狗（旺财）对鸡肉过敏，吃了就拉肚子": what follows is the pet's, no change of the speaker's
        whole = [
            c
            for c in found
            if part.strip() in (c.text.strip(), (c.evidence or "").strip())
            and (c.subject is None or c.subject in CONTEXT_FIELDS)  # (not a phone said with its news)
        ]
        held = [t for c in found if c not in whole for t in (c.text, c.evidence) if t]
        last: str | None = None
        for seg in pieces[part]:
            r = read.get(seg)
            if (
                r is None
                or any(seg in t or t in seg for t in held)
                or r.aspect not in tax.aspects
                or any(tax.same_area(c.aspect, r.aspect) for c in whole)
                or tax.instruction(r.aspect)  # "告诉你个消息" (0.65 a change) announces, it changes nothing
                or _change(r) < PIECE_CHANGE
                or is_question(seg)
                or about_someone_else(seg)
                or refers_back(seg)
                or _HERE.search(seg)  # "been here about six years now" goes on about the home
            ):
                last = None
                continue
            # a piece of the same area goes on with the one before, as does one of no clear aspect
            # ("工作也换了，现在在字节跳动": a company's name alone reads as anything, 0.10)
            if last is not None and (tax.same_area(last, r.aspect) or r.aspect_p < SEPARATE_ASPECT):
                groups[-1].append(r)
            else:
                groups.append([r])
                clause_of.append(part)
                last = r.aspect
    if not groups:
        return []
    texts = [("，" if zh else ", ").join(r.text.strip() for r in g) for g in groups]
    multi = [t for t, g in zip(texts, groups, strict=True) if len(g) > 1]
    joined = dict(zip(multi, read_statements(multi), strict=True)) if multi else {}
    out = []
    for text, group, part in zip(texts, groups, clause_of, strict=True):
        reading = joined.get(text, group[0])
        if reading.aspect in tax.aspects and _change(reading) >= PIECE_CHANGE:
            # read from the whole clause: what holds only for now is judged on all of it ("I'm
            # fostering a kitten for two weeks and Max is so confused" replaces no dog named Max)
            out.append(replace(_new_candidate(reading, tentative=True), evidence=part))
    return out


def _holds(text: str, part: str) -> bool:
    """Whether a text says all a shorter one says (the same words, as duplicates are compared)."""
    return normalize_text(part) in normalize_text(text)


def one_name(found: list[Candidate]) -> list[Candidate]:
    """A name and what the speaker is to be called, said in one message, as one memory.

    "我叫林晓，叫我小林就行" or "My name is Robert, but everyone calls me Bob": both hold, and a
    person has one current name, so two memories would have the second replace the first.
    """
    names = [c for c in found if c.subject == "name" and "called" not in c.tags]
    calls = [c for c in found if c.subject == "name" and "called" in c.tags]
    if not names or not calls or names[0].value == calls[0].value:
        return found
    name, call = names[0], calls[0]
    text = name_text(name.value or "", call.value, zh=is_chinese(name.text))
    merged = replace(name, text=text, tags=[*name.tags, "called"])
    return [merged if c is name else c for c in found if c is not call]


def refers_back(clause: str) -> bool:
    """Whether a short clause points back at what was said before it ("这件事你就当没听过吧", "Wipe it.")."""
    short = len(clause) <= 16 if is_chinese(clause) else len(clause.split()) <= 8
    return short and bool(_BACK.search(clause))


def forget_requests(text: str) -> list[Candidate]:
    """The forget requests of a message's clauses, each read alone (no rules, no pieces).

    What the offline demo model answers to, without reading the whole message as `read_message`
    does for the write path.
    """
    parts = [c for c in clauses(text) if len(c) <= MAX_CLAUSE_CHARS]
    asked = (asks_to_forget(p, r) for p, r in zip(parts, read_statements(parts), strict=True))
    return [c for c in asked if c is not None]


def asks_to_forget(clause: str, reading: Reading) -> Candidate | None:
    """The forget request a clause makes (`FORGET`, `FORGET_WORDED`), if it makes one."""
    if reminds(clause):
        return None
    if reading.forget >= FORGET and reading.memorable - reading.forget < FORGET_STATEMENT:
        return forget_request(clause, clause.strip())  # its words, not the rules' capture
    if reading.forget >= FORGET_WORDED and (named := forget_topic(clause)) is not None:
        # what its words name is what it may delete ("帮我把这段话的最后一句删掉：我的邮箱是…" names no email)
        return forget_request(clause, named, tentative=True)
    return None


_SUBJECT_ZH = re.compile(r"^(?:我|本人|俺|咱|你|您|他|她|它|大家)")
_SUBJECT_EN = re.compile(r"^(?:I\b|I'|my\b|we\b|our\b|you\b|he\b|she\b|they\b|it\b|everyone\b)", re.I)


def after_name(clause: str, names: list[Candidate], kept: Sequence[str] = ()) -> str | None:
    """What a self-introduction says beside the name, as a statement of the speaker's own.

    "hi～我叫林薇，在杭州做UI设计，目前在网易": the rule keeps the name; the pieces after it share
    its subject, so they are read, and kept, as "我在杭州做UI设计，目前在网易" ("I'm Jess Romero, ER
    nurse at Denver Health": "I'm ER nurse at Denver Health"). None when nothing is left, when it
    has a subject of its own, or when it is a question or about someone else.

    Args:
        clause: The clause a rule read the name from.
        names: What the rules read there.
        kept: Its pieces already kept as statements of their own (`_unread`).
    """
    said = [n.evidence or "" for n in names]
    rest = [p for p in segments(clause) if not any(e and (p in e or e in p) for e in said) and p not in kept]
    if not rest or len(rest) == len(segments(clause)):
        return None
    zh = is_chinese(clause)
    text = ("，" if zh else ", ").join(rest)
    if (_SUBJECT_ZH if zh else _SUBJECT_EN).match(text):
        return None  # a piece with its own subject is read as it is (`_unread`)
    text = f"我{text}" if zh else f"I'm {text}"
    return None if is_question(text) or about_someone_else(text) else text


def _limit_aspect(aspect: str) -> bool:
    """Whether a piece of this aspect that reads as a limit may be one.

    Not one of how to talk to the user (`communication`: an instruction that holds no limit),
    where chat glue lands ("告诉你个消息" 0.58); "但是喝牛奶" beside a vegetarian diet (a drink,
    0.83) is one.
    """
    found = taxonomy().aspect(aspect)
    return found is not None and (found.constraint or not found.instruction)


def _unread(pieces: list[Reading], rules: list[Candidate], *, of_their_aspect: bool = False) -> list[Reading]:
    """Statements of their own in a clause beside what the rules read there, about another aspect.

    "我不吃辣，而且对花生过敏": the rule reads the taste; kept as the whole clause (read as an
    allergy), a later "现在能吃一点辣了" replaced the allergy with it. A piece that reads as a hard
    limit counts even when the `memorable` head reads it low ("而且对花生过敏", 0.13). A piece
    that points back at what the clause is about ("here", "这边", "it") goes on about it: "I live in
    Denver, been here about six years now." is about the residence, and its second piece, alone,
    read as an age (0.70) that a later "I'm 34." replaced.

    With `of_their_aspect`, pieces of the aspect the rules read count too (not of a field's): where the clause is not
    kept whole (`in_context`), "I only drink decaf coffee, caffeine gives me heart palpitations, and I
    love green tea" kept only the tea the rule read, and "我每周跑步三次，周末会去爬山，最近在练瑜伽"
    lost the yoga.
    """
    read_from = [c.evidence or "" for c in rules]
    tax = taxonomy()
    aspects = {c.aspect for c in rules if c.aspect} or {
        r.aspect for r in pieces if any(r.text in e or e in r.text for e in read_from if e)
    }
    # a field's value is said once: another piece of its aspect says it again ("你也这么叫我吧")
    fields = {a.key for c in rules if (a := tax.by_subject(c.subject)) is not None}
    return [
        p
        for p in pieces
        # a limit is worth its own memory, unless of how to talk to the user ("告诉你个消息" reads
        # 0.58 a limit, and is nothing)
        if (p.memorable >= MEMORABLE or (p.constraint >= CONSTRAINT and _limit_aspect(p.aspect)))
        and not is_question(p.text)
        # clearly about its aspect, or about a part of life the rules' facts are not about ("work
        # as a dental hygienist" beside an age: employer 0.36, occupation 0.33); a piece of the
        # rules' own part of life goes with them ("我在一家三甲医院当护士，经常要上夜班")
        and (
            p.aspect_p >= SEPARATE_ASPECT
            or (p.area_p >= SEPARATE_ASPECT and not any(tax.same_area(p.aspect, a) for a in aspects))
        )
        and not any(p.text in e or e in p.text for e in read_from if e)
        and p.aspect not in (fields if of_their_aspect else aspects)
        and p.aspect in tax.aspects
        and not about_someone_else(p.text)
        and not (refers_back(p.text) or _HERE.search(p.text))
    ]


def _says_more(clause: str, events: list[Candidate], pieces: list[Reading]) -> bool:
    """Whether a clause a rule read an event from also says something lasting about the speaker.

    "我在学日语，准备明年考N1": the rule keeps the dated plan; the piece it did not read ("我在学日语")
    is a statement of its own, so the whole clause is kept as one thought of the user model too.
    """
    if is_question(clause) or about_someone_else(clause):  # (a supposition never gets here)
        return False
    read_from = [c.evidence or "" for c in events]
    rest = [p for p in pieces if not any(p.text in e or e in p.text for e in read_from if e)]
    return bool(memorable(rest))


def is_limit(reading: Reading) -> bool:
    """Whether a clause plainly states a hard limit, however the `memorable` head reads it.

    "提醒你一下，我花生过敏，吃了会起疹子" (0.37 memorable, 0.97 a limit, allergy 0.92): what is kept
    of a person must not hang on a preamble (`LIMIT`, `LIMIT_ASPECT`, `TENTATIVE`).
    """
    return reading.constraint >= LIMIT and reading.aspect_p >= LIMIT_ASPECT and reading.memorable >= TENTATIVE


def memorable(pieces: list[Reading]) -> list[Reading]:
    """The pieces of a clause worth keeping on their own terms (no questions)."""
    return [p for p in pieces if p.memorable >= MEMORABLE and not is_question(p.text)]


def separate(pieces: list[Reading]) -> bool:
    """Whether the pieces of a clause are statements of their own, kept one by one.

    They are when each is clearly about an aspect (`SEPARATE_ASPECT`) and they belong to
    different parts of life ("我的邮箱是…，我不吃辣"). A piece the classifier cannot place on its
    own leans on the others ("我有条大金毛，一般的车不让上", "我是穆斯林，不碰利息"), and two pieces
    of one part of life are one thought ("我有哮喘，剧烈运动容易发作"): the clause stays whole, so
    that what the model is shown later still says what it is about.
    """
    if len(pieces) < 2 or any(p.aspect_p < SEPARATE_ASPECT for p in pieces):
        return False
    tax = taxonomy()
    return len({tax.aspects[p.aspect].area for p in pieces}) >= 2


_ABOUT_SPEAKER_TAGS = frozenset({"preference", "diet", "health", "identity"})
"""What a rule reads as the speaker's own taste, diet, health or identity: in a clause about
someone else (`about_someone_else`) or the speaker's pet (`pet_subject`), it is theirs, not the
speaker's."""
_PLAN_TAGS = frozenset({"schedule", "event"})
"""A rule's plan or event of the speaker's: in a clause about the speaker's pet, the pet's."""

IN_CONTEXT_TAGS = frozenset({"preference", "health", "family", "schedule", "identity", "location"})
"""What a rule reads about the speaker that is kept with its clause (`in_context`): not an order or
a contact (a structured value, said once)."""


CONTEXT_FIELDS = frozenset({"occupation", "location", "hometown"})
"""Fields a rule reads a value of whose clause can say more around it: "I work as a nurse at Mass
General in Boston" kept only "Works as a nurse" (the employer and the city were lost). Not a name, an
age, a birthday or a contact (a value said once, shown in its own form), nor an employer: "nope, you
got that wrong, I'm at KPMG" names no field, and reads 0.51 like "Works at Deloitte" (enough to
correct it, `write.CORRECTION_RELEVANCE`) but 0.09 like "Works at Deloitte in the audit team"."""
BEYOND_TERMS = 1
"""A field's clause is kept whole when it holds at least this many words its match does not."""


def says_beyond(evidence: str, said: str) -> bool:
    """Whether a clause says more than what a rule read in it (`BEYOND_TERMS` words of its own)."""
    return len(set(terms(said)) - set(terms(evidence))) >= BEYOND_TERMS


def _in_piece(cand: Candidate, pieces: Sequence[str]) -> Candidate:
    """A field read in a clause of several statements, kept with the piece it was said in.

    "I'm a software engineer at Google, living in Seattle": the occupation is kept as "I'm a
    software engineer at Google" (the residence is a piece of its own).
    """
    piece = next((p for p in pieces if cand.evidence and cand.evidence in p), None)
    if piece is None or not in_context(cand, piece):
        return cand
    return replace(cand, text=_field_text(cand, piece), evidence=piece)


def _field_text(cand: Candidate, clause: str) -> str:
    """The text of a memory a rule read, kept with what its clause says around it.

    A field keeps its own words and adds what follows them ("Works at Deloitte in the audit
    team", "住在杭州西湖区，离公司很近"): a later "nope, you got that wrong, I'm at KPMG" still reads
    most like it. Said after other words, or not a field, the clause is kept as said.
    """
    said = clause.strip()
    evidence = (cand.evidence or "").strip()
    if cand.subject is None or not evidence or not said.startswith(evidence):
        return said
    rest = said[len(evidence) :].rstrip(" .。!！")
    return f"{cand.text}{rest}" if rest else cand.text


def in_context(cand: Candidate, clause: str) -> bool:
    """Whether a fact a rule read about the speaker is better kept as the user said it.

    A rule keeps its object ("喜欢慢节奏" from "出门我喜欢慢节奏，一天顶多逛两个地方", "Has two kids"
    from "I have two kids, they're 4 and 9"); when the clause says more around it (where, why,
    how old, what follows), the whole clause is the memory, so
    that a later answer sees the circumstances, and its aspect is read from all of it. (Not
    when the rest is a statement of its own, `separate`: "我的邮箱是…，我不吃辣".) A field keeps its
    key and value, and its aspect (`CONTEXT_FIELDS`).
    """
    said, evidence = clause.strip(), cand.evidence or ""
    field = cand.subject in CONTEXT_FIELDS and cand.kind == "profile" and says_beyond(evidence, said)
    return (
        (
            field
            or (cand.subject is None and cand.kind == "semantic" and bool(IN_CONTEXT_TAGS & set(cand.tags)))
        )
        and cand.action in ("add", "correct")
        and len(said) <= CONTEXT_CHARS
        and bool(evidence)
        and len(said) > len(evidence) + CONTEXT_MORE
        and not filler_only_difference(evidence, said)  # "Actually, I now prefer…"
        and not is_question(said)
        and not about_someone_else(said)
    )


def _statements(clause: str, reading: Reading, parts: list[Reading]) -> list[Candidate]:
    """The statements of a clause no rule read.

    One, or one per piece when its pieces say different things (`separate`); a piece that
    only explains ("吃了会起疹子") stays with the clause.
    """
    kept = memorable(parts)
    # a piece alone would read as the speaker's ("…玄凤鹦鹉，名字叫小黄": the name is the parrot's)
    theirs_whole = family_subject(clause) or pet_subject(clause) or gives_pet_name(clause)
    if separate(kept) and not any(about_someone_else(p.text) for p in kept) and not theirs_whole:
        # "My mom lives with us now, she's 82": a piece that goes on about someone stays with the clause
        return [_new_candidate(p) for p in kept]
    if reading.memorable >= MEMORABLE or len(kept) >= 2 or is_limit(reading):  # several pieces: one thought
        return [_new_candidate(reading)]
    if corrects(reading) and reading.memorable >= TENTATIVE:
        # "nope, you got that wrong, I'm at KPMG" reads like chat glue (0.45): as a correction it
        # is kept only where it corrects a memory the user has
        return [_new_candidate(reading, tentative=True)]
    if (
        (
            reading.memorable >= TENTATIVE
            or (reading.change >= TENTATIVE_CHANGE and reading.aspect_p >= TENTATIVE_ASPECT)
        )
        and reading.change >= REVISES
        and reading.request < TENTATIVE_REQUEST
        and not additive(reading)
    ):
        return [_new_candidate(reading, tentative=True)]
    return []


def tag_aspect(cand: Candidate) -> Candidate:
    """A candidate that did not come from `read_message` (a tool, the API, an LLM) tagged with its aspect.

    Events, forget requests and keyed fields outside the user model (an order) stay untagged.
    """
    if cand.aspect is not None or cand.action == "forget" or cand.kind == "episodic":
        return cand
    if cand.subject is not None and taxonomy().by_subject(cand.subject) is None:
        return cand
    reading = read_statements([cand.evidence or cand.text])[0]
    if cand.subject is None:
        whole = _tagged(cand, reading) if reading.aspect_p >= ASPECT_MIN else cand
        return _of_its_pieces(whole)
    return _tagged(cand, reading)


def _of_its_pieces(cand: Candidate) -> Candidate:
    """A memory of several statements, which reads as no aspect whole, tagged as its pieces read.

    "我是素食者，周末喜欢去爬山" saved as one memory reads 0.28 as travel, "I am vegetarian and I
    like hiking on weekends." 0.42 as fitness; their pieces are a diet and a hobby. Such a memory
    takes the aspect of the piece that is a limit, if the whole is none, else of the surest piece
    when the whole reads as no aspect, and is a limit when one of them is, so that a restaurant
    request still finds the diet.
    """
    text = cand.evidence or cand.text
    if sum(len(segments(c)) for c in clauses(text)) < 2:  # one statement: the whole has said it
        return cand
    pieces = [c for c in read_message(text) if c.aspect and c.action in ("add", "correct")]
    if len(pieces) < 2 or (
        cand.aspect is not None and (cand.constraint or not any(c.constraint for c in pieces))
    ):
        return cand
    best = max(pieces, key=lambda c: (c.constraint, c.certainty))
    return replace(
        cand,
        aspect=best.aspect,
        constraint=cand.constraint or any(c.constraint for c in pieces),
        near=tuple(dict.fromkeys(c.aspect for c in pieces if c.aspect and c.aspect != best.aspect)),
        certainty=best.certainty,
        sensitivity=max(cand.sensitivity, *(c.sensitivity for c in pieces)),
    )
