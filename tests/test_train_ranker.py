"""`haystack-fin train-ranker` end to end on two fixture filings of two companies: the dumped candidates replay to
what the pipeline returned, the model is fitted and written, and the query pipeline runs with it."""

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from haystack_fin.cli import main
from haystack_fin.core.evaluation import Question
from haystack_fin.core.retrieval.modality_fallback import FallbackConfig
from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.ranking_model import CandidateFacts, QuestionFlags, RankingModel
from haystack_fin.core.retrieval.ranking_replay import ReplayCandidate, ReplayRecord, read_dump, replay
from haystack_fin.query_runner import QueryRunner
from haystack_fin.ranker_training import SHIPPED_REPLAY, dump_features, fit_model, hand_set_ratios

FIXTURES = Path(__file__).parent / "fixtures"
FILINGS = {"BESTBUY_2023_10Q": "bestbuy-10q-2023-07-29.pdf", "NETFLIX_2015_10K": "netflix-10k-2015.pdf"}
QUESTIONS = [
    ("Best Buy", "BESTBUY_2023_10Q", "What was Best Buy's revenue in Q2 FY2024?", 3),
    ("Best Buy", "BESTBUY_2023_10Q", "What drove the change in Best Buy's gross profit rate?", 15),
    ("Netflix", "NETFLIX_2015_10K", "What were Netflix's total current liabilities at the end of 2015?", 43),
    ("Netflix", "NETFLIX_2015_10K", "Why did Netflix's provision for income taxes change in 2015?", 26),
]


@pytest.mark.integration
def test_train_ranker_dumps_fits_and_the_pipeline_runs_the_model(tmp_path, capsys):
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    for doc, name in FILINGS.items():
        shutil.copy(FIXTURES / name, pdfs / f"{doc}.pdf")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "\n".join(
            json.dumps(
                {
                    "financebench_id": f"q{i}",
                    "company": company,
                    "doc_name": doc,
                    "question_type": "domain-relevant",
                    "question": question,
                    "evidence": [{"evidence_page_num": page - 1, "evidence_text": "x"}],
                }
            )
            for i, (company, doc, question, page) in enumerate(QUESTIONS)
        )
    )
    store = str(tmp_path / "idx")
    records, check = dump_features(str(questions), [str(pdfs)], store, quiet=True)
    assert check == {"questions": 4, "replay_mismatches": []}
    assert {r.company for r in records} == {"best buy", "netflix"}
    assert all(r.features.shape[0] == len(r.candidates) > 0 for r in records)

    # With the modality fallback on, the replay runs it as the pipeline does: the same passages, and it does cut.
    on = tmp_path / "fallback-on.yaml"
    on.write_text(
        "components:\n  fallback:\n    init_parameters:\n      enabled: true\n"
        "      thresholds: {text: 0.3, table: 0.3, image: 0.3}\n      min_counts: {text: 1}\n"
    )
    with_fallback, check = dump_features(str(questions), [str(pdfs)], store, quiet=True, fragments=[str(on)])
    assert check == {"questions": 4, "replay_mismatches": []}
    config = FallbackConfig.from_params({"text": 0.3, "table": 0.3, "image": 0.3}, {"text": 1})
    settings = replace(SHIPPED_REPLAY, k=5)
    cut = [replay(r, r.hand_scores, replace(settings, fallback=config)) for r in with_fallback]
    assert cut != [replay(r, r.hand_scores, settings) for r in with_fallback]
    assert all(r.fallback_inputs and r.fallback_inputs.chunk_words for r in with_fallback)

    dump, model_path = tmp_path / "f.jsonl.gz", tmp_path / "model.json"
    argv = ["train-ranker", "--questions", str(questions), "--filings", str(pdfs), "--store", store]
    assert main([*argv, "--dump", str(dump), "--out", str(model_path), "--folds", "2", "-q"]) == 0
    printed = capsys.readouterr().out
    assert "page_hit@5 learned" in printed and "best buy" in printed and "netflix" in printed
    assert len(read_dump(dump)) == 4
    model = RankingModel.load(model_path)
    assert model.info["questions"] == 4 and "cv_page_hit@5" in model.info
    assert model.info["weighting"] == "role"  # every evidence role of every question weighs the same by default
    assert model.info["tree_weighting"] == "question"
    assert set(model.info["hand_set_ratios_to_dense"]) == {"lexical"}  # BM25 at its hand-set ratio to dense
    assert model.trees is not None and model.tree_weight == model.info["tree_weight"] == 0.25  # trees blended in
    assert model.term_pairs is not None and model.term_pair_weight == 0.5  # term pairs fitted on the dumped words
    assert all(c.words for r in read_dump(dump) for c in r.candidates)
    linear_path = tmp_path / "linear.json"
    linear_argv = ["train-ranker", "--from-dump", str(dump), "--out", str(linear_path), "--folds", "0"]
    assert main([*linear_argv, "--trees", "0", "--term-pairs", "0"]) == 0
    linear = RankingModel.load(linear_path)
    # the same logistic part (the dump rounds features to 6 decimals)
    assert (
        linear.trees is None
        and linear.term_pairs is None
        and np.allclose(linear.coefficients, model.coefficients, atol=1e-4)
    )
    by_question_path = tmp_path / "by-question.json"
    by_question_argv = ["train-ranker", "--from-dump", str(dump), "--out", str(by_question_path), "--folds", "0"]
    assert main([*by_question_argv, "--weighting", "question"]) == 0
    by_question = RankingModel.load(by_question_path)
    # one gold page a question: one evidence role each, so each question weighs what each role did
    assert by_question.info["weighting"] == "question"
    assert np.allclose(by_question.coefficients, model.coefficients, atol=1e-4)

    fragment = tmp_path / "ranker.yaml"
    fragment.write_text(f"components:\n  ranker:\n    init_parameters:\n      scoring_model: {model_path}\n")
    runner = QueryRunner(store, fragments=[str(fragment)])
    try:
        result = runner.run(QUESTIONS[0][2], ["BESTBUY_2023_10Q"], k=3)
    finally:
        runner.close()
    assert result.passages and result.trace["rerank"]["fallback"]["scoring_model"] == str(model_path)
    assert result.candidates and len(result.candidates) >= len(result.passages)


def test_the_cli_offers_the_weightings_the_fit_knows():
    from haystack_fin import cli
    from haystack_fin.ranker_training import WEIGHTINGS

    assert set(cli._WEIGHTINGS) == set(WEIGHTINGS)


def test_the_cli_defaults_are_the_shipped_fit():
    """train-ranker repeats the fit's defaults (the CLI imports no training code before a command runs)."""
    from haystack_fin import cli
    from haystack_fin import ranker_training as training

    args = cli.build_parser().parse_args(["train-ranker"])
    assert (args.c, args.fit, args.weighting, training.hand_set_signals(args.hand_set)) == (
        training.DEFAULT_C,
        training.DEFAULT_FIT,
        training.DEFAULT_WEIGHTING,
        list(training.DEFAULT_HAND_SET),
    )
    assert (args.trees, args.tree_weighting, args.term_pairs, args.term_pair_c) == (
        training.DEFAULT_TREE_WEIGHT,
        training.DEFAULT_TREE_WEIGHTING,
        training.DEFAULT_TERM_PAIRS,
        training.DEFAULT_TERM_PAIR_C,
    )


def test_hand_set_ratios_name_the_fallback_signals():
    assert hand_set_ratios(["lexical"]) == {"lexical": pytest.approx(0.3 / 0.7)}
    assert hand_set_ratios([]) == {}
    with pytest.raises(ValueError, match=r"hand-set signal\(s\) \['bm25'\]"):
        hand_set_ratios(["bm25"])


def _synthetic_records(n: int = 12, words: bool = False) -> list[ReplayRecord]:
    """Questions with two evidence roles (a table on page 1 or 2, a paragraph on page 9) among ten candidates; with
    ``words``, the paragraph says "driven" where the others do not."""
    rng = np.random.default_rng(4)
    records = []
    for q in range(n):
        pages = [1, 2, 1, 9, 3, 4, 5, 6, 7, 8]
        cands = [
            ReplayCandidate(
                f"F{q}#chunk-{i:05d}",
                f"F{q}",
                "7",
                2,
                [p],
                [f"F{q}#chunk-{i:05d}"],
                words=(["driven", "margin"] if p == 9 else ["margin"]) if words else None,
            )
            for i, p in enumerate(pages)
        ]
        text = "What drove the margin?" if words else "?"
        question = Question(f"q{q}", f"F{q}", "t", text, {1, 2, 9}, [], {"table": {1, 2}, "text": {9}})
        dense = rng.random(len(cands))
        signals = [PassageScore(float(d), dense=float(d), lexical=float(rng.random()), table=None) for d in dense]
        facts = [CandidateFacts("tree", item="7", is_table=p in (1, 2)) for p in pages]
        records.append(
            ReplayRecord(question, f"co{q % 4}", "set", cands, signals, list(dense), facts, QuestionFlags(), dense)
        )
    return records


def test_the_trees_weigh_the_candidates_by_their_own_weighting():
    records = _synthetic_records()
    by_role = fit_model(records, weighting="role", tree_weighting="question", term_pairs=0.0)
    by_question = fit_model(records, weighting="question", tree_weighting="question", term_pairs=0.0)
    assert by_role.info["weighting"] == "role" and by_role.info["tree_weighting"] == "question"
    assert by_role.trees is not None and by_question.trees is not None
    assert by_role.trees.to_dict() == by_question.trees.to_dict()  # only the logistic part weighs by role
    assert not np.allclose(by_role.coefficients, by_question.coefficients)
    trees_by_role = fit_model(records, weighting="question", tree_weighting="role", term_pairs=0.0)
    assert trees_by_role.trees is not None and trees_by_role.trees.to_dict() != by_question.trees.to_dict()
    with pytest.raises(ValueError, match="tree_weighting must be one of"):
        fit_model(records, tree_weighting="roles")


def test_the_term_pairs_are_fitted_on_the_dumped_words():
    records = _synthetic_records(40, words=True)  # 40 candidates say "driven": enough to enter the vocabulary
    model = fit_model(records, trees=0.0)
    assert model.term_pairs is not None and model.term_pair_weight == model.info["term_pair_weight"] == 0.5
    assert model.term_pairs.question_vocabulary == ("drove", "margin")  # asked of four companies
    scores = records[0].model_scores(model)
    plain = replace(model, term_pairs=None, term_pair_weight=0.0).score(records[0].features)
    assert scores[3] - plain[3] > 0 and all(scores[i] - plain[i] < scores[3] - plain[3] for i in (0, 4, 9))
    with pytest.raises(ValueError, match="the dump has no candidate words"):
        fit_model(_synthetic_records())
    with pytest.raises(ValueError, match="term_pairs must be >= 0"):
        fit_model(records, term_pairs=-1.0)
