from typing import Any

from haystack import component, default_from_dict, default_to_dict, logging

from haystack_fin.core.lexicon import Lexicon
from haystack_fin.core.retrieval.question_analysis import analyze_question

logger = logging.getLogger(__name__)


@component
class QueryAnalyzer:
    """Reads a question once for the whole query pipeline: its lexicon terms and their clusters, the financial
    statements it names or implies, its content terms and whether it asks for a number, and its periods, dates,
    form hints, 8-K topics and capitalized (candidate company) names.

    ``FilingScope``, ``FlamRouter``, ``DualTreeRetriever``, ``GraphExpander``, ``TwoStageRanker`` and
    ``ModalityThresholdFallback`` take the ``analysis`` output as an optional input and do not read the question
    themselves; used alone, without it, each analyses the question through the one helper
    ``question_analysis.analysis_or_own`` (built-in lexicon, or the expander's). So the query side's lexicon is
    configured here, once. The layout of ``analysis`` is
    ``haystack_fin.core.retrieval.question_analysis.QuestionAnalysis.to_dict`` (plain JSON). Which indexed company
    the question names is not in it: that needs the store's filing profiles, which FilingScope holds.

    Usage example:
    ```python
    from haystack_fin.components.query_analyzer import QueryAnalyzer

    analyzer = QueryAnalyzer()
    analysis = analyzer.run(query="What was 3M's FY2018 capex per the cash flow statement?")["analysis"]
    [t["cluster"] for t in analysis["terms"]]  # ["capex", "cash_flow_statement"]
    analysis["statements"]                     # {"cash_flow_statement": 1.0}
    analysis["scope"]["periods"][0]["year"]    # 2018
    # In a pipeline: pipe.connect("analyzer.analysis", "router.analysis"), and likewise to scope, retriever, ranker.
    ```
    """

    def __init__(self, lexicon_path: str | None = None, finrad_csv: str | None = None) -> None:
        """
        :param lexicon_path: a lexicon JSON in the format of the built-in ``haystack_fin/data/lexicon.json``;
            default: the built-in lexicon. Index with the same lexicon (FilingSplitter's ``lexicon_path``): FLAM
            compares the question's cluster ids with the counts stored at indexing.
        :param finrad_csv: a FinRAD-format CSV whose terms are merged into the lexicon (new synonyms of existing
            clusters, new clusters for the rest).
        """
        for name, value in (("lexicon_path", lexicon_path), ("finrad_csv", finrad_csv)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name} must be a path string or None, got {type(value).__name__}.")
        self.lexicon_path = lexicon_path
        self.finrad_csv = finrad_csv
        self._lexicon: Lexicon | None = None

    def warm_up(self) -> None:
        """Load the lexicon (once; Pipeline calls this on every run)."""
        if self._lexicon is not None:
            return
        lexicon = Lexicon.load(self.lexicon_path)
        if self.finrad_csv:
            lexicon = Lexicon.from_finrad_csv(self.finrad_csv, base=lexicon)
        self._lexicon = lexicon
        logger.debug("QueryAnalyzer: lexicon of {n} clusters loaded", n=len(lexicon))

    def to_dict(self) -> dict[str, Any]:
        """Serialize the init parameters."""
        return default_to_dict(self, lexicon_path=self.lexicon_path, finrad_csv=self.finrad_csv)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "QueryAnalyzer":
        """Deserialize from ``to_dict``'s output."""
        return default_from_dict(cls, data)

    @component.output_types(analysis=dict[str, Any])
    def run(self, query: str) -> dict[str, Any]:
        """
        Analyse one question.

        :param query: the question.
        :returns: ``analysis``: the JSON-serializable ``QuestionAnalysis`` of ``query`` (see the class docstring).
        """
        self.warm_up()  # a component used outside a Pipeline is not warmed up by anyone else
        assert self._lexicon is not None
        return {"analysis": analyze_question(query, self._lexicon).to_dict()}
