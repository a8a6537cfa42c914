from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.utils import ComponentDevice

if TYPE_CHECKING:  # imported in warm_up: the default fallback scorer needs no sentence-transformers import
    from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersSimilarityRanker

from haystack_fin.core import schema
from haystack_fin.core.models import resolve_model
from haystack_fin.core.retrieval.bm25 import content_terms
from haystack_fin.core.retrieval.candidates import candidate_source
from haystack_fin.core.retrieval.companies import company_aliases
from haystack_fin.core.retrieval.passage_scoring import (
    FallbackWeights,
    Passage,
    PassageScore,
    names_segment,
    query_cosines,
    score_passages,
)
from haystack_fin.core.retrieval.question_analysis import analysis_or_own
from haystack_fin.core.retrieval.ranking_model import (
    CandidateFacts,
    QuestionFlags,
    RankingModel,
    feature_matrix,
)
from haystack_fin.core.retrieval.sections import question_sections
from haystack_fin.core.retrieval.two_stage_selection import BUDGET_K, RERANK, GroupKey, rank_cut, rerank_record
from haystack_fin.core.schema import Modality
from haystack_fin.core.validation import check_int, check_ints

logger = logging.getLogger(__name__)


def _deduplicate(documents: list[Document]) -> tuple[list[Document], int]:
    """One Document per id, at the position of its first occurrence, keeping the highest-scored copy (Haystack's
    rule: a joiner may list a passage twice with different retriever scores)."""
    best: dict[str, Document] = {}
    for doc in documents:
        kept = best.get(doc.id)
        if kept is None or (doc.score is not None and (kept.score is None or doc.score > kept.score)):
            best[doc.id] = doc
    return list(best.values()), len(documents) - len(best)


def _group_key(doc: Document) -> GroupKey:
    filing_id, item = doc.meta.get(schema.FILING_ID), doc.meta.get(schema.ITEM)
    return (None if filing_id is None else str(filing_id), None if item is None else str(item))


def _table_labels(doc: Document) -> list[str]:
    table = doc.meta.get(schema.TABLE_JSON)
    if not isinstance(table, dict):
        return []
    labels = [str(row.get("label") or "") for row in table.get("rows") or [] if isinstance(row, dict)]
    labels += [str(c) for c in table.get("columns") or []]
    return [label for label in labels if label]


def candidate_facts(doc: Document) -> CandidateFacts:
    """What the ranking model reads of a candidate's meta besides the fallback signals."""
    meta = doc.meta
    retrieval = meta.get(schema.RETRIEVAL)
    source = candidate_source(retrieval)
    graph: dict[str, Any] = found if isinstance(found := meta.get(schema.GRAPH), dict) else {}
    budget = meta.get(BUDGET_K)
    position = retrieval.get("position") if isinstance(retrieval, dict) else None
    return CandidateFacts(
        source=source,
        retriever_score=float(doc.score or 0.0) if source in ("tree", "flat") else 0.0,
        budget_k=budget if isinstance(budget, int) and not isinstance(budget, bool) else None,
        item=None if meta.get(schema.ITEM) is None else str(meta[schema.ITEM]),
        is_table=meta.get(schema.MODALITY) == Modality.TABLE.value,
        is_image=meta.get(schema.MODALITY) == Modality.IMAGE.value,
        position=float(position) if isinstance(position, int | float) else None,
        entity_hit=float(graph.get("entity_hit") or 0.0),
        graph_score=float(graph.get("score") or 0.0) if source == "graph" else 0.0,
        n_words=len((doc.content or "").split()),
        statement=str(meta[schema.STATEMENT]) if meta.get(schema.STATEMENT) else None,
    )


@dataclass
class CandidateScores:
    """The fallback scorer's view of one question's candidates: the final scores (hand-set fusion or the ranking
    model), each candidate's signals and ``ranking_model.FEATURES`` row, and what the question asked for."""

    scores: list[float]
    hand_scores: list[float]
    signals: list[PassageScore]
    features: np.ndarray
    statements: dict[str, float]
    sections: dict[str, str]
    segment_question: bool
    facts: list[CandidateFacts]
    cosines: list[float | None]
    flags: QuestionFlags


def _company_phrases(docs: list[Document]) -> list[list[str]]:
    """The candidates' company names (with their aliases, e.g. "Best Buy" for "BEST BUY CO., INC.") and tickers
    as term sequences, to be cut out of the question's terms."""
    names = {str(d.meta[schema.COMPANY]) for d in docs if d.meta.get(schema.COMPANY)}
    phrases = [content_terms(alias) for name in names for alias, _ in company_aliases(name)]
    phrases += [content_terms(str(d.meta[schema.TICKER])) for d in docs if d.meta.get(schema.TICKER)]
    return [p for p in phrases if p]


@component
class TwoStageRanker:
    """Reranks retrieved passages in two stages, as FinGEAR does: within each SEC Item, then across Items.

    Stage 1 keeps the best ``k_i`` passages of every (``filing_id``, ``item``) group, so one verbose Item cannot
    crowd out the others; stage 2 keeps the best ``top_k`` of the survivors across groups. ``k_i`` is
    ``stage1_top_k`` when set, else the ``budget_k`` meta the upstream router put on the group's passages, else
    ``ceil(top_k / number of groups)`` (see ``haystack_fin.core.retrieval.two_stage_selection.group_budgets``).
    Documents without ``filing_id``/``item`` form one group, so the ranker also works after any plain retriever.
    ``per_item_cut=False`` skips stage 1 (the shipped YAML: with the ranking model's scores, comparable across Items,
    the per-Item quota lost hits on held-out companies; docs/ranking.md).

    Scorer: with ``model`` set, any sentence-transformers cross-encoder (hub name or local path), run through
    Haystack's ``SentenceTransformersSimilarityRanker``; each (query, passage) pair is scored once and the same
    scores serve both stages, because a cross-encoder's pointwise scores are comparable across Items. With
    ``model=None``, the fallback scorer of ``haystack_fin.core.retrieval.passage_scoring``: bi-encoder cosine (the one
    DualTreeRetriever and GraphExpander record in ``meta["query_cosine"]``, else from ``query_embedding`` and the
    documents' embeddings: other retrievers need ``return_embedding=True``), BM25
    over the candidate set, a table prior for questions that ask for a number, and a statement prior for blocks of the
    financial statement a question names or implies (``meta["statement"]``), fused into a score in [0, 1]. The
    candidates' company names and tickers (meta ``company``, ``ticker``) are left out of the question's terms:
    they choose the filing, not the passage. With ``scoring_model`` (the shipped YAML names the model fitted across
    companies, ``haystack_fin/data/ranker_weights.json``), a logistic model over those signals and the candidates'
    source, Item, modality, place in the filing and graph match, blended with boosted trees over the same features
    and with learned (question word, passage word) pairs (``haystack_fin.core.retrieval.term_pairs``), replaces the
    hand-set fusion
    (``haystack_fin.core.retrieval.ranking_model``; ``haystack-fin train-ranker`` refits it). The question is read
    once: from ``analysis`` (a ``QueryAnalyzer``'s), else analysed here with the built-in lexicon.

    Input documents are deduplicated by id and never mutated. Output documents are copies with ``score`` set and
    ``meta["rerank"] = {"stage1_score", "stage1_rank_in_item", "stage2_rank", "scorer"}`` (ranks 1-based; the
    fallback also records its normalized ``signals``). Reads meta ``filing_id``, ``item``, ``budget_k``,
    ``modality`` and ``table`` (row labels) when present. Works with any document store.

    Usage example:
    ```python
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore
    from haystack_fin.components.two_stage_ranker import TwoStageRanker

    store = InMemoryDocumentStore()
    store.write_documents([
        Document(content="Capital expenditures were $1.2 billion.", meta={"filing_id": "acme-10k", "item": "7"}),
        Document(content="We face competition.", meta={"filing_id": "acme-10k", "item": "1A"}),
    ])
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(document_store=store, top_k=20))
    pipe.add_component("ranker", TwoStageRanker(top_k=5))  # model="cross-encoder/ms-marco-MiniLM-L-6-v2" if available
    pipe.connect("retriever.documents", "ranker.documents")
    q = "What were capital expenditures?"
    result = pipe.run({"retriever": {"query": q}, "ranker": {"query": q}})
    print(result["ranker"]["documents"][0].meta["rerank"], result["ranker"]["trace"]["groups"])
    ```
    """

    def __init__(
        self,
        model: str | None = None,
        top_k: int = 5,
        stage1_top_k: int | None = None,
        scale_score: bool = True,
        batch_size: int = 16,
        device: ComponentDevice | None = None,
        model_kwargs: dict[str, Any] | None = None,
        meta_fields_to_embed: list[str] | None = None,
        fallback_weights: dict[str, float] | None = None,
        scoring_model: str | None = None,
        per_item_cut: bool = True,
    ) -> None:
        """
        :param model: a sentence-transformers cross-encoder, hub name or local path; ``None`` uses the fallback
            scorer (no model is loaded).
        :param top_k: passages returned after stage 2.
        :param stage1_top_k: passages kept per (filing_id, item) group in stage 1; overrides ``budget_k`` meta and
            the even split when set.
        :param scale_score: pass cross-encoder logits through a sigmoid (the fallback scorer is in [0, 1] anyway).
        :param batch_size: cross-encoder batch size.
        :param device: device of the cross-encoder; ``None`` selects automatically.
        :param model_kwargs: keyword arguments for the cross-encoder's ``from_pretrained``.
        :param meta_fields_to_embed: meta fields prepended to the content for both scorers, e.g. ``["context"]``
            (FilingSplitter's company/form/period and section-path line).
        :param fallback_weights: weights of the fallback scorer's signals, any of ``dense``, ``lexical``, ``table``,
            ``statement`` (defaults in ``haystack_fin.core.retrieval.passage_scoring.FallbackWeights``).
        :param scoring_model: a ranking model JSON (``haystack_fin.core.retrieval.ranking_model``: a logistic model
            over the fallback's signals and the candidates' source, Item, modality and position, optionally blended
            with boosted trees and term pairs read from the question's and the documents' words; ``haystack-fin
            train-ranker`` fits one), as a path or the name of a file shipped in ``haystack_fin/data``. It replaces
            the hand-set fusion of ``fallback_weights`` (whose zero weights still switch a signal off). None: the
            hand-set fusion. Ignored with a cross-encoder ``model``.
        :param per_item_cut: stage 1 keeps each (filing, Item) group's best ``k_i``; False: one cut across all
            candidates (a score comparable across Items, such as the ranking model's, needs no per-Item quota).
        """
        if model is not None and not str(model).strip():
            raise ValueError("model must be a cross-encoder name or path, or None for the fallback scorer; got ''")
        check_ints(top_k=top_k, batch_size=batch_size)
        check_int("stage1_top_k", stage1_top_k, optional=True)
        self.model = model
        self.top_k = top_k
        self.stage1_top_k = stage1_top_k
        self.scale_score = scale_score
        self.batch_size = batch_size
        self.device = device
        self.model_kwargs = model_kwargs
        self.meta_fields_to_embed = meta_fields_to_embed
        self.fallback_weights = fallback_weights
        if scoring_model is not None and (not isinstance(scoring_model, str) or not scoring_model.strip()):
            raise ValueError(f"scoring_model must be a ranking model JSON path or name, or None; got {scoring_model!r}")
        self.scoring_model = scoring_model
        self.per_item_cut = per_item_cut
        self._weights = FallbackWeights.from_dict(fallback_weights)  # validates eagerly, no I/O
        self._cross_encoder: SentenceTransformersSimilarityRanker | None = None
        self._ranking_model: RankingModel | None = None

    @property
    def ranking_model(self) -> RankingModel | None:
        """The loaded ``scoring_model`` (None before ``warm_up``, with a cross-encoder ``model`` or without one)."""
        return self._ranking_model

    def warm_up(self) -> None:
        """Load the ranking model (fallback scorer with ``scoring_model``) or the cross-encoder (``model`` set);
        idempotent (Pipeline calls it on every run)."""
        if self.model is None:
            if self.scoring_model is not None and self._ranking_model is None:
                self._ranking_model = RankingModel.load(self.scoring_model)
            return
        if self._cross_encoder is not None:
            return
        from haystack_integrations.components.rankers.sentence_transformers import (
            SentenceTransformersSimilarityRanker,
        )

        ranker = SentenceTransformersSimilarityRanker(
            model=resolve_model(self.model),
            device=self.device,
            top_k=self.top_k,
            scale_score=self.scale_score,
            batch_size=self.batch_size,
            model_kwargs=self.model_kwargs,
            meta_fields_to_embed=self.meta_fields_to_embed,
        )
        ranker.warm_up()  # nested components are not warmed by Pipeline
        self._cross_encoder = ranker

    def to_dict(self) -> dict[str, Any]:
        """Serialize the init parameters (``device`` as a ComponentDevice dict)."""
        return default_to_dict(
            self,
            model=self.model,
            top_k=self.top_k,
            stage1_top_k=self.stage1_top_k,
            scale_score=self.scale_score,
            batch_size=self.batch_size,
            device=self.device,
            model_kwargs=self.model_kwargs,
            meta_fields_to_embed=self.meta_fields_to_embed,
            fallback_weights=self.fallback_weights,
            scoring_model=self.scoring_model,
            per_item_cut=self.per_item_cut,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "TwoStageRanker":
        """Deserialize; ``default_from_dict`` restores a ComponentDevice from its dict."""
        return default_from_dict(cls, data)

    def _passage(self, doc: Document) -> Passage:
        fields = [str(doc.meta[k]) for k in self.meta_fields_to_embed or [] if doc.meta.get(k) is not None]
        return Passage(
            text="\n".join([*fields, doc.content or ""]),
            embedding=doc.embedding or None,
            cosine=schema.query_cosine(doc.meta),
            is_table=doc.meta.get(schema.MODALITY) == Modality.TABLE.value,
            table_labels=_table_labels(doc),
            statement=doc.meta.get(schema.STATEMENT),
            section_path=tuple(str(h) for h in doc.meta.get(schema.SECTION_PATH) or ()),
        )

    def score_candidates(
        self,
        query: str,
        documents: list[Document],
        query_embedding: list[float] | None = None,
        analysis: dict[str, Any] | None = None,
    ) -> CandidateScores:
        """The fallback scorer on ``documents`` (deduplicated already): signals, hand-set fusion, the ranking model's
        features and, with ``scoring_model``, its scores. ``train-ranker`` dumps the features from here, so what is
        fitted is what runs."""
        self.warm_up()
        analysed = analysis_or_own(query, analysis)
        # A zero weight switches its signal off for the model too (the ablations rely on it).
        statements = dict(analysed.statements) if self._weights.statement > 0 else {}
        sections = question_sections(analysed.clusters) if self._weights.section > 0 else {}
        segment_question = names_segment(c.category for c in analysed.clusters)
        passages = [self._passage(d) for d in documents]
        # Computed once: the features read the raw cosines, and score_passages reads them back from the passages.
        raw_cosines = query_cosines(query_embedding, [p.embedding for p in passages], [p.cosine for p in passages])
        passages = [replace(p, cosine=c) for p, c in zip(passages, raw_cosines, strict=True)]
        signals = score_passages(
            query,
            passages,
            query_embedding,
            self._weights,
            statements,
            _company_phrases(documents),
            query_terms=analysed.content_terms,
            wants_number=analysed.asks_for_number,
            sections=sections,
            segment_question=segment_question,
        )
        hand = [s.score for s in signals]
        flags = QuestionFlags.of(query, analysed.asks_for_number)
        facts = [candidate_facts(d) for d in documents]
        features = feature_matrix(signals, facts, raw_cosines, flags)
        model = self._ranking_model
        scores = hand
        if model is not None:
            scores = [float(v) for v in model.score(features, self._pair_logits(model, query, documents))]
        return CandidateScores(
            scores, hand, signals, features, statements, sections, segment_question, facts, list(raw_cosines), flags
        )

    @staticmethod
    def _pair_logits(model: RankingModel, query: str, documents: list[Document]) -> np.ndarray | None:
        """The term pairs' logits of the candidates (``core.retrieval.term_pairs``), when the model has them."""
        if model.term_pairs is None:
            return None
        return model.term_pairs.text_logits(
            query,
            [d.content or "" for d in documents],
            [schema.modality_of(d.meta) for d in documents],
        )

    def _fallback_trace(self, scored: CandidateScores) -> dict[str, Any]:
        """The fallback scorer's part of the trace: its weights and model, and what it read of the question."""
        return {
            "weights": self._weights.to_dict(),
            "scoring_model": self.scoring_model,
            "n_with_dense": sum(s.dense is not None for s in scored.signals),
            "table_prior_used": any(s.table is not None for s in scored.signals),
            "statements": scored.statements,
            "sections": scored.sections,
            "segment_question": scored.segment_question,
        }

    def _cross_encoder_scores(self, query: str, docs: list[Document]) -> list[float]:
        self.warm_up()
        assert self._cross_encoder is not None
        ranked = self._cross_encoder.run(query=query, documents=docs, top_k=len(docs), scale_score=self.scale_score)
        by_id = {d.id: float(d.score if d.score is not None else 0.0) for d in ranked["documents"]}
        return [by_id[d.id] for d in docs]

    @component.output_types(documents=list[Document], trace=dict[str, Any])
    def run(
        self,
        query: str,
        documents: list[Document],
        query_embedding: list[float] | None = None,
        top_k: int | None = None,
        analysis: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        Rerank ``documents`` for ``query``: per-Item budgets first, then the global cut.

        :param query: the question.
        :param documents: candidates from any retriever (duplicates by id are merged).
        :param query_embedding: the query's bi-encoder embedding; enables the fallback's dense signal.
        :param top_k: overrides the init ``top_k`` for this run.
        :param analysis: ``QueryAnalyzer``'s analysis of ``query``: the fallback scorer takes the question's
            statements, content terms and whether it asks for a number from it instead of reading the question.
        :returns: ``documents``: at most ``top_k`` new Documents, best first, with ``score`` and ``meta["rerank"]``;
            ``trace``: what each stage did (scorer, per-group budgets and survivors, fallback details).
        """
        k = self.top_k if top_k is None else top_k
        check_int("top_k", k)
        scorer = "fallback" if self.model is None else "cross-encoder"
        unique, n_duplicates = _deduplicate(documents)
        trace = schema.RankerTrace(
            scorer=scorer,
            model=self.model,
            n_input=len(documents),
            n_duplicates=n_duplicates,
            top_k=k,
            groups=[],
            n_output=0,
        )
        if not unique:
            return {"documents": [], "trace": trace}
        fallback: list[PassageScore] | None = None
        if self.model is None:
            scored = self.score_candidates(query, unique, query_embedding, analysis)
            fallback, scores = scored.signals, scored.scores
            trace["fallback"] = self._fallback_trace(scored)
        else:
            scores = self._cross_encoder_scores(query, unique)
        keys, budgets = [_group_key(d) for d in unique], [d.meta.get(BUDGET_K) for d in unique]
        cut = rank_cut(scores, keys, budgets, k, self.stage1_top_k, self.per_item_cut)
        out: list[Document] = []
        for ranked in cut.selection.selected:
            doc = unique[ranked.index]
            record = rerank_record(ranked, scorer, fallback[ranked.index].to_dict() if fallback is not None else None)
            out.append(replace(doc, score=ranked.score, meta={**doc.meta, RERANK: record}))
        trace["groups"] = cut.group_traces()
        trace["n_output"] = len(out)
        logger.debug(
            "TwoStageRanker: {n_candidates} candidates in {n_groups} groups -> {n_output}",
            n_candidates=len(unique),
            n_groups=len(cut.budgets),
            n_output=len(out),
        )
        return {"documents": out, "trace": trace}
