"""The LLM extractor's user-model fields (aspect, constraint, domains), with a scripted model, through to the records."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from mneme.context import Context
from mneme.memory.api import Memory
from mneme.memory.extract import Candidate
from mneme.memory.llm_extract import ExtractionResult, LLMExtractor, RefMap, parse
from mneme.memory.record import MemoryRecord
from mneme.memory.usermodel.taxonomy import taxonomy
from mneme.memory.write import memory_domains
from mneme.store.chroma import ChromaStore
from tests.fakes import ScriptedChatModel

LLM = Context(extractor="llm")
NO_MEMORIES = RefMap(())


def reply(*ops: dict[str, Any]) -> str:
    return json.dumps({"memories": list(ops)}, ensure_ascii=False)


def llm_memory(store: ChromaStore, *replies: str) -> tuple[Memory, ScriptedChatModel]:
    model = ScriptedChatModel.script(*replies)
    return Memory(store, model=model, context=LLM), model


def op_schema() -> dict[str, Any]:
    schema = ExtractionResult.model_json_schema()
    return dict(schema["$defs"]["MemoryOp"]["properties"])


def test_the_schemas_names_are_the_taxonomys() -> None:
    props = op_schema()
    [named, null] = props["aspect"]["anyOf"]
    assert named["enum"] == list(taxonomy().aspects) and null == {"type": "null"}
    assert props["domains"]["items"]["enum"] == list(taxonomy().domains)
    assert props["constraint"]["type"] == "boolean"
    # still small enough for a small model's prompt: the whole schema, enums included
    assert len(json.dumps(ExtractionResult.model_json_schema())) < 3000


def test_the_prompt_names_only_taxonomy_names_and_carries_the_schema() -> None:
    model = ScriptedChatModel.script()
    [system, _] = LLMExtractor(model).prompt(["I work at Google"], NO_MEMORIES, datetime.now(UTC))
    text = str(system.content)
    guidance = text[text.index("For a memory about the user") : text.index("Reply with one JSON")]
    aspects = re.findall(r"\(([a-z_]+): where they live; ([a-z_]+): their furniture; (.*?)\.\.\.\)", guidance)
    [(residence, home, rest)] = aspects
    assert {residence, home, *rest.split(", ")} <= set(taxonomy().aspects)
    [(first, second)] = re.findall(r"a peanut allergy: ([a-z_]+), ([a-z_]+)\)", guidance)
    assert {first, second} <= set(taxonomy().domains)
    assert '"communication"' in text and '"knowledge"' in text  # both enums reach the model


def test_a_new_employer_from_the_model_supersedes_the_old_one(chroma_store: ChromaStore) -> None:
    memory, model = llm_memory(
        chroma_store,
        reply({"op": "add", "text": "在字节跳动工作", "aspect": "employer", "domains": ["career"]}),
        # the second reply names a field of its own: the aspect still keys it as the employer
        reply(
            {
                "op": "add",
                "kind": "profile",
                "subject": "company",
                "value": "腾讯",
                "text": "在腾讯工作",
                "aspect": "employer",
            }
        ),
    )
    memory.add("我在字节跳动上班", user_id="u", session_id="s1")
    changes = memory.add("我跳槽去腾讯了，下周一入职", user_id="u", session_id="s2")
    assert len(model.seen) == 2
    assert [c.operation for c in changes] == ["SUPERSEDE"]
    current = [r for r in memory.get_all(user_id="u") if r.aspect == "employer"]
    assert [r.text for r in current] == ["在腾讯工作"]
    [employer] = current
    assert employer.subject == "employer" and employer.kind == "profile"
    rows = memory.history(employer.id, user_id="u")
    assert [(r.operation, r.old_text, r.new_text) for r in rows] == [
        ("ADD", None, "在字节跳动工作"),
        ("SUPERSEDE", "在字节跳动工作", "在腾讯工作"),
    ]
    old = memory.search("字节跳动", user_id="u", include_history=True)
    assert any(h.text == "在字节跳动工作" and not h.current for h in old)


def test_a_family_members_job_from_the_model_is_theirs_not_the_users(chroma_store: ChromaStore) -> None:
    memory, _ = llm_memory(
        chroma_store,
        reply({"op": "add", "text": "在字节跳动工作", "aspect": "employer"}),
        # the model marks whose it is, but still names the employer field and points at the user's
        reply(
            {
                "op": "update",
                "id": 1,
                "kind": "profile",
                "subject": "employer",
                "value": "腾讯",
                "text": "老婆在腾讯上班",
                "aspect": "employer",
                "others": True,
            }
        ),
    )
    memory.add("我在字节跳动上班", user_id="u", session_id="s1")
    changes = memory.add("我老婆在腾讯上班", user_id="u", session_id="s2")
    assert [c.operation for c in changes] == ["ADD"]
    by_text = {r.text: r for r in memory.get_all(user_id="u")}
    assert set(by_text) == {"在字节跳动工作", "老婆在腾讯上班"}
    assert by_text["老婆在腾讯上班"].aspect == "family" and by_text["老婆在腾讯上班"].subject is None
    assert [f.text for f in memory.profile(user_id="u").values()] == ["在字节跳动工作"]


def test_a_constraint_from_the_model_is_what_the_read_path_sees(chroma_store: ChromaStore) -> None:
    # `food` is a like/dislike aspect: only the model's flag makes this one a hard limit
    memory, _ = llm_memory(
        chroma_store,
        reply(
            {
                "op": "add",
                "text": "Cannot eat cilantro, it makes them sick",
                "aspect": "food",
                "constraint": True,
            }
        ),
        reply({"op": "add", "text": "Likes Thai food", "aspect": "food", "constraint": False}),
    )
    memory.add("I can't eat cilantro, it makes me sick", user_id="u")
    memory.add("I really like Thai food", user_id="u")
    by_text = {r.text: r for r in memory.get_all(user_id="u")}
    assert by_text["Cannot eat cilantro, it makes them sick"].constraint is True
    assert by_text["Likes Thai food"].constraint is False
    hits = {h.text: h for h in memory.search("Thai dinner with cilantro", user_id="u")}
    assert hits["Cannot eat cilantro, it makes them sick"].constraint is True
    assert hits["Cannot eat cilantro, it makes them sick"].aspects == ["food"]


def test_the_models_constraint_survives_the_writers_own_aspect_tagging(chroma_store: ChromaStore) -> None:
    # no aspect from the model: the writer reads one (`drink`, which its classifier calls a like)
    memory, _ = llm_memory(
        chroma_store, reply({"op": "add", "text": "No coffee after 2pm", "constraint": True})
    )
    memory.add("I can't have coffee after 2pm or I don't sleep", user_id="u")
    [record] = memory.get_all(user_id="u")
    assert (record.aspect, record.constraint) == ("drink", True)


def test_an_aspect_of_the_taxonomy_brings_its_constraint_and_sensitivity() -> None:
    raw = reply(
        {"op": "add", "text": "Allergic to peanuts", "aspect": "allergy"},
        {"op": "add", "text": "Has type 1 diabetes", "aspect": "health", "constraint": None},
    )
    allergy, health = parse(raw, NO_MEMORIES, "en")
    assert (allergy.aspect, allergy.constraint) == ("allergy", True)
    assert (health.aspect, health.constraint, health.sensitivity) == ("health", True, 2)


def test_an_unknown_aspect_is_dropped_and_the_memory_kept(chroma_store: ChromaStore) -> None:
    raw = reply(
        {
            "op": "add",
            "text": "Loves jazz",
            "aspect": "musical_taste",
            "domains": ["music", "concerts", "music"],
        }
    )
    [cand] = parse(raw, NO_MEMORIES, "en")
    assert (cand.text, cand.aspect, cand.domains) == ("Loves jazz", None, ("music",))
    memory, model = llm_memory(chroma_store, raw)
    changes = memory.add("I love jazz", user_id="u")
    assert [(c.operation, c.text) for c in changes] == [("ADD", "Loves jazz")]
    assert len(model.seen) == 1 and memory.pending(user_id="u") == []  # no retry, nothing queued
    [record] = memory.get_all(user_id="u")
    assert record.aspect in taxonomy().aspects  # tagged by the writer, as a memory without one
    assert record.aspect != "musical_taste" and "music" in record.domains


def test_a_spelling_of_a_known_aspect_is_read_as_it() -> None:
    [cand] = parse(
        reply({"op": "add", "text": "Prefers an aisle seat", "aspect": " Seat "}), NO_MEMORIES, "en"
    )
    assert cand.aspect == "seat"


def test_a_reply_without_the_new_fields_still_works(chroma_store: ChromaStore) -> None:
    raw = reply(
        {"op": "add", "text": "Lives in Berlin"},
        {"op": "add", "kind": "episodic", "text": "Went to a jazz concert on 2024-05-01"},
    )
    live, event = parse(raw, NO_MEMORIES, "en")
    assert (live.aspect, live.constraint, live.domains) == (None, False, ())
    assert (event.kind, event.aspect) == ("episodic", None)
    memory, _ = llm_memory(chroma_store, raw)
    changes = memory.add("I live in Berlin. I went to a jazz concert on May 1st", user_id="u")
    assert [c.operation for c in changes] == ["ADD", "ADD"]
    by_text = {r.text: r for r in memory.get_all(user_id="u")}
    assert by_text["Lives in Berlin"].aspect == "residence"  # `tag_aspect`, as before
    assert by_text["Went to a jazz concert on 2024-05-01"].aspect is None  # an event stays outside


def test_a_profile_field_of_the_taxonomy_names_its_aspect_whatever_the_model_said() -> None:
    raw = reply(
        {
            "op": "add",
            "kind": "profile",
            "subject": "location",
            "value": "Berlin",
            "text": "Lives in Berlin",
            "aspect": "home",
        },
        {
            "op": "add",
            "kind": "profile",
            "subject": "order_1001",
            "value": "shipped",
            "text": "Order 1001 shipped",
        },
    )
    home, order = parse(raw, NO_MEMORIES, "en")
    assert (home.subject, home.aspect) == ("location", "residence")
    assert (order.subject, order.aspect) == ("order_1001", None)


@pytest.mark.parametrize(
    ("named", "read", "lead"),
    [
        (("dining", "cooking"), {"health": 0.6, "cooking": 0.2, "dining": 0.1}, "cooking"),
        (("dining",), {}, "dining"),
        ((), {"health": 0.6, "cooking": 0.2}, "health"),
    ],
)
def test_the_domains_a_memory_matters_for_mix_the_models_with_the_classifiers(
    monkeypatch: pytest.MonkeyPatch, named: tuple[str, ...], read: dict[str, float], lead: str
) -> None:
    monkeypatch.setattr("mneme.memory.write.item_domains", lambda text: dict(read))
    cand = Candidate(kind="semantic", text="Allergic to peanuts", aspect="allergy", domains=named)
    domains = memory_domains(cand, cand.text)
    assert next(iter(domains)) == lead and set(named) | set(read) == set(domains)
    assert abs(sum(domains.values()) - (1.0 if named else sum(read.values()))) < 0.01


def test_the_models_domains_reach_the_record(chroma_store: ChromaStore) -> None:
    memory, _ = llm_memory(
        chroma_store,
        reply(
            {"op": "add", "text": "Allergic to peanuts", "aspect": "allergy", "domains": ["dining", "gifts"]}
        ),
    )
    memory.add("I'm allergic to peanuts", user_id="u")
    [record] = memory.get_all(user_id="u")
    assert isinstance(record, MemoryRecord)
    assert (record.aspect, record.constraint) == ("allergy", True)
    assert {"dining", "gifts"} <= set(record.domains)
    assert record.domains["gifts"] >= 0.25  # a domain the model named weighs at least its half's share
