"""Who a pronoun at the head of a sentence stands for: the family member or pet the speaker just named."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, cast

from mneme.classifier import data_path
from mneme.memory.extract import clauses
from mneme.memory.when import EN_TIME, ZH_TIME

Gender = Literal["m", "f", "?", "pl", "pet", "it"]
"""A person's sex or number ("?": either), a pet, or what 它 / it can stand for."""

KIN_FILE = "kin.json"
"""Kinship words by sex or number, pets and people outside the family, zh and en (closed classes,
like the pronouns)."""

_DATA = json.loads(data_path(KIN_FILE).read_text(encoding="utf-8"))


def _kin(lang: str) -> dict[str, Gender]:
    return {word: cast(Gender, gender) for gender, words in _DATA[lang].items() for word in words}


KIN_ZH = _kin("zh")
KIN_EN = _kin("en")
_SAME = {word: group[0] for group in _DATA["same"] for word in group}
PETS_ZH: list[str] = sorted(_DATA["pets"]["zh"], key=len, reverse=True)
PETS_EN: list[str] = sorted(_DATA["pets"]["en"], key=len, reverse=True)
OUTSIDERS_ZH = "|".join(_DATA["outsiders"]["zh"])
OUTSIDERS_EN = "|".join(re.escape(w) for w in _DATA["outsiders"]["en"])
"""People outside the family (同事, classmate...), as regular-expression alternations."""

_ZH_LONGEST_FIRST = sorted(KIN_ZH, key=len, reverse=True)
_ZH_KIN = "|".join(_ZH_LONGEST_FIRST)
_EN_KIN = "|".join(re.escape(k) for k in sorted(KIN_EN, key=len, reverse=True))
_ZH_PET = "|".join(PETS_ZH)
_EN_PET = "|".join(re.escape(p) for p in PETS_EN)
_ZH_ORDER = "(?:[大小二三四五]|最小的|最大的)?"
"""大儿子, 小女儿, 二姐: which of them (kept with the word)."""
_EN_ORDER = r"(?:(?:youngest|oldest|eldest|younger|older|elder|little|big|baby|twin|step|late)\s+)?"
_ZH_NAMED = re.compile(
    rf"(?:^|我(?:的|家)?|咱(?:家)?|(?:我|咱)(?:家)?有(?:一)?个)({_ZH_ORDER}(?:{_ZH_KIN}))(?!们)"
)
_EN_NAMED = re.compile(rf"\b(?:my|our)\s+({_EN_ORDER}(?:{_EN_KIN}))\b", re.I)
_ZH_PET_KIND = (
    r"(?:(?:一|两|几)?(?:那|这)?(?:(?:只|条|个|头)(?:(?![养有的只条个头])[\u4e00-\u9fff]){0,2}?|[小大老]?))"
)
"""What comes between owning and the pet word: a count and a classifier, then at most two words of
kind or colour (一只虎皮鹦鹉, 只小橘猫), or 小/大/老 alone (我家小橘猫)."""
_ZH_PET_NAMED = re.compile(
    rf"(?:^(?:今天|昨天|前几天|上周)?(?:刚|新|才|最近)?(?:从[\u4e00-\u9fff]{{1,6}}?)?(?:领养|收养|买|捡|接)了"
    rf"|^|(?:我|咱)(?:们)?(?:家的?|的|养的|(?:家)?(?:刚|新|才|最近)?(?:领养|收养|养|买|捡|接|来)了|(?:家)?有)"
    rf"|(?:(?<![\u4e00-\u9fff])|(?<=[我咱们]))家里(?:的|养的|(?:刚|新|才|最近)?(?:领养|收养|养|买|捡|接|来)了|有))"
    rf"{_ZH_PET_KIND}(?:宠物)?((?:{_ZH_PET})+)(?![粮窝砂笼绳])"
)
"""The speaker's pet: 我家狗, 我养的猫, 我刚领养了一只小狗, 家里有只橘猫 (not 朋友家里), 我养了一只虎皮
鹦鹉, or a pet word opening the sentence when a name follows ("狗子叫旺财", `named`)."""
_EN_PET_NAMED = re.compile(
    rf"(?:\b(?:my|our)|(?:^|\bI\s+|\bwe\s+|\bI've\s+|\bwe've\s+)(?:just\s+|recently\s+|finally\s+)?"
    rf"(?:adopted|got|have|rescued|bought|brought\s+home|took\s+in)\s+(?:a|an|two|three))"
    rf"\s+(?:[\w-]+\s+){{0,2}}?({_EN_PET})\b(?:\s+(?:{_EN_PET})\b)?"
    rf"|\bthe\s+({_EN_PET})(?=(?:'s|’s)\s+name\b)",
    re.I,
)
_OUTSIDER = re.compile(rf"(?:{OUTSIDERS_ZH})|\b(?:{OUTSIDERS_EN})s?\b", re.I)
_ZH_PRONOUN = re.compile(r"^(他们|她们|它们|他|她|它)(的)?")
_NAMES_IT = re.compile(
    r"^(?:(?:我们?)?给(?:它|她|他)(?:取名|起名|起了个名字?)?叫|(?:我们?)?(?:取名|起名)叫|(?:我们?)?叫(?:它|她|他)"
    r"|(?:(?:它|她|他)的?)?(?:名字|小名)(?:是|叫))([\u4e00-\u9fff]{1,4}|[A-Za-z]+)[。！!~～]?$"
    r"|^(?i:I|we)\s+(?:named|call(?:ed)?)\s+(?:him|her|it)\s+([A-Z][A-Za-z]+)[.!]?$",
)
"""A sentence that only names the pet just introduced: 我给她取名叫咪咪, 名字叫小黄, "I named him Bandit"."""
_LEAD_TIME = re.compile(
    rf"^(?:(?:{ZH_TIME.pattern})+[，,]?|(?:{EN_TIME.pattern})(?:\s+(?:{EN_TIME.pattern}))*,?\s+)", re.I
)
"""A time said before the subject: 每天早上, 晚上, "Every morning", "On weekends," (`mneme.memory.when`)."""
_DUMMY_IT = re.compile(
    r"it\s+(?:(?:rain|snow|pour|drizzl|hail|thunder|storm)\w*"
    r"|(?:takes|took|costs?|cost)\s+(?:me|us|you|him|her|them)\b"
    r"|(?:seems|seemed|looks|looked|sounds|sounded|feels|felt)\s+like\b|turns?\s+out|turned\s+out|depends"
    r"|(?:doesn't|does not|didn't|did not)\s+matter)"
    r"|it(?:'s|’s|\s+is|\s+was|\s+will\s+be|'ll\s+be)\s+(?:been\s+an?\s+\w+\s+(?:day|night|week|month|year|while)"
    r"|going\s+to\s+(?:rain|snow|be\s+\w+\s+(?:today|tomorrow|tonight|this))"
    r"|(?:raining|snowing|pouring|sunny|cloudy|windy|foggy|humid|freezing)\b"
    r"|(?:so\s+|too\s+|really\s+)?(?:hot|cold|warm|chilly)\s+(?:today|tonight|outside|out|here|in\s+here)\b"
    r"|(?:late|early|time\s+to|about\s+time|(?:almost\s+)?\d))",
    re.I,
)
"""English "it" that stands for no one (the weather, the time, how things are): "It rained
today", "It's been a long week", "It takes me an hour to get to work" (a closed class of
constructions, like the pronouns themselves)."""
_ZH_SUBJECT = re.compile(r"(?:他们|她们|它们|他|她|它)(?!的)")
_EN_SUBJECT = re.compile(r"(?:he|she|they|it)\b(?!')", re.I)
_EN_PRONOUN = re.compile(
    r"^(he|she|they|his|her|their|it|its|hes|shes)(?:(?='s\b|'re\b|'ll\b|'d\b|'ve\b)|\b)", re.I
)
_PRONOUN_GENDER: dict[str, Gender] = {
    "他": "m",
    "她": "f",
    "他们": "pl",
    "她们": "pl",
    "它": "it",
    "它们": "it",
    "he": "m",
    "his": "m",
    "she": "f",
    "her": "f",
    "they": "pl",
    "their": "pl",
    "it": "it",
    "its": "it",
    "hes": "m",  # "shes weird": she's, as typed in a hurry
    "shes": "f",
}


@dataclass(frozen=True)
class Named:
    """A family member or pet named in a sentence: how the speaker named them, and their sex or number."""

    phrase: str
    gender: Gender
    name: str = ""
    """A pet's name ("旺财", "Max"), when the speaker gave it."""


_ZH_PET_NAME = re.compile(
    r"（([^）]{1,8})）"  # as `resolve` writes it: 我家狗子（旺财）
    r"|[，,]?\s*(?:的)?(?:(?:名字|小名|大名)(?:是|叫)|名叫|(?:主子|宝宝)?叫(?:它|她|他)?)([\u4e00-\u9fff]{1,4}?|[A-Za-z]+)(?=[，。！!,.\s~～（(]|$)"
    r"|([\u4e00-\u9fff]{1,3}?|[A-Za-z]+)(?=以前|之前|原来|现在|一直|今年|最近|平时|每天)"
)
_EN_PET_NAME = re.compile(
    r",?\s*(?:an?\s+(?:[\w-]+\s+){0,3}?)?(?:named|called|(?:'s|’s)\s+name\s+is|is\s+(?:named|called))\s+([A-Za-z]+)"
    r"|,?\s*([A-Z][a-z]+)\b"
    r"|[,!.]?\s*(?:and\s+)?(?:we|I)\s+(?:call(?:ed)?|named)\s+(?:him|her|it)\s+([A-Z][A-Za-z]+)"
)
_OTHERS_PET = re.compile(
    rf"(?:{_ZH_KIN}|{OUTSIDERS_ZH})(?:家的?|的|养的|(?:也)?养了|有)(?:一|两|几)?(?:只|条|个)?({_ZH_PET})"
    rf"|\b(?:{_EN_KIN}|{OUTSIDERS_EN})(?:(?:'s|’s|s')\s+(?:[\w-]+\s+){{0,2}}?|s?\s+(?:has|have|got|adopted)\s+"
    rf"(?:a|an|two|three)\s+(?:[\w-]+\s+)?)({_EN_PET})\b",
    re.I,
)
"""Someone else's animal: 我表姐家的布偶猫, my sister's dog, my neighbour has a cat."""


_ROLE = re.compile(
    r"(?:是|当|做|成了|成为)(?:一名|一个|个|名)?$"
    r"|\b(?:is|'s|was|am|are|be|been|as|became|become)\s+(?:an?\s+|the\s+)?(?:[\w-]+\s+)?$",
    re.I,
)


def _pet_name(sentence: str, end: int, zh: bool) -> str:
    """The pet's name said right after the word for it ("我家狗叫旺财", "my cat Simba"), if any."""
    m = (_ZH_PET_NAME if zh else _EN_PET_NAME).match(sentence, end)
    return next((g for g in m.groups() if g), "") if m else ""


def named(sentence: str) -> list[tuple[int, Named | None]]:
    """Who a sentence names, in order: the speaker's family and pets, and (as None) others.

    People outside the family and others' animals are None: "我儿子班上有个同学叫乐乐" names 我儿子,
    then a classmate; "我表姐家的布偶猫" the cousin, then her cat.
    """
    found: list[tuple[range, Named | None]] = []
    for m in _ZH_NAMED.finditer(sentence):
        found.append((range(m.start(1), m.end(1)), Named(f"我{m.group(1)}", KIN_ZH[_kin_word(m.group(1))])))
    for m in _EN_NAMED.finditer(sentence):  # (not by isascii: "my fiancée")
        said = m.group(1).lower()
        found.append((range(m.start(1), m.end(1)), Named(f"my {said}", KIN_EN[said.split()[-1]])))
    for m in _ZH_PET_NAMED.finditer(sentence):
        name = _pet_name(sentence, m.end(1), zh=True)
        if m.group(0) == m.group(1) and not name:
            continue  # "猫是很独立的动物": cats at large; "狗子叫旺财" is the speaker's
        said = f"我家{m.group(1)}（{name}）" if name else f"我家{m.group(1)}"
        found.append((range(m.start(1), m.end(1)), Named(said, "pet", name)))
    for m in _EN_PET_NAMED.finditer(sentence):
        kind = m.lastindex or 1  # "my new kitten", or "the dog's name is…"
        name = _pet_name(sentence, m.end(), zh=False)  # after "a German shepherd puppy"
        said = f"my {m.group(kind).lower()} {name}".strip()
        found.append((range(m.start(kind), m.end(kind)), Named(said, "pet", name)))
    others = [range(m.start(), m.end()) for m in _OUTSIDER.finditer(sentence)]
    # the animal, not its owner (a group for each language)
    others += [
        range(m.start(m.lastindex or 0), m.end(m.lastindex or 0)) for m in _OTHERS_PET.finditer(sentence)
    ]
    for span in others:
        if _ROLE.search(sentence[: span.start]):
            continue  # "我老婆是老师", "My wife's a teacher": what she is, no one else
        if not any(span.start in taken or span[-1] in taken for taken, _ in found):
            found.append((span, None))
    return [(span.start, who) for span, who in sorted(found, key=lambda f: f[0].start)]


def _kin_word(said: str) -> str:
    """The kinship word of "小女儿" (女儿)."""
    return next(word for word in _ZH_LONGEST_FIRST if said.endswith(word))


_ZH_LEADS = re.compile(rf"^(?:我(?:的|家)?|咱(?:家)?)?{_ZH_ORDER}({_ZH_KIN})(?!们)")
_EN_LEADS = re.compile(rf"^(?:my|our)\s+{_EN_ORDER}({_EN_KIN})\b(?!\s+and\s+I\b)", re.I)
_POSSESSED = re.compile(r"\s*(?:'s?|’s?|的)\s*\S")


def leads_with_kin(sentence: str) -> bool:
    """Whether a sentence's subject is a family member it names ("我老公…", "老婆…", "My sister…").

    "My sister and I…" is the speaker's too: no.
    """
    said = sentence.strip()
    return bool(
        _ZH_LEADS.match(said) and not re.match(rf"^(?:我(?:的|家)?)?(?:{_ZH_KIN})(?:和|跟)我", said)
    ) or bool(_EN_LEADS.match(said))


_ZH_MENTION = re.compile(rf"(?:我(?:的|家)?|咱(?:家)?|给|带|陪|跟|和|帮|替|^)?({_ZH_KIN})(?!们)")
_EN_MENTION = re.compile(rf"\b(?:my|our)\s+(?:[a-z]+\s+)?({_EN_KIN})s?\b", re.I)


def kin_in(text: str) -> set[str]:
    """The family relations a text names, one word for each ("我妈", "my mom" and "老妈" are one).

    A one-character Chinese word counts only after 我, a verb of company (带/陪/给...) or at the
    start ("妈" in "妈的" is no mother).
    """
    words = [m.group(1).lower() for m in _EN_MENTION.finditer(text)]
    words += [
        m.group(1) for m in _ZH_MENTION.finditer(text) if len(m.group(1)) > 1 or m.group(0) != m.group(1)
    ]
    return {_SAME.get(w, w) for w in words}


_ZH_PET_LEADS = re.compile(
    rf"^(?:(?:我|咱)(?:们)?(?:家的?|的|养的)?|(?:我|咱)?(?:们)?家里(?:的|养的))(?:那|这)?(?:只|条|个)?(?:宠物)?"
    rf"(?:{_ZH_PET})(?!们)(?![和跟]我)"
)
_EN_PET_LEADS = re.compile(
    rf"^(?:my|our)\s+(?:[\w-]+\s+){{0,2}}?(?:{_EN_PET})\b(?!\s+and\s+I\b)(?!\s*(?:'s?|’s?)\s+(?:vet|owner|sitter|walker|trainer|groomer)\b)",
    re.I,
)


def pet_subject(sentence: str) -> bool:
    """Whether a sentence's subject is the speaker's pet ("我家狗对鸡肉过敏", "My cat's allergic to fish").

    A fact about the pet, none about the speaker ("My dog and I…" is the speaker's too).
    """
    said = sentence.strip()
    return bool(_ZH_PET_LEADS.match(said) or _EN_PET_LEADS.match(said))


_ZH_PET_MENTION = re.compile(
    rf"(?:{'|'.join(w for w in PETS_ZH if len(w) > 1)})"
    rf"|(?<=[只条家的我带遛给养])(?:{_ZH_PET})|(?:{_ZH_PET})(?=[粮窝砂笼绳])"
)
_EN_PET_MENTION = re.compile(rf"(?<!\bhot\s)\b(?:{_EN_PET})s?\b", re.I)


def pet_names(text: str) -> set[str]:
    """The names of the speaker's pets a text gives ("我家狗旺财…", "My cat Ginger…")."""
    return {n.name for _, n in named(text) if n is not None and n.name}


_NAMING = r"(?:叫|名字是|名叫|\b(?:named|called|name\s+is))\s*"


def gives_pet_name(text: str) -> bool:
    """Whether a text says what the speaker's pet is called ("我家猫叫咪咪", "a cat named Luna").

    The name is a lasting fact, however passing the rest may read.
    """
    return any(re.search(_NAMING + re.escape(name), text, re.I) for name in pet_names(text))


def about_pets(request: str, names: set[str] | frozenset[str] = frozenset()) -> bool:
    """Whether a request is about the speaker's pets.

    It names an animal people keep ("帮我挑款狗粮", "any tips for the dog?") or one of their pets'
    names, as what is kept about them gives them (`pet_names`: "does Ginger need any extra
    vaccines?" after "our cat Ginger has always been an indoor cat").
    """
    if _ZH_PET_MENTION.search(request) or _EN_PET_MENTION.search(request):
        return True
    said = request.lower()
    return any(name and name.lower() in said for name in names)


def kin_subject(sentence: str) -> bool:
    """Whether a sentence's subject is a family member it names, not someone of theirs.

    "我哥之前一直在北京工作" is; "My husband's coworker Rick came over" is not.
    """
    said = sentence.strip()
    lead = _ZH_LEADS.match(said) or _EN_LEADS.match(said)
    return leads_with_kin(said) and lead is not None and not _POSSESSED.match(said, lead.end(1))


def _agrees(pronoun: Gender, person: Gender) -> bool:
    if pronoun == "it" or person == "pet":
        return person == "pet"  # a pet may be 他 / she too, but only when no person fits
    if pronoun == "pl" or person == "pl":
        return pronoun == person
    return person == "?" or pronoun == person


def _referent(pronoun: Gender, sentence: str) -> Named | None:
    """Whom a pronoun at the head of the next sentence stands for, among those a sentence names.

    The last one it agrees with ("My boyfriend is meeting my parents. He's vegan": the boyfriend),
    a family member before a pet for 他 / she; nobody when someone outside the family is named
    after them ("我儿子班上有个同学叫乐乐。他…": the classmate).
    """
    people = named(sentence)
    for pet in (False, True):
        if pet and pronoun != "it" and any(n is not None and n.gender != "pet" for _, n in people):
            return None  # "我儿子特别喜欢我们家的狗。他…": the son or nobody
        for _, person in reversed(people):
            if person is None:
                return None
            if (person.gender == "pet") == pet and _agrees(pronoun, person.gender):
                return person
    return None


def resolve(sentence: str, earlier: Sequence[str], outsider: Callable[[str], bool]) -> str | None:
    """The sentence with its leading pronoun replaced by the family member or pet it stands for.

    "他上个月跳槽去腾讯了" after "我老公在阿里工作" is "我老公上个月跳槽去腾讯了"; "Her school starts
    at 8" after "My daughter is in first grade" is "My daughter's school starts at 8"; "它对鸡肉过敏"
    after "我家狗叫旺财" is "我家狗旺财对鸡肉过敏". The person is the last one named in the sentence
    just before whose sex or number fits the pronoun (`_referent`), when that sentence is not
    about someone outside the family ("我同事…", "My husband's coworker Rick came over": the
    pronoun most likely means them). Only that sentence:
    looking further back, "我喜欢周杰伦。他的歌都很好听" after "我老公在阿里工作" made the singer's
    songs the husband's (nothing tells a singer or a new colleague from no one); on the tuning
    half of benchmarks/data/pronoun_reads.json the sentence just before resolves 40 of the 42
    family cases, four sentences back 41.

    Args:
        sentence: One sentence.
        earlier: The sentences said before it, oldest first.
        outsider: Whether a sentence is about someone outside the family.

    A time said first is stepped over ("晚上它睡在…" is "我家猫（咪咪）晚上睡在…"), an English "it"
    that stands for no one is left alone (`_DUMMY_IT`), and a sentence that opens with the name
    of a pet named earlier is that pet's (`_by_pet_name`).

    Returns:
        The sentence as a statement about the named person or pet, or None when it starts with
        no pronoun or pet's name, or its person is not clear.
    """
    said = sentence.strip()
    when = _LEAD_TIME.match(said)  # "晚上它睡在…", "Every morning he wakes me up"
    who = when and (_ZH_SUBJECT.match(said, when.end()) or _EN_SUBJECT.match(said, when.end()))
    if when and who:
        found = resolve(said[when.end() :], earlier, outsider)
        if found is None:
            return None
        head = found[: len(found) - len(said) + who.end()]  # the person, before what follows the pronoun
        time = when.group(0).strip(" ,，")
        if _ZH_SUBJECT.match(who.group(0)):
            return head + time + found[len(head) :]  # 我家猫（咪咪）晚上睡在…
        return (
            f"{head} {time[0].lower()}{time[1:]}{found[len(head) :]}"  # My parrot Kiwi every morning calls…
        )
    if (naming := _NAMES_IT.match(said)) and earlier:  # "I named him Bandit" after "Meet my new ferret!"
        pet = _referent("pet", earlier[-1])
        if pet is not None and pet.gender == "pet" and not pet.name:
            name = naming.group(1) or naming.group(2)
            return (
                f"{pet.phrase}叫{name}"
                if naming.group(1)
                else f"{pet.phrase[:1].upper()}{pet.phrase[1:]}'s name is {name}"
            )
    zh = _ZH_PRONOUN.match(said)
    en = None if zh else _EN_PRONOUN.match(said)
    if zh is None and en is None:
        return _by_pet_name(said, earlier)
    lead = zh or en
    assert lead is not None
    word = lead.group(1)
    if _DUMMY_IT.match(said):
        return None
    gender = _PRONOUN_GENDER[word.lower()]
    person = _referent(gender, earlier[-1]) if earlier else None
    # (the `whose` head is read only once a family member is named: "我老公的同事老刘来家里吃饭";
    # it reads a sentence about a pet as someone else's, which it is)
    if person is None or (person.gender != "pet" and outsider(earlier[-1])):
        return None
    if zh is not None:
        return person.phrase + said[zh.end(1) :]
    rest = said[lead.end(1) :]
    if rest.startswith("'re"):
        rest = " are" + rest[3:]
    if word.lower() in ("hes", "shes"):
        rest = " is" + rest
    phrase = person.phrase[0].upper() + person.phrase[1:]
    if word.lower() in ("his", "her", "their", "its"):
        phrase += "'" if phrase.endswith("s") else "'s"
    return phrase + rest


def _by_pet_name(said: str, earlier: Sequence[str]) -> str | None:
    """A sentence that opens with the name of a pet named earlier, as said of that pet.

    "Salt only eats wet food" after "I've got two cats, Salt and Pepper" is "My cat Salt only
    eats wet food"; "大橘上个月走了" after "我养了一只橘猫，叫大橘" is "我家橘猫（大橘）上个月走了".
    A Chinese name needs two characters and an English one a capital letter, so a pet called 豆
    or "pepper" is not read into every sentence that starts with the word.
    """
    pets = {n.name: n for s in earlier for _, n in named(s) if n is not None and n.gender == "pet" and n.name}
    for name, pet in pets.items():
        if name.isascii():
            if name[:1].isupper() and re.match(rf"{re.escape(name)}\b(?!\s*(?:'s|’s)?\s*(?:and|&)\b)", said):
                phrase = pet.phrase if pet.phrase.endswith(name) else f"{pet.phrase} {name}"
                phrase = re.sub(rf"s (?={re.escape(name)}$)", " ", phrase)  # two cats: this one cat
                return phrase[0].upper() + phrase[1:] + said[len(name) :]
        elif len(name) >= 2 and said.startswith(name) and not said.startswith(f"{name}和"):
            phrase = pet.phrase if name in pet.phrase else f"{pet.phrase}（{name}）"
            return phrase + said[len(name) :]
    return None


def resolved(text: str, before: Sequence[str], outsider: Callable[[str], bool]) -> str:
    """A message with each sentence that starts with a pronoun (or a pet's name) resolved (`resolve`).

    Args:
        text: The message.
        before: The speaker's messages just before it, oldest first (only read).
        outsider: Whether a sentence is about someone outside the family.

    Returns:
        The message, the same but for those sentences.
    """
    earlier: list[str] = []
    for said in before:  # read as they were: "She's a Maine Coon" after "Meet my new kitten!" is the kitten
        for clause in clauses(said):
            earlier.append(resolve(clause, earlier, outsider) or clause)
    out, cursor = text, 0
    for sentence in clauses(text):
        at = out.find(sentence, cursor)
        new = resolve(sentence, earlier, outsider)
        if at >= 0 and new is not None:
            out = out[:at] + new + out[at + len(sentence) :]
            cursor = at + len(new)
        elif at >= 0:
            cursor = at + len(sentence)
        earlier.append(new or sentence)
    return out
