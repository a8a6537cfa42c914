"""QueryAnalyzer: run, serialization, warm-up, and the shipped query pipeline's wiring."""

import json

import pytest
from haystack import Pipeline
from haystack.core.serialization import component_from_dict, component_to_dict

from haystack_fin.components.query_analyzer import QueryAnalyzer
from haystack_fin.core.lexicon import Lexicon, TermCluster
from haystack_fin.core.retrieval.question_analysis import QuestionAnalysis, analyze_question
from haystack_fin.pipeline_loader import pipeline_dict, strip_generation
from haystack_fin.query_runner import ABLATIONS, ablate

QUESTION = "Is Best Buy's quick ratio healthy as of Q2 FY2024? Use the balance sheet."
ANALYSIS_RECEIVERS = {
    "scope.analysis",
    "router.analysis",
    "retriever.analysis",
    "graph.analysis",
    "ranker.analysis",
    "fallback.analysis",
}


def test_run_returns_the_json_analysis():
    out = QueryAnalyzer().run(query=QUESTION)
    analysis = out["analysis"]
    assert json.loads(json.dumps(analysis)) == analysis
    assert [t["cluster"] for t in analysis["terms"]] == ["quick_ratio", "balance_sheet"]
    assert analysis["statements"] == {"balance_sheet": 1.0}
    assert analysis["scope"]["periods"][0]["quarter"] == 2
    assert QuestionAnalysis.from_dict(analysis) == analyze_question(QUESTION, Lexicon.load_default())


def test_to_dict_from_dict_round_trip():
    analyzer = QueryAnalyzer(lexicon_path="lex.json", finrad_csv="finrad.csv")
    data = component_to_dict(analyzer, "analyzer")
    assert data == {
        "type": "haystack_fin.components.query_analyzer.QueryAnalyzer",
        "init_parameters": {"lexicon_path": "lex.json", "finrad_csv": "finrad.csv"},
    }
    restored = component_from_dict(QueryAnalyzer, data, "analyzer")
    assert (restored.lexicon_path, restored.finrad_csv) == ("lex.json", "finrad.csv")
    assert restored._lexicon is None  # no I/O before warm_up


def test_pipeline_dumps_loads_round_trip():
    pipe = Pipeline()
    pipe.add_component("analyzer", QueryAnalyzer())
    loaded = Pipeline.loads(pipe.dumps(), allowed_modules=["haystack_fin"])
    assert loaded.to_dict() == pipe.to_dict()
    assert loaded.run({"analyzer": {"query": QUESTION}})["analyzer"]["analysis"]["question"] == QUESTION


def test_warm_up_loads_the_lexicon_once(monkeypatch):
    calls: list[object] = []
    original = Lexicon.load.__func__  # type: ignore[attr-defined]  # the classmethod's function, to wrap it

    def counting(cls, path=None):
        calls.append(path)
        return original(cls, path)

    monkeypatch.setattr(Lexicon, "load", classmethod(counting))
    analyzer = QueryAnalyzer()
    assert calls == []  # __init__ does no I/O
    analyzer.warm_up()
    analyzer.warm_up()
    analyzer.run(query=QUESTION)
    analyzer.run(query="What was capex?")
    assert calls == [None]


def test_custom_lexicon_and_finrad_csv(tmp_path):
    lexicon = Lexicon([TermCluster("capex", "Capex", "cash_flow", ("capex",), {"10-K": ("8",)})])
    lexicon_path = tmp_path / "lexicon.json"
    lexicon.to_json(lexicon_path)
    csv_path = tmp_path / "finrad.csv"
    csv_path.write_text("terms,definitions\ncapex; capital outlays,Money spent on fixed assets\n", encoding="utf-8")
    analyzer = QueryAnalyzer(lexicon_path=str(lexicon_path), finrad_csv=str(csv_path))
    analysis = analyzer.run(query="How large were capital outlays?")["analysis"]
    assert [t["cluster"] for t in analysis["terms"]] == ["capex"]  # the FinRAD synonym, in the custom cluster
    assert analysis["clusters"][0]["items"] == {"10-K": ["8"]}


def test_bad_parameters():
    with pytest.raises(ValueError, match="lexicon_path"):
        QueryAnalyzer(lexicon_path=3)  # type: ignore[arg-type]  # bad input on purpose
    with pytest.raises(FileNotFoundError):
        QueryAnalyzer(lexicon_path="/nonexistent/lexicon.json").warm_up()


def test_shipped_query_pipeline_feeds_the_analysis_to_the_four_stages():
    data = strip_generation(pipeline_dict("query"))
    assert data["components"]["analyzer"]["type"].endswith("QueryAnalyzer")
    wired = {c["receiver"] for c in data["connections"] if c["sender"] == "analyzer.analysis"}
    assert wired == ANALYSIS_RECEIVERS
    # The lexicon is configured on the analyzer only.
    for name in ("router", "retriever", "graph", "ranker"):
        assert data["components"][name]["init_parameters"].get("lexicon_path") is None


@pytest.mark.parametrize("name", ABLATIONS)
def test_every_ablation_keeps_the_analysis_wired_where_it_can_be(name):
    data = ablate(strip_generation(pipeline_dict("query")), {name})
    pipe = Pipeline.from_dict(data, allowed_modules=["haystack_fin"])
    receivers = {c["receiver"] for c in data["connections"] if c["sender"] == "analyzer.analysis"}
    present = {r for r in ANALYSIS_RECEIVERS if r.split(".")[0] in pipe.to_dict()["components"]}
    if name == "scope":  # DenseFilingScope reads no question text
        present.discard("scope.analysis")
    assert receivers == present
