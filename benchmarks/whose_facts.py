"""Issue 11: whose fact is it? (benchmarks/data/whose_facts.json).

Written by a helper who read none of mneme's code, from the promise alone: a user says things
about themselves, about their family and about other people, in 2 to 4 messages on one topic
("我住在杭州" then "我哥住在成都"). What the user says of themselves stays theirs; a brother's
home never replaces the user's, a wife's new job never becomes the user's employer. Each
message carries whose fact it states (`self`, `family`, `other`) and whether it still holds at
the end of the conversation (`current_at_end`: a later "my brother moved to Sydney" ends the
earlier "my brother lives in Perth").

Each scenario is a fresh user on one `Memory`, each message its own `Memory.add`. A memory is
the message's when that message's write added or superseded it, with its text. Counted:

- `own_kept`: the user's own facts that still hold, stored and still current at the end;
- `family_kept`: the same for facts about family members;
- `lost`: facts that still hold, stored, and gone at the end (replaced or deleted), with whose
  message took them (`cross`: by a message about someone else than the lost fact's owner, the
  failure this set is about);
- `stale`: facts a later message ended that are still current;
- `fields_from_others`: profile fields whose value came from a message about someone else;
- `single_from_others`: current memories from such a message kept under one of the user's own
  single-valued aspects (home, employer, age...), where a later statement replaces them.

The set was split before any tuning by a hash of the scenario's id (`half`).

Run: `python -m benchmarks.whose_facts [--split tune|report|all] [--verbose]`.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from typing import Any

from benchmarks.common import ROOT, half, run_half

DATA = ROOT / "benchmarks" / "data" / "whose_facts.json"


def run(split: str, verbose: bool = False) -> dict[str, Any]:
    """Score the scenarios of one half (or all) through `Memory.add`."""
    from mneme import Memory
    from mneme.memory.usermodel.taxonomy import taxonomy

    data = [s for s in json.loads(DATA.read_text())["scenarios"] if split in ("all", half(s["id"]))]
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="mneme-whose-") as tmp, Memory.open(tmp) as memory:
        for n, sc in enumerate(data):
            user = f"w{n}"
            made: dict[str, tuple[int, str]] = {}  # memory id -> (message index, text it was given)
            taken_by: dict[int, int] = {}  # message index -> index of the message that replaced it
            for i, msg in enumerate(sc["messages"]):
                before = {r.id: r.text for r in memory.get_all(user_id=user)}
                changes = memory.add(
                    [{"role": "user", "content": msg["text"], "id": f"m{i}"}],
                    user_id=user,
                    session_id=f"s{i}",
                )
                after = {r.id: r.text for r in memory.get_all(user_id=user)}
                for rid, text in before.items():
                    if after.get(rid) != text and rid in made and made[rid][0] != i:
                        taken_by.setdefault(made[rid][0], i)
                for c in changes:
                    if c.id and c.operation in ("ADD", "SUPERSEDE", "UPDATE"):
                        made[c.id] = (i, c.text)
            records = [r for r in memory.get_all(user_id=user) if not r.metadata.get("outdated")]
            current = {r.id: r.text for r in records}
            for r in records:  # someone else's fact kept as one of the user's own single values
                source = made[r.id][0] if r.id in made else None
                aspect = taxonomy().aspects.get(r.aspect or "")
                if (
                    source is not None
                    and sc["messages"][source]["whose"] != "self"
                    and aspect
                    and aspect.single
                ):
                    counts["single_from_others"] += 1
                    if verbose:
                        print(f"as own {sc['id']} {r.aspect} {r.text!r}")
            fields = memory.profile(user_id=user)
            for i, msg in enumerate(sc["messages"]):
                mine = [rid for rid, (j, _) in made.items() if j == i]
                whose = msg["whose"]
                if not mine:
                    counts[f"{whose}_unstored"] += 1
                    if verbose:
                        print(f"unstored {sc['id']} {whose} {msg['text']!r}")
                    continue
                held = any(current.get(rid) == made[rid][1] for rid in mine)
                if msg["current_at_end"]:
                    counts[f"{whose}_holding"] += 1
                    counts[f"{whose}_kept"] += held
                    if not held:
                        counts["lost"] += 1
                        culprit = taken_by.get(i)
                        if culprit is not None and sc["messages"][culprit]["whose"] != whose:
                            counts["cross"] += 1
                            counts[f"cross_{sc['messages'][culprit]['whose']}_took_{whose}"] += 1
                        if verbose:
                            by = sc["messages"][culprit]["text"] if culprit is not None else "?"
                            print(f"lost  {sc['id']} {whose} {msg['text']!r} <- {by!r}")
                else:
                    counts["ended"] += 1
                    counts["stale"] += held
                    if verbose and held:
                        print(f"stale {sc['id']} {whose} {msg['text']!r}")
            for field in fields.values():
                source = made[field.id][0] if field.id in made else None
                if source is not None and sc["messages"][source]["whose"] != "self":
                    counts["fields_from_others"] += 1
                    if verbose:
                        print(f"field {sc['id']} {field.subject} <- {sc['messages'][source]['text']!r}")

    def share(kept: str, of: str) -> str:
        return f"{counts[kept]}/{counts[of]}"

    return {
        "scenarios": len(data),
        "own_kept": share("self_kept", "self_holding"),
        "family_kept": share("family_kept", "family_holding"),
        "other_kept": share("other_kept", "other_holding"),
        "lost": counts["lost"],
        "cross": counts["cross"],
        "cross_detail": {k: v for k, v in sorted(counts.items()) if k.startswith("cross_")},
        "stale": share("stale", "ended"),
        "fields_from_others": counts["fields_from_others"],
        "single_from_others": counts["single_from_others"],
        "unstored": {k: counts[f"{k}_unstored"] for k in ("self", "family", "other")},
    }


def main() -> None:
    """Run the chosen half and write the result."""
    run_half("whose_facts", __doc__, run)


if __name__ == "__main__":
    main()
