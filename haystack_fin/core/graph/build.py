"""One networkx graph per filing, built from the filing's chunks as plain dicts (``{"id", "content", "meta"}``).

Nodes: ``chunk`` (every chunk), ``fact`` (every numeric table cell, ``facts.Fact``) and ``entity`` (a metric,
period, segment, geography or company scoped to one Item, id ``schema.entity_node_id``). Edges carry an
``edges.Edge`` under the attribute ``edge``; see ``edges`` for the tiers.

Storage: ``chunk_graph_meta`` gives each chunk's entities (``Entity.to_row``) and outgoing chunk-to-chunk edges as
meta (``schema.GRAPH_ENTITIES``, ``GRAPH_EDGES``: each one JSON string, with ``GRAPH_VERSION`` and the lexicon's
fingerprint ``GRAPH_LEXICON``), which ``FilingSplitter(graph_meta=True)`` stores at indexing. Strings, not nested
lists: every Haystack store keeps a string field (several keep only flat meta), and a store hands one string back
far faster than thousands of nested values (a filing's chunks are read whole on its first query; the JSON is parsed
only when its graph is built). ``build_filing_graph`` uses stored
entities and edges when every chunk carries them in the current version and for the reader's lexicon, and computes
them from text and meta otherwise (per chunk for entities; edges only when all are stored), so an index written
without them, or by another version or lexicon, works too. Facts are recomputed from ``meta["table"]`` either way.
"""

import json
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx

from haystack_fin.core import schema
from haystack_fin.core.graph.edges import (
    ChunkInfo,
    Edge,
    fact_id,
    inferred_edges,
    reference_edges,
    table_edges,
)
from haystack_fin.core.graph.entities import (
    METRIC,
    REFERENCE,
    Entity,
    FiscalCalendar,
    extract_entities,
)
from haystack_fin.core.graph.facts import Fact, table_facts
from haystack_fin.core.lexicon import Lexicon

# Bumped whenever extraction or edge rules (or the stored form) change: chunk meta written by another version is
# recomputed. 2: entities stored as rows (``Entity.to_row``), entities and edges as JSON strings, with the lexicon
# fingerprint.
GRAPH_VERSION = 2

CHUNK = "chunk"
FACT = "fact"
ENTITY = "entity"

# Entity kinds that become graph nodes; amounts, percentages and references are read by the edge rules instead.
_NODE_KINDS = frozenset({"metric", "period", "segment", "geography", "company"})
_CHUNK_EDGE_TYPES = ("explicit", "table", "inferred")


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def chunk_info(doc: Mapping[str, Any], position: int) -> ChunkInfo:
    """The graph's view of a chunk dict; ``position`` stands in for ``chunk_index`` when the meta lacks it."""
    meta = doc.get("meta") or {}
    index = _as_int(meta.get(schema.CHUNK_INDEX))
    parsed = schema.parse_chunk_id(str(doc["id"]))
    return ChunkInfo(
        id=str(doc["id"]),
        index=index if index is not None else (parsed[1] if parsed else position),
        item=str(meta.get(schema.ITEM) or ""),
        part=str(meta.get(schema.PART) or ""),
        section_path=tuple(str(s) for s in meta.get(schema.SECTION_PATH) or ()),
        pages=tuple(int(p) for p in meta.get(schema.PAGE_NUMBERS) or () if _as_int(p) is not None),
        modality=schema.modality_of(meta),
        table_id=str(meta.get(schema.TABLE_ID) or ""),
        table_block=_as_int(meta.get(schema.TABLE_BLOCK)),
        statement=str(meta.get(schema.STATEMENT) or ""),
        content=str(doc.get("content") or ""),
    )


@dataclass
class FilingGraph:
    """A filing's graph plus the lookups the expander needs."""

    filing_id: str
    index_run: str
    graph: nx.DiGraph
    chunks: dict[str, ChunkInfo]
    facts_by_key: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (metric, period) -> fact nodes
    chunks_by_entity: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (kind, key) -> chunks
    statements: dict[str, list[str]] = field(default_factory=dict)  # statement kind -> its blocks
    seconds: float = 0.0
    from_meta: bool = False

    def chunk_edges(self, chunk_id: str) -> list[tuple[str, Edge]]:
        """Chunk-to-chunk edges touching ``chunk_id`` in either direction, as (other chunk, edge)."""
        out: list[tuple[str, Edge]] = []
        g = self.graph
        if chunk_id not in g:
            return out
        for other in g.successors(chunk_id):
            if g.nodes[other].get("node_type") == CHUNK:
                out.append((other, g.edges[chunk_id, other]["edge"]))
        for other in g.predecessors(chunk_id):
            if g.nodes[other].get("node_type") == CHUNK:
                out.append((other, g.edges[other, chunk_id]["edge"]))
        return out

    def fact(self, node_id: str) -> Fact:
        fact: Fact = self.graph.nodes[node_id]["fact"]
        return fact

    def counts(self) -> dict[str, Any]:
        """Entity counts by kind (mentions, per chunk), fact count and edge counts by type and by type/kind."""
        entities: Counter[str] = Counter()
        for chunk in self.chunks.values():
            entities.update(e.kind for e in chunk.entities)
        facts = sum(len(c.facts) for c in self.chunks.values())
        by_type: Counter[str] = Counter()
        by_kind: Counter[str] = Counter()
        for _, _, data in self.graph.edges(data=True):
            edge: Edge = data["edge"]
            by_type[edge.type] += 1
            by_kind[f"{edge.type}/{edge.kind}"] += 1
        return {
            "entities": dict(sorted(entities.items())),
            "facts": facts,
            "edges": dict(sorted(by_type.items())),
            "edge_kinds": dict(sorted(by_kind.items())),
            "nodes": self.graph.number_of_nodes(),
        }


def _stored(meta: Mapping[str, Any], lexicon: Lexicon) -> bool:
    return (
        meta.get(schema.GRAPH_VERSION) == GRAPH_VERSION
        and meta.get(schema.GRAPH_LEXICON) == lexicon.fingerprint
        and isinstance(meta.get(schema.GRAPH_ENTITIES), str)
    )


def _stored_entities(text: str, lexicon: Lexicon) -> list[Entity]:
    out = []
    for row in json.loads(text):
        category = lexicon.cluster(str(row[1])).category if row[0] == METRIC and row[1] in lexicon else ""
        out.append(Entity.from_row(row, category))
    return out


def without_graph_meta(meta: Mapping[str, Any]) -> dict[str, Any]:
    """``meta`` without the stored graph fields (what a chunk of an index written without them carries)."""
    return {k: v for k, v in meta.items() if k not in schema.GRAPH_META_FIELDS}


def _prepare(
    docs: Iterable[Mapping[str, Any]], lexicon: Lexicon
) -> tuple[list[ChunkInfo], dict[str, list[Edge]] | None]:
    """Chunk infos in filing order with entities and facts, and the stored outgoing edges per chunk when every
    chunk came with graph meta of the current version and lexicon (None otherwise)."""
    rows = [d for d in docs if str((d.get("meta") or {}).get(schema.NODE_TYPE) or schema.NodeType.CHUNK) == "chunk"]
    infos = [chunk_info(d, i) for i, d in enumerate(rows)]
    order = sorted(range(len(rows)), key=lambda i: (infos[i].index, infos[i].id))
    rows = [rows[i] for i in order]
    infos = [infos[i] for i in order]
    all_stored = bool(rows)
    for doc, info in zip(rows, infos, strict=True):
        meta = doc.get("meta") or {}
        if _stored(meta, lexicon):
            info.entities = _stored_entities(meta[schema.GRAPH_ENTITIES], lexicon)
        else:
            all_stored = False
            info.entities = extract_entities(info.content, meta, lexicon).entities
        info.facts = table_facts(info.id, meta, lexicon, FiscalCalendar.from_meta(meta))
    if not all_stored or not all(isinstance((d.get("meta") or {}).get(schema.GRAPH_EDGES), str) for d in rows):
        return infos, None
    stored = {
        info.id: [Edge.from_dict(e) for e in json.loads(doc["meta"][schema.GRAPH_EDGES])]
        for doc, info in zip(rows, infos, strict=True)
    }
    return infos, stored


def _chunk_to_chunk(infos: list[ChunkInfo]) -> list[Edge]:
    structure = [e for e in table_edges(infos, lambda c, k, v: "") if e.kind in ("caption", "continuation")]
    return reference_edges(infos) + structure + inferred_edges(infos)


def chunk_graph_meta(docs: Iterable[Mapping[str, Any]], lexicon: Lexicon) -> dict[str, dict[str, Any]]:
    """Per chunk id of one filing's chunks, the meta to store: ``{GRAPH_VERSION, GRAPH_LEXICON: the lexicon's
    fingerprint, GRAPH_ENTITIES: JSON of [Entity.to_row ...], GRAPH_EDGES: JSON of [outgoing chunk-to-chunk edges
    (Edge.to_dict)]}``.
    Entities are always extracted afresh (meta the chunks already carry is ignored). Facts and cell edges are not
    stored: they are recomputed from ``meta["table"]``."""
    infos, _ = _prepare([{**d, "meta": without_graph_meta(d.get("meta") or {})} for d in docs], lexicon)
    outgoing: dict[str, list[dict[str, Any]]] = {i.id: [] for i in infos}
    for edge in _chunk_to_chunk(infos):
        outgoing[edge.source].append(edge.to_dict())
    return {
        info.id: {
            schema.GRAPH_VERSION: GRAPH_VERSION,
            schema.GRAPH_LEXICON: lexicon.fingerprint,
            schema.GRAPH_ENTITIES: json.dumps([e.to_row() for e in info.entities], ensure_ascii=False),
            schema.GRAPH_EDGES: json.dumps(outgoing[info.id], ensure_ascii=False),
        }
        for info in infos
    }


def build_filing_graph(
    docs: Iterable[Mapping[str, Any]], lexicon: Lexicon, filing_id: str = "", index_run: str = ""
) -> FilingGraph:
    """The graph of one filing from its chunk dicts (other node types are ignored). Pure function of its inputs."""
    start = time.perf_counter()
    infos, stored = _prepare(docs, lexicon)
    stored_edges = stored is not None
    fid = filing_id or (schema.filing_id_of(infos[0].id) if infos else "")
    g: nx.DiGraph = nx.DiGraph()
    result = FilingGraph(fid, index_run, g, {i.id: i for i in infos}, from_meta=stored_edges)

    def entity_node(chunk: ChunkInfo, kind: str, key: str) -> str:
        node = schema.entity_node_id(fid, chunk.item, f"{kind}:{key}")
        if node not in g:
            g.add_node(node, node_type=ENTITY, kind=kind, key=key, item=chunk.item)
        return node

    def add(edge: Edge) -> None:
        existing = g.get_edge_data(edge.source, edge.target)
        if existing is None or existing["edge"].confidence < edge.confidence:
            g.add_edge(edge.source, edge.target, edge=edge)

    for info in infos:
        g.add_node(info.id, node_type=CHUNK, item=info.item, pages=info.pages, table_id=info.table_id)
        if info.statement and info.table_id:
            result.statements.setdefault(info.statement, []).append(info.id)
        for ent in info.entities:
            if ent.kind not in _NODE_KINDS:
                continue
            key = (ent.kind, ent.key)
            by = result.chunks_by_entity.setdefault(key, [])
            if not by or by[-1] != info.id:
                by.append(info.id)
            add(Edge(info.id, entity_node(info, ent.kind, ent.key), "mention", ent.kind, 0.85, {"text": ent.text}))
        for fact in info.facts:
            node = fact_id(info, fact)
            g.add_node(node, node_type=FACT, fact=fact)
            if fact.metric and fact.period:
                result.facts_by_key.setdefault((fact.metric, fact.period), []).append(node)
            for key in (("metric", fact.metric), ("period", fact.period)):
                if key[1]:
                    by = result.chunks_by_entity.setdefault(key, [])
                    if not by or by[-1] != info.id:
                        by.append(info.id)
    for edge in table_edges(infos, entity_node):
        if edge.kind not in ("caption", "continuation") or not stored_edges:
            add(edge)
    if stored is not None:
        for edges in stored.values():
            for edge in edges:
                if edge.target in g:
                    add(edge)
    else:
        for edge in reference_edges(infos) + inferred_edges(infos):
            add(edge)
    result.seconds = time.perf_counter() - start
    return result


def graph_signature(fg: FilingGraph) -> tuple[list[tuple[str, str]], list[tuple[str, str, str, str, float, str]]]:
    """The graph as sorted plain tuples: every node with its attributes, every edge with its type, kind, confidence
    and evidence. Equal signatures are the same graph (how stored meta is checked against extraction)."""
    nodes = sorted((str(n), repr(sorted(data.items()))) for n, data in fg.graph.nodes(data=True))
    edges = sorted(
        (str(u), str(v), e.type, e.kind, e.confidence, json.dumps(dict(e.evidence), sort_keys=True, default=str))
        for u, v, data in fg.graph.edges(data=True)
        for e in [data["edge"]]
    )
    return nodes, edges


def references(chunk: ChunkInfo) -> list[Entity]:
    return [e for e in chunk.entities if e.kind == REFERENCE]
