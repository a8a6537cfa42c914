"""The nodes of one Item's summary and question trees, from its chunks and their tree topology.

``LeafFacts`` reads what every node above a chunk needs once (lexicon mentions, token estimate, pages, section path,
table row labels and periods); ``item_node_texts`` gives each node its summary and questions bottom-up (extractive
and template texts, optionally rewritten by a caller's function, e.g. a chat model that reads the children's
summaries); ``tree_node_records`` lays the nodes out as index records (ids, links, pages, provenance) and
``leaf_tree_meta`` gives each chunk its tree parents. No Haystack import: ``TreeBuilder`` wraps the records into
Documents and embeds them.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from haystack_fin.core import schema
from haystack_fin.core.ingest.clustering import TreeNode, TreeTopology
from haystack_fin.core.ingest.node_texts import (
    clean_row_label,
    extractive_summary,
    markdown_row_labels,
    metric_terms,
    rank_term_concepts,
    table_periods,
    template_questions,
    term_mentions,
)
from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.text import estimate_tokens

# Filing-level fields copied from an Item's chunks onto its tree nodes, so filing-scope filters match them too.
COPIED_FIELDS = (
    schema.FILING_ID,
    schema.COMPANY,
    schema.FORM,
    schema.PERIOD,
    schema.FISCAL_YEAR,
    schema.FISCAL_QUARTER,
    schema.PERIOD_END,
    schema.TICKER,
    schema.SOURCE_PATH,
    schema.PART,
    schema.ITEM,
    schema.ITEM_TITLE,
    schema.INDEX_RUN,
)
LABELS_PER_TABLE = 8

# (summary, questions, (summary source, questions source)) per node (level, index).
NodeTexts = dict[tuple[int, int], tuple[str, list[str], tuple[str, str]]]
# (children's passages, extractive summary, template questions) -> the node's texts and their sources.
Rewrite = Callable[[list[str], str, list[str]], tuple[str, list[str], tuple[str, str]]]


class LeafFacts:
    """Per-chunk facts computed once and shared by every node above the chunk."""

    def __init__(self, contents: Sequence[str], metas: Sequence[Mapping[str, Any]], lexicon: Lexicon | None) -> None:
        self.mentions = [term_mentions(text, lexicon) if lexicon else [] for text in contents]
        self.tokens = [estimate_tokens(text) for text in contents]
        self.pages = [list(m.get(schema.PAGE_NUMBERS) or []) for m in metas]
        self.section_paths = [[str(s) for s in m.get(schema.SECTION_PATH) or []] for m in metas]
        self.row_labels: list[list[str]] = []
        self.periods: list[list[str]] = []
        for text, meta in zip(contents, metas, strict=True):
            table = meta.get(schema.TABLE_JSON)
            if isinstance(table, dict):
                rows = [
                    row
                    for row in table.get("rows") or []
                    if not row.get("is_context") and any(v is not None for v in (row.get("values") or [])[1:])
                ]
                labels = [clean_row_label(str(row.get("label") or "")) for row in rows]
                self.row_labels.append([label for label in labels if label][:LABELS_PER_TABLE])
                self.periods.append(table_periods([str(c) for c in table.get("columns") or []]))
            elif meta.get(schema.MODALITY) == schema.Modality.TABLE.value:
                self.row_labels.append(markdown_row_labels(text)[:LABELS_PER_TABLE])
                self.periods.append([])
            else:
                self.row_labels.append([])
                self.periods.append([])


def item_node_texts(
    topology: TreeTopology,
    leaves: LeafFacts,
    contents: Sequence[str],
    embeddings: np.ndarray,
    filing_period: str,
    max_summary_words: int,
    max_questions: int,
    questions: bool,
    lexicon: Lexicon | None,
    rewrite: Rewrite | None = None,
) -> NodeTexts:
    """Every node's texts, bottom-up: an extractive summary and (with ``questions``) template questions, then
    ``rewrite`` given the node's passages (its chunks' text at the bottom level, its children's summaries above)."""
    texts: NodeTexts = {}
    for level in reversed(topology.levels):
        for node in level:
            members = list(node.leaves)
            concepts = rank_term_concepts([leaves.mentions[leaf] for leaf in members])
            terms = [term for _, term in concepts]
            labels = list(dict.fromkeys(label for leaf in members for label in leaves.row_labels[leaf]))
            periods = list(dict.fromkeys(p for leaf in members for p in leaves.periods[leaf]))
            periods = sorted(periods, reverse=True)[:2] or ([filing_period] if filing_period else [])
            member_texts = [contents[leaf] for leaf in members]
            summary = extractive_summary(
                member_texts, embeddings[members], terms=terms, row_labels=labels, max_words=max_summary_words
            )
            asked = (
                template_questions(
                    member_texts,
                    [leaves.section_paths[leaf] for leaf in members],
                    labels,
                    terms,
                    periods,
                    max_questions=max_questions,
                    metrics=metric_terms(concepts, lexicon) if lexicon else [],
                )
                if questions
                else []
            )
            sources = ("extractive", "template")
            if rewrite is not None:
                bottom = node.level == topology.bottom_level
                passages = (
                    [contents[leaf] for leaf in node.children]
                    if bottom
                    else [texts[(node.level + 1, child)][0] for child in node.children]
                )
                summary, asked, sources = rewrite(passages, summary, asked)
            texts[(node.level, node.index)] = (summary, asked, sources)
    return texts


def _item_base_meta(item: str, first: Mapping[str, Any]) -> dict[str, Any]:
    """What every tree node of an Item carries: the filing fields of its first chunk and the Item as its section."""
    section = first.get(schema.SECTION_PATH) or []
    item_label = str(section[0]) if section else str(first.get(schema.ITEM_TITLE) or item)
    head = " ".join(str(first.get(k) or "") for k in (schema.COMPANY, schema.FORM, schema.PERIOD)).strip()
    return {
        **{key: first[key] for key in COPIED_FIELDS if key in first},
        schema.SECTION_PATH: [item_label],
        schema.MODALITY: schema.Modality.TEXT.value,
        schema.TABLE_ID: None,
        schema.CONTEXT: f"{head} | {item_label}"[:300],
    }


def tree_node_records(
    filing_id: str,
    item: str,
    topology: TreeTopology,
    chunk_ids: Sequence[str],
    first_meta: Mapping[str, Any],
    leaves: LeafFacts,
    texts: NodeTexts,
    questions: bool,
) -> list[tuple[str, str, dict[str, Any]]]:
    """``(id, content, meta)`` of every summary node (and question node, with ``questions``) of an Item's trees; the
    nodes belong to their chunks' indexing run."""
    run = str(first_meta.get(schema.INDEX_RUN) or "")

    def node_id(node: TreeNode, kind: str) -> str:
        return schema.tree_node_id(filing_id, item, kind, node.level, node.index, run)

    base_meta = _item_base_meta(item, first_meta)
    kinds = [("s", "q", schema.NodeType.SUMMARY)] + ([("q", "s", schema.NodeType.QUESTION)] if questions else [])
    records: list[tuple[str, str, dict[str, Any]]] = []
    for node in topology.nodes():
        bottom = node.level == topology.bottom_level
        parent = None if node.parent is None else topology.levels[node.level - 1][node.parent]
        leaf_ids = [chunk_ids[leaf] for leaf in node.leaves]
        summary_text, asked, sources = texts[(node.level, node.index)]
        for kind, twin_kind, node_type in kinds:
            if bottom:
                children = [chunk_ids[leaf] for leaf in node.children]
            else:
                children = [node_id(topology.levels[node.level + 1][c], kind) for c in node.children]
            meta = {
                **base_meta,
                schema.NODE_TYPE: node_type.value,
                schema.TREE_LEVEL: node.level,
                schema.TREE_PARENT_ID: node_id(parent, kind) if parent is not None else None,
                schema.TREE_CHILDREN_IDS: children,
                schema.TREE_BLOCK_SIZE: sum(leaves.tokens[leaf] for leaf in node.leaves),
                schema.TWIN_ID: node_id(node, twin_kind) if questions else None,
                schema.LEAF_IDS: leaf_ids,
                schema.PAGE_NUMBERS: sorted({p for leaf in node.leaves for p in leaves.pages[leaf]}),
                schema.GENERATED_BY: sources[0] if kind == "s" else sources[1],
            }
            content = summary_text if kind == "s" else "\n".join(asked)
            records.append((node_id(node, kind), content, meta))
    return records


def leaf_tree_meta(
    filing_id: str, item: str, topology: TreeTopology, leaves: LeafFacts, run: str
) -> list[dict[str, Any]]:
    """Per chunk (in topology order) the tree meta it gains: its summary-tree parents, level and block size."""
    bottom_nodes = topology.levels[-1]
    out = []
    for i in range(topology.n_leaves):
        parents = [bottom_nodes[j] for j in topology.leaf_parents[i]]
        parent_ids = [schema.tree_node_id(filing_id, item, "s", n.level, n.index, run) for n in parents]
        out.append(
            {
                schema.TREE_PARENT_ID: parent_ids[0],
                schema.TREE_PARENT_IDS: parent_ids,
                schema.TREE_LEVEL: topology.depth,
                schema.TREE_BLOCK_SIZE: leaves.tokens[i],
            }
        )
    return out
