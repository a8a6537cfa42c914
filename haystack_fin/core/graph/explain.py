"""A filing graph in plain words and as JSON: the paths that pulled passages in (``ask --explain``) and the
adjacency list with counts (``haystack-fin graph``), so edges can be inspected before they are trusted.

A path line reads from the passage the graph added back to where the walk started, e.g.
``p. 45 Note 7 - Income Taxes <- referenced by p. 31 Results of Operations, 0.95``.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from haystack_fin.core.graph.build import CHUNK, ENTITY, FACT, FilingGraph
from haystack_fin.core.graph.edges import ChunkInfo, Edge

_MAX_LABEL = 48  # characters of a section title in a path line: enough to tell notes and sections apart


def _pages(pages: Sequence[int]) -> str:
    if not pages:
        return "p. ?"
    lo, hi = min(pages), max(pages)
    return f"p. {lo}" if lo == hi else f"pp. {lo}-{hi}"


def chunk_label(info: ChunkInfo | None, chunk_id: str = "") -> str:
    """``p. 45 Note 7 - Income Taxes`` (pages, then the innermost heading, else the Item; ``table`` for tables)."""
    if info is None:
        return chunk_id or "?"
    title = " ".join(info.section_path[-1].split()) if info.section_path else ""
    if not title:
        title = f"Item {info.item}" if info.item else ""
    if len(title) > _MAX_LABEL:
        title = title[: _MAX_LABEL - 3].rstrip() + "..."
    kind = " (table)" if info.table_id else ""
    return " ".join(part for part in (_pages(info.pages), title) if part) + kind


def _relation(edge: Edge, current: str) -> str:
    """How ``current`` (one end of ``edge``) relates to the other end, in words."""
    forward = edge.target == current  # current is the edge's target
    if edge.type == "explicit":
        return "referenced by" if forward else "refers to"
    if edge.kind == "caption":  # table -> the paragraph that introduces it
        return "introduces" if forward else "introduced by"
    if edge.kind == "continuation":  # block -> its next block
        return "continues" if forward else "continued in"
    if edge.type == "inferred":
        ev = edge.evidence
        what = " ".join(str(ev[k]) for k in ("metric", "period") if ev.get(k))
        return f"same value{' of ' + what if what else ''} as"
    return f"{edge.type}/{edge.kind} with"


def path_words(chunk_id: str, path: Sequence[Edge], chunks: Mapping[str, ChunkInfo], reason: str = "") -> str:
    """One line: the passage, then each edge back to the walk's start with its confidence. A passage without a
    path (an anchor, or one an intent required) says why it is there instead."""
    line = chunk_label(chunks.get(chunk_id), chunk_id)
    if not path:
        return f"{line} ({reason or 'graph'})"
    current = chunk_id
    for edge in reversed(path):
        other = edge.source if edge.target == current else edge.target
        line += f" <- {_relation(edge, current)} {chunk_label(chunks.get(other), other)}, {edge.confidence:.2f}"
        current = other
    if reason and reason not in ("path", "graph"):
        line += f" ({reason})"
    return line


def _node_row(fg: FilingGraph, node: str) -> dict[str, Any]:
    data = fg.graph.nodes[node]
    kind = data.get("node_type")
    if kind == CHUNK:
        info = fg.chunks[node]
        return {"node_type": CHUNK, "item": info.item, "pages": list(info.pages), "label": chunk_label(info)}
    if kind == FACT:
        return {"node_type": FACT, **fg.fact(node).to_dict()}
    return {"node_type": ENTITY, "kind": data.get("kind"), "key": data.get("key"), "item": data.get("item")}


def _item_of(fg: FilingGraph, node: str) -> str:
    data = fg.graph.nodes[node]
    if data.get("node_type") == FACT:
        return fg.chunks[fg.fact(node).chunk_id].item
    return str(data.get("item") or "")


def export_graph(fg: FilingGraph, item: str | None = None) -> dict[str, Any]:
    """The graph (or the part of it scoped to ``item``: its nodes and every edge touching one) as JSON:
    ``{filing_id, item, counts: {nodes: {type: n}, entities: {kind: n}, facts, edges: {type: n},
    edge_kinds: {type/kind: n}}, nodes: {id: {...}}, adjacency: {source: [{target, type, kind, confidence,
    evidence}]}}``. Entity counts are mentions per chunk; an edge across Items is kept when either end is in
    ``item``, and its other end is listed among the nodes."""
    g = fg.graph
    inside = {n for n in g.nodes if item is None or _item_of(fg, n) == item}
    edges = [(s, t, d["edge"]) for s, t, d in g.edges(data=True) if s in inside or t in inside]
    listed = inside | {s for s, _, _ in edges} | {t for _, t, _ in edges}
    adjacency: dict[str, list[dict[str, Any]]] = {}
    for source, _target, edge in edges:
        row = edge.to_dict()
        del row["source"]
        adjacency.setdefault(source, []).append(row)
    entities: Counter[str] = Counter()
    facts = 0
    for chunk_id in inside:
        info = fg.chunks.get(chunk_id)
        if info is not None:
            entities.update(e.kind for e in info.entities)
            facts += len(info.facts)
    nodes: Counter[str] = Counter(str(g.nodes[n].get("node_type")) for n in inside)
    return {
        "filing_id": fg.filing_id,
        "item": item,
        "counts": {
            "nodes": dict(sorted(nodes.items())),
            "entities": dict(sorted(entities.items())),
            "facts": facts,
            "edges": dict(sorted(Counter(e.type for _, _, e in edges).items())),
            "edge_kinds": dict(sorted(Counter(f"{e.type}/{e.kind}" for _, _, e in edges).items())),
        },
        "nodes": {n: _node_row(fg, n) for n in sorted(listed)},
        "adjacency": {s: adjacency[s] for s in sorted(adjacency)},
    }


def chunk_edge_lines(fg: FilingGraph, item: str | None = None) -> list[str]:
    """Chunk-to-chunk edges (explicit, caption, continuation, same value) in plain words, in filing order."""
    rows: list[tuple[int, int, str]] = []
    for source, target, data in fg.graph.edges(data=True):
        if source not in fg.chunks or target not in fg.chunks:
            continue
        src, dst = fg.chunks[source], fg.chunks[target]
        if item is not None and item not in (src.item, dst.item):
            continue
        rows.append((src.index, dst.index, path_words(target, [data["edge"]], fg.chunks)))
    return [line for _, _, line in sorted(rows)]
