"""The query trace in short lines for people (``ask --explain``); ``ask --json`` keeps the full trace.

Each function reads the plain-JSON trace the query pipeline returns (``QueryRunner.run(...).trace``) and returns
lines without a trailing newline: scope (matched and unmatched), Items and budgets, statements and headings, graph
paths, and per passage how it was retrieved (tree path, statement, heading, graph or flat match).
"""

from collections.abc import Mapping, Sequence
from typing import Any

MAX_REASONS = 3


def _short_node(node_id: str) -> str:
    """``BBY#<run>/tree-I-2-s1-0`` -> ``s1-0``; ``BBY#<run>/chunk-00086`` -> ``chunk-00086`` (ids without a run
    alike)."""
    tail = node_id.rsplit("#", 1)[-1].split("/", 1)[-1]
    if tail.startswith("tree-"):
        return tail.rsplit("-", 2)[-2] + "-" + tail.rsplit("-", 1)[-1]
    return tail


def scope_lines(scope: Mapping[str, Any] | None) -> list[str]:
    """Which filings the question was scoped to and why; what it asks for that no indexed filing has."""
    if not scope:
        return ["Scope: (no scope stage)"]
    ids = list(scope.get("filing_ids") or [])
    head = f"Scope: {scope.get('reason') or ('scoped' if scope.get('scoped') else 'not scoped')}"
    lines = [f"{head} -> {', '.join(ids) if ids else 'no filing'}"]
    for company in scope.get("companies") or []:
        if company.get("rule"):
            lines.append(f"  rule: {company['rule']}")
    for match in scope.get("matches") or []:
        if not match.get("selected"):
            continue
        reasons = list(match.get("reasons") or [])
        more = f"; +{len(reasons) - MAX_REASONS} more" if len(reasons) > MAX_REASONS else ""
        what = " ".join(str(match.get(k)) for k in ("company", "form", "period") if match.get(k))
        lines.append(f"  matched {match.get('filing_id')} ({what}): {'; '.join(reasons[:MAX_REASONS])}{more}")
    others = sum(1 for m in scope.get("matches") or [] if not m.get("selected"))
    if others:
        lines.append(f"  {others} other filing(s) scored lower")
    for u in scope.get("unmatched") or []:
        lines.append(f"  unmatched {u.get('kind')} {u.get('text')!r}: {u.get('reason')}")
    return lines


def routing_lines(routing: Mapping[str, Any] | None) -> list[str]:
    """FLAM: the lexicon terms found, then per filing its Items by weight with their budgets k_i."""
    if not routing:
        return []
    terms = ", ".join(sorted({str(t.get("term")) for t in routing.get("terms") or []})) or "none"
    lines = [f"Items (FLAM {routing.get('mode', '')}, terms: {terms}; weight and budget k per Item):"]
    weights: Mapping[str, Mapping[str, float]] = routing.get("item_weights") or {}
    budgets: Mapping[str, Mapping[str, int]] = routing.get("budgets") or {}
    for fid in sorted(set(weights) | set(budgets)):
        w, b = weights.get(fid) or {}, budgets.get(fid) or {}
        order = sorted(set(w) | set(b), key=lambda item: (-float(w.get(item, 0.0)), item))
        parts = [f"{item} {float(w.get(item, 0.0)):.2f} k={b.get(item, 0)}" for item in order]
        lines.append(f"  {fid}: {', '.join(parts)}")
        for item, sections in ((routing.get("sections") or {}).get(fid) or {}).items():
            routed = ", ".join(
                f"{s.get('section')!r} {float(s.get('score') or 0.0):.3f} k={s.get('k')}" for s in sections
            )
            lines.append(f"    Item {item} sections (FLAM score, k): {routed}")
    return lines


def retrieval_lines(retrieval: Mapping[str, Any] | None) -> list[str]:
    """Statement blocks and heading chunks the retriever added."""
    if not retrieval:
        return []
    lines = []
    statements = retrieval.get("statements") or {}
    if statements:
        asked = ", ".join(f"{k} {v}" for k, v in (statements.get("asked") or {}).items())
        lines.append(f"Statements: {asked} ({len(statements.get('added') or [])} statement blocks added)")
    sections = retrieval.get("sections") or {}
    if sections:
        asked = ", ".join(f"{title!r} ({cluster})" for title, cluster in (sections.get("asked") or {}).items())
        if asked:
            lines.append(f"Sections: {asked} ({len(sections.get('added') or [])} chunks under those headings added)")
        for routed in sections.get("routed") or []:
            lines.append(
                f"FLAM section: {routed.get('filing_id')} Item {routed.get('item')} {routed.get('section')!r} "
                f"(score {float(routed.get('score') or 0.0):.3f}, {len(routed.get('added') or [])} chunks added)"
            )
    return lines


def graph_lines(graph: Mapping[str, Any] | None, paths: Sequence[str | None]) -> list[str]:
    """How many passages the graph stage added, and for each result it added, the path in words."""
    if graph is None:
        return []
    added = sum(len(f.get("added") or []) for f in graph.get("filings") or [])
    lines = [f"Graph: {added} passage(s) added, {sum(1 for x in paths if x)} among the results"]
    lines.extend(f"  [{n}] {line}" for n, line in enumerate(paths, 1) if line)
    return lines


def passage_lines(how: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """Per returned passage, how the retriever reached it: the tree path(s) from the root, or the kind of extra
    candidate (a statement block, a chunk under a heading, one of an Item the question's concepts are reported in,
    the page before or after another candidate, a graph neighbour, a flat BM25/dense match)."""
    lines = ["Retrieved by:"]
    for n, info in enumerate(how, 1):
        info = info or {}
        paths: Mapping[str, Sequence[str]] = info.get("tree_paths") or {}
        mode = str(info.get("mode") or "")
        if paths:
            for tree, nodes in paths.items():
                item = info.get("item")
                route = " > ".join(_short_node(x) for x in nodes)
                lines.append(f"  [{n}] {tree} tree, Item {item}: {route}")
        elif mode == "statement":
            lines.append(f"  [{n}] statement block ({info.get('statement')})")
        elif mode == "section" and info.get("flam_score") is not None:
            score = float(info.get("flam_score") or 0.0)
            lines.append(f"  [{n}] in the FLAM-routed section {info.get('section')!r} (score {score:.3f})")
        elif mode == "section":
            lines.append(f"  [{n}] under the heading {info.get('section')!r} ({info.get('cluster')})")
        elif mode == "heading":
            lines.append(f"  [{n}] under the filing's heading {info.get('section')!r}, which matches the question")
        elif mode == "intent_item":
            lines.append(f"  [{n}] best match in Item {info.get('item')}, where the question's concepts are reported")
        elif mode == "neighbour":
            lines.append(f"  [{n}] the {info.get('direction')} page of candidate {_short_node(str(info.get('of')))}")
        elif mode == "graph":
            lines.append(f"  [{n}] graph neighbour ({info.get('reason') or 'see Graph'})")
        else:
            lines.append(f"  [{n}] flat BM25/dense match (no tree path)")
    return lines


def fallback_lines(fallback: Mapping[str, Any] | None) -> list[str]:
    """The modality fallback's tier and why (nothing when the pipeline has no fallback stage)."""
    if not fallback:
        return []
    kept = fallback.get("n_kept")
    return [f"Fallback: tier {fallback.get('tier')}, {kept} passage(s) kept: {fallback.get('reason')}"]


def explain_lines(trace: Mapping[str, Any]) -> list[str]:
    """All of the above, in pipeline order."""
    return [
        *scope_lines(trace.get("scope")),
        *routing_lines(trace.get("routing")),
        *retrieval_lines(trace.get("retrieval")),
        *graph_lines(trace.get("graph"), trace.get("graph_paths") or []),
        *fallback_lines(trace.get("fallback")),
        *passage_lines(trace.get("retrieved_by") or []),
    ]
