from dataclasses import replace
from typing import Any, Literal

from haystack import Document, component, default_from_dict, default_to_dict, logging

from haystack_fin.core import schema
from haystack_fin.core.retrieval.modality_fallback import (
    DIRECT_TABLE_WEIGHT,
    FallbackCandidate,
    FallbackConfig,
    FallbackDecision,
    concept_phrases,
    decide,
)
from haystack_fin.core.retrieval.question_analysis import QuestionAnalysis, analysis_or_own

logger = logging.getLogger(__name__)


def question_concepts(analysis: QuestionAnalysis) -> list[tuple[str, list[str]]]:
    """The question's lexicon concepts as the fallback's coverage check reads them: per cluster, the terms it
    matched, their surfaces in the question and all the cluster's synonyms (a passage says "purchases of property
    and equipment" where the question says "capex")."""
    surfaces: dict[str, list[str]] = {}
    for term in analysis.terms:
        surfaces.setdefault(term.cluster_id, []).extend(s for s in (term.term, term.text) if s)
    for cluster_id, found in surfaces.items():
        found.extend(analysis.synonyms.get(cluster_id, ()))
    return concept_phrases(list(surfaces.items()))


def candidate(doc: Document) -> FallbackCandidate:
    """What the fallback reads of a ranked Document: modality (meta, default text), embedding, content."""
    return FallbackCandidate(
        modality=schema.modality_of(doc.meta),
        embedding=doc.embedding or None,
        text=doc.content or "",
        cosine=schema.query_cosine(doc.meta),
    )


@component
class ModalityThresholdFallback:
    """Keeps the least context that answers: per-modality cosine thresholds and minimum counts, tiered text ->
    +tables -> +images (MultiFinRAG's fallback, ``haystack_fin.core.retrieval.modality_fallback``).

    Place it after a ranker (or any retriever) and before the passage window. Each passage's cosine to the
    question is the one DualTreeRetriever and GraphExpander record (``meta["query_cosine"]``), else computed from
    ``query_embedding`` and its embedding (other retrievers need ``return_embedding=True``; the ranker's score is
    relative to the candidate set and cannot be thresholded). The text tier keeps the text passages over
    ``thresholds["text"]``; it suffices with ``min_counts["text"]`` of them that mention the question's lexicon
    concepts (``coverage``). Otherwise tables over ``thresholds["table"]`` join, then images over
    ``thresholds["image"]``; when no tier suffices the ranked passages pass unchanged (``on_insufficient="all"``). A
    question naming a financial statement ("... in the cash flow statement") starts at the table tier. Passages keep
    their order; kept ones are copies with ``meta["fallback"] = {"cosine", "tier"}``. The thresholds belong to the
    embedder: calibrate them with ``haystack-fin calibrate`` (the shipped query YAML holds MiniLM's).

    ``analysis`` (``QueryAnalyzer``) gives the lexicon terms, their synonyms and the statements; without it the
    question is analysed with the built-in lexicon (``question_analysis.analysis_or_own``).
    Documents without ``modality`` count as text, so it works after a plain Haystack retriever.

    Usage example:
    ```python
    from haystack import Pipeline
    from haystack.components.embedders import SentenceTransformersTextEmbedder
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack_fin.components.modality_fallback import ModalityThresholdFallback

    pipe = Pipeline()
    pipe.add_component("embedder", SentenceTransformersTextEmbedder(model=model_path))
    pipe.add_component("retriever", InMemoryEmbeddingRetriever(document_store=store, top_k=10, return_embedding=True))
    pipe.add_component("fallback", ModalityThresholdFallback(thresholds={"text": 0.45, "table": 0.40}))
    pipe.connect("embedder.embedding", "retriever.query_embedding")
    pipe.connect("embedder.embedding", "fallback.query_embedding")
    pipe.connect("retriever.documents", "fallback.documents")
    q = "What drove the change in gross margin?"
    out = pipe.run({"embedder": {"text": q}, "fallback": {"query": q}})
    print(out["fallback"]["trace"]["tier"], out["fallback"]["trace"]["reason"])
    ```
    """

    def __init__(
        self,
        thresholds: dict[str, float] | None = None,
        min_counts: dict[str, int] | None = None,
        coverage: Literal["any", "all", "none"] = "any",
        on_insufficient: Literal["all", "last_tier"] = "all",
        direct_table_weight: float = DIRECT_TABLE_WEIGHT,
        enabled: bool = True,
    ) -> None:
        """
        :param thresholds: cosine threshold per modality ``text``, ``table``, ``image`` (missing ones: defaults of
            ``core.retrieval.modality_fallback.DEFAULT_THRESHOLDS``, the seed paper's bge values).
        :param min_counts: passages a tier needs: ``text`` in all, ``table``/``image`` of the tier's own modality.
        :param coverage: "any": some kept passage mentions one of the question's lexicon concepts; "all": every
            concept is mentioned; "none": no coverage check. A question without lexicon terms always passes.
        :param on_insufficient: "all": pass the ranked passages unchanged when no tier suffices; "last_tier": keep
            the image tier's passages anyway.
        :param direct_table_weight: a statement weight (``statements_in_query``) at or above which the question
            starts at the table tier (1.0: the statement is named outright).
        :param enabled: False passes every passage through (tier "off"), e.g. to record cosines.
        """
        self.thresholds = thresholds
        self.min_counts = min_counts
        self.coverage = coverage
        self.on_insufficient = on_insufficient
        self.direct_table_weight = direct_table_weight
        self.enabled = enabled
        self._config = FallbackConfig.from_params(  # validates eagerly, no I/O
            thresholds, min_counts, coverage, on_insufficient, direct_table_weight
        )

    @property
    def config(self) -> FallbackConfig:
        """The validated configuration (thresholds and minimum counts with the defaults filled in)."""
        return self._config

    def warm_up(self) -> None:
        """Nothing to load: the question's concepts and their synonyms come with the analysis."""

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            thresholds=self.thresholds,
            min_counts=self.min_counts,
            coverage=self.coverage,
            on_insufficient=self.on_insufficient,
            direct_table_weight=self.direct_table_weight,
            enabled=self.enabled,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModalityThresholdFallback":
        return default_from_dict(cls, data)

    def decision(
        self,
        query: str,
        documents: list[Document],
        query_embedding: list[float] | None,
        analysis: dict[str, Any] | None,
        config: FallbackConfig | None = None,
    ) -> FallbackDecision:
        """The core decision for ``documents`` (``config``: another configuration than the init one, for
        calibration)."""
        analysed = analysis_or_own(query, analysis)
        return decide(
            [candidate(d) for d in documents],
            query_embedding,
            config or self._config,
            question_concepts(analysed),
            analysed.statements,
        )

    @component.output_types(documents=list[Document], trace=dict[str, Any])
    def run(
        self,
        query: str,
        documents: list[Document],
        query_embedding: list[float] | None = None,
        analysis: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """
        Keep the passages of the first sufficient tier.

        :param query: the question.
        :param documents: ranked passages, best first.
        :param query_embedding: the question's embedding; without it every passage passes (tier "all").
        :param analysis: ``QueryAnalyzer``'s analysis of ``query`` (lexicon terms, statements).
        :returns: ``documents``: the kept passages in input order, with ``meta["fallback"]``; ``trace``: the tier
            that fired, why, each tier's counts and checks, the thresholds.
        """
        if not self.enabled:
            return {
                "documents": list(documents),
                "trace": {"tier": "off", "reason": "disabled", "n_kept": len(documents)},
            }
        chosen = self.decision(query, documents, query_embedding, analysis)
        out = [
            replace(
                documents[i],
                meta={**documents[i].meta, schema.FALLBACK: {"cosine": chosen.cosines[i], "tier": chosen.tier}},
            )
            for i in chosen.keep
        ]
        trace = {
            **chosen.trace(),
            "n_input": len(documents),
            "thresholds": dict(self._config.thresholds),
            "min_counts": dict(self._config.min_counts),
        }
        logger.debug(
            "ModalityThresholdFallback: tier {tier}, {n} of {m} kept", tier=chosen.tier, n=len(out), m=len(documents)
        )
        return {"documents": out, "trace": trace}
