"""The ranker's learned score: features from the fallback's signals and the candidates' facts, the logistic model's
JSON and its fit."""

import json

import numpy as np
import pytest

from haystack_fin.core.retrieval.passage_scoring import PassageScore
from haystack_fin.core.retrieval.ranking_model import (
    FEATURES,
    TREES_MODEL_VERSION,
    CandidateFacts,
    QuestionFlags,
    RankingModel,
    TreeEnsemble,
    feature_matrix,
    fit_logistic,
    fit_trees,
    item_role,
    question_weights,
    resolve_model_path,
    tie_to_dense,
    untie,
)


def col(name: str) -> int:
    return FEATURES.index(name)


def test_question_flags_read_analysts_wording() -> None:
    assert QuestionFlags.of("What drove the decline in gross margin?", True) == QuestionFlags(True, True, False)
    assert QuestionFlags.of("Who are the primary customers?", False) == QuestionFlags(False, False, True)
    assert QuestionFlags.of("What was total revenue in FY2022?", True) == QuestionFlags(True, False, False)


def test_item_roles_of_10k_10q_8k_and_exhibits() -> None:
    assert [item_role(i) for i in ("1", "7", "I-2", "8", "I-1", "cover", "EX-99.1", "2.02", None)] == [
        "business", "mdna", "mdna", "statements", "statements", "cover", "exhibit", "other", "other",
    ]  # fmt: skip


def test_features_of_signals_sources_items_and_ranks() -> None:
    scores = [
        PassageScore(0.9, dense=1.0, lexical=0.2, table=0.5, statement=1.0, consolidated=1.0),
        PassageScore(0.4, dense=0.5, lexical=1.0, table=None, statement=0.0, consolidated=0.0),
    ]
    facts = [
        CandidateFacts("statement", budget_k=4, item="8", is_table=True, position=0.8, n_words=120),
        CandidateFacts("graph", budget_k=2, item="7", entity_hit=1.0, graph_score=0.7, n_words=0),
    ]
    m = feature_matrix(scores, facts, [0.61, None], QuestionFlags.of("What drove the margin change?", True))
    assert m.shape == (2, len(FEATURES))
    assert m[0, col("statement_prior")] == 1.0 and m[0, col("source_statement")] == 1.0
    assert m[0, col("consolidated")] == 1.0 and m[1, col("consolidated")] == -1.0
    assert m[0, col("number_table")] == 1.0 and m[1, col("number_table")] == 0.0
    assert (m[0, col("cause_text")], m[1, col("cause_text")], m[1, col("cause_mdna")]) == (0.0, 1.0, 1.0)
    assert m[:, col("business_item1")].tolist() == [0.0, 0.0]
    assert m[0, col("item_statements")] == 1.0 and m[1, col("item_mdna")] == 1.0
    assert (m[0, col("item_budget")], m[1, col("item_budget")]) == (1.0, 0.5)
    assert m[1, col("dense_rank")] == 0.0  # no vector: no dense rank
    assert (m[0, col("lexical_rank")], m[1, col("lexical_rank")]) == (0.5, 1.0)
    assert m[1, col("entity_hit")] == 1.0 and m[1, col("graph_score")] == 0.7
    assert m[1, col("position")] == 0.5  # unknown place: the middle
    assert m[0, col("log_words")] == pytest.approx(np.log1p(120))
    with pytest.raises(ValueError, match="2 scores, 1 facts"):
        feature_matrix(scores, facts[:1], [0.1, 0.2], QuestionFlags())


def test_model_json_round_trip_and_refusals(tmp_path) -> None:
    model = RankingModel(("dense", "lexical"), np.array([2.0, -1.0]), 0.5, np.array([0.5, 0.5]), np.array([1, 2]))
    x = np.zeros((1, len(FEATURES)))
    x[0, col("dense")], x[0, col("lexical")] = 1.0, 0.5
    assert model.logits(x)[0] == pytest.approx(0.5 + 2.0 * 0.5 - 1.0 * 0.0)
    path = tmp_path / "m.json"
    model.save(path)
    again = RankingModel.load(path)
    assert np.allclose(again.score(x), model.score(x)) and again.features == ("dense", "lexical")
    with pytest.raises(ValueError, match="unknown feature"):
        RankingModel(("bm42",), np.array([1.0]))
    with pytest.raises(ValueError, match="2 coefficients for 1 features"):
        RankingModel(("dense",), np.array([1.0, 2.0]))
    path.write_text(json.dumps({"version": 99, "kind": "logistic"}))
    with pytest.raises(ValueError, match=f"ranking model {path}"):
        RankingModel.load(path)
    with pytest.raises(FileNotFoundError, match=r"nope\.json"):
        resolve_model_path(tmp_path / "nope.json")


def test_fit_learns_which_feature_marks_the_evidence() -> None:
    rng = np.random.default_rng(0)
    x = rng.random((400, len(FEATURES)))
    y = (x[:, col("statement_prior")] > 0.7).astype(int)
    model = fit_logistic(x, y, info={"note": "synthetic"})
    coef = dict(zip(model.features, model.coefficients, strict=True))
    assert max(coef, key=lambda f: abs(coef[f])) == "statement_prior" and coef["statement_prior"] > 0
    assert model.info == {"fit": "pointwise", "weighting": "candidate", "note": "synthetic"}
    with pytest.raises(ValueError, match="both relevant and irrelevant"):
        fit_logistic(x, np.zeros(400, dtype=int))


def test_question_weights_give_every_question_the_same_weight() -> None:
    # question 0: 1 relevant of 10 candidates; question 1: 5 of 10; question 2: none relevant
    labels = np.array([1] + [0] * 9 + [1] * 5 + [0] * 5 + [0] * 4)
    questions = np.array([0] * 10 + [1] * 10 + [2] * 4)
    w = question_weights(labels, questions)
    assert w.mean() == pytest.approx(1.0)
    assert w[labels == 1].sum() == pytest.approx(w[labels == 0].sum())  # relevant and other balanced
    assert w[0] == pytest.approx(w[10:15].sum())  # one relevant candidate weighs what five of another question do
    negatives = [w[(questions == q) & (labels == 0)].sum() for q in (0, 1, 2)]
    assert negatives == pytest.approx([negatives[0]] * 3)


def test_role_weights_give_every_evidence_role_of_a_question_one_unit() -> None:
    # question 0: roles 0 (three candidates) and 1 (one) of 8 candidates; question 1: one role, two candidates of 6
    labels = np.array([1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0])
    questions = np.array([0] * 8 + [1] * 6)
    roles = np.array([0, 0, 0, 1, -1, -1, -1, -1, 0, 0, -1, -1, -1, -1])
    w = question_weights(labels, questions, roles)
    assert w.mean() == pytest.approx(1.0)
    assert w[labels == 1].sum() == pytest.approx(w[labels == 0].sum())
    assert w[3] == pytest.approx(w[0:3].sum())  # a role's single candidate weighs what three of another role do
    assert w[0:4].sum() == pytest.approx(2 * w[8:10].sum())  # two roles weigh twice one
    assert w[4:8].sum() == pytest.approx(w[10:14].sum())  # the other candidates: one unit a question, as before
    assert question_weights(labels, questions) == pytest.approx(question_weights(labels, questions, [0] * 14))
    with pytest.raises(ValueError, match="3 evidence roles for 14 candidates"):
        question_weights(labels, questions, [0, 1, 2])


def test_role_weighting_is_named_in_the_model_and_needs_question_ids() -> None:
    rng = np.random.default_rng(3)
    x = rng.random((200, len(FEATURES)))
    y = (x[:, col("cosine")] > 0.7).astype(int)
    questions = np.repeat(np.arange(10), 20)
    roles = np.where(y == 1, questions % 2, -1)
    assert fit_logistic(x, y, question_ids=questions, roles=roles).info["weighting"] == "role"
    with pytest.raises(ValueError, match="give the question ids too"):
        fit_logistic(x, y, roles=roles)
    with pytest.raises(ValueError, match="give the question ids too"):
        fit_trees(x, y, roles=roles)


def test_question_weighting_keeps_a_large_question_from_deciding_the_fit() -> None:
    # One question with 1,000 candidates whose evidence is marked by "lexical"; ten with 20 candidates each whose
    # evidence is marked by "cosine". Weighing candidates, the large question decides; weighing questions, the ten.
    rng = np.random.default_rng(1)
    x = rng.random((1200, len(FEATURES)))
    questions = np.array([0] * 1000 + [q for q in range(1, 11) for _ in range(20)])
    y = np.where(questions == 0, x[:, col("lexical")] > 0.7, x[:, col("cosine")] > 0.7).astype(int)
    by_candidate = dict(zip(FEATURES, fit_logistic(x, y).coefficients, strict=True))
    by_question_model = fit_logistic(x, y, question_ids=questions)
    by_question = dict(zip(FEATURES, by_question_model.coefficients, strict=True))
    assert by_candidate["lexical"] > by_candidate["cosine"]
    assert by_question["cosine"] > by_question["lexical"]
    assert by_question_model.info["weighting"] == "question"
    with pytest.raises(ValueError, match="3 question ids for 1200 candidates"):
        fit_logistic(x, y, question_ids=[0, 1, 2])


def test_a_tied_feature_keeps_its_ratio_to_dense_and_the_untied_model_scores_the_same() -> None:
    rng = np.random.default_rng(2)
    x = rng.random((300, len(FEATURES)))
    y = (x[:, col("dense")] + 0.5 * x[:, col("lexical")] > 0.9).astype(int)
    ratios = {"lexical": 0.3 / 0.7}
    merged = tie_to_dense(x, ratios)
    assert np.allclose(merged[:, col("dense")], x[:, col("dense")] + ratios["lexical"] * x[:, col("lexical")])
    assert np.array_equal(np.delete(merged, col("dense"), axis=1), np.delete(x, col("dense"), axis=1))
    fitted = fit_logistic(merged, y, [f for f in FEATURES if f != "lexical"])
    model = untie(fitted, ratios)
    assert np.allclose(model.logits(x), fitted.logits(merged))
    coef = dict(zip(model.features, model.coefficients / model.scale, strict=True))  # per raw unit
    assert coef["lexical"] == pytest.approx(ratios["lexical"] * coef["dense"])
    assert model.info["hand_set_ratios_to_dense"] == {"lexical": round(ratios["lexical"], 6)}
    again = RankingModel.from_dict(json.loads(json.dumps(model.to_dict())))
    assert np.allclose(again.logits(x), model.logits(x), atol=1e-4)
    with pytest.raises(ValueError, match="without the tied features"):
        untie(model, ratios)


def _synthetic(n: int = 600) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows where the evidence needs two features at once (an interaction a linear model cannot weigh)."""
    rng = np.random.default_rng(1)
    x = rng.random((n, len(FEATURES)))
    y = ((x[:, col("statement_prior")] > 0.5) & (x[:, col("cause_mdna")] > 0.5)).astype(int)
    return x, y, np.arange(n) // 20


def test_exported_trees_score_as_scikit_learn_does() -> None:
    from sklearn.ensemble import HistGradientBoostingClassifier

    x, y, _ = _synthetic()
    fitted = HistGradientBoostingClassifier(max_depth=3, max_iter=20, random_state=0).fit(x, y)
    trees = TreeEnsemble.from_sklearn(fitted, FEATURES)
    with_gaps = x.copy()
    with_gaps[::5, col("statement_prior")] = np.nan  # a missing value goes where the fit sent missing values
    for rows in (x, with_gaps):
        assert np.allclose(trees.logits(rows), fitted.decision_function(rows))
    again = TreeEnsemble.from_dict(json.loads(json.dumps(trees.to_dict())))
    assert np.allclose(again.logits(x), trees.logits(x))
    with pytest.raises(ValueError, match="not a fitted HistGradientBoostingClassifier"):
        TreeEnsemble.from_sklearn(HistGradientBoostingClassifier(), FEATURES)


def test_tree_refusals() -> None:
    leaf = {"feature": [-1], "threshold": [0.0], "left": [0], "right": [0], "value": [0.5], "missing_left": [0]}
    assert TreeEnsemble(("dense",), 0.1, [leaf]).logits(np.zeros((2, len(FEATURES)))) == pytest.approx([0.6, 0.6])
    split = {"feature": [0, -1, -1], "threshold": [0.5, 0, 0], "left": [1, 0, 0], "right": [2, 0, 0]}
    looped = {**split, "left": [0, 0, 0], "value": [0, 1, 2], "missing_left": [0, 0, 0]}
    with pytest.raises(ValueError, match="left child out of range"):  # a cycle would never reach a leaf
        TreeEnsemble(("dense",), 0.0, [looped])
    with pytest.raises(ValueError, match="a feature the model does not name"):
        TreeEnsemble(("dense",), 0.0, [{**split, "feature": [3, -1, -1], "value": [0, 1, 2], "missing_left": [0] * 3}])
    with pytest.raises(ValueError, match=r"lacks \['value', 'missing_left'\]"):
        TreeEnsemble(("dense",), 0.0, [split])
    with pytest.raises(ValueError, match="unknown feature"):
        TreeEnsemble(("bm42",), 0.0, [leaf])


def test_trees_blend_into_the_log_odds_and_round_trip(tmp_path) -> None:
    x, y, questions = _synthetic()
    linear = fit_logistic(x, y, c=0.1, question_ids=questions)
    trees = fit_trees(x, y, questions)
    blended = RankingModel(
        linear.features, linear.coefficients, linear.intercept, linear.mean, linear.scale, trees=trees, tree_weight=0.25
    )
    assert np.allclose(blended.logits(x), 0.75 * linear.logits(x) + 0.25 * trees.logits(x))
    evidence = y == 1

    # the trees catch the interaction: they separate the evidence better than the linear model alone
    def gap(scores: np.ndarray) -> float:
        return float(scores[evidence].mean() - scores[~evidence].mean())

    assert gap(trees.logits(x)) > gap(linear.logits(x))
    path = tmp_path / "blend.json"
    blended.save(path)
    data = json.loads(path.read_text())
    assert data["version"] == TREES_MODEL_VERSION and data["tree_weight"] == 0.25
    # the file keeps six decimals of the coefficients, means and scales
    assert np.allclose(RankingModel.load(path).score(x), blended.score(x), rtol=0, atol=1e-5)
    path.write_text(json.dumps({**data, "version": 1}))  # trees in a file that says it has none
    with pytest.raises(ValueError, match="trees exactly when its version is 2"):
        RankingModel.load(path)
    with pytest.raises(ValueError, match=r"tree_weight must be in \(0, 1\]"):
        RankingModel(("dense",), np.array([1.0]), trees=trees, tree_weight=1.5)
    with pytest.raises(ValueError, match="without trees"):
        RankingModel(("dense",), np.array([1.0]), tree_weight=0.5)


def test_the_shipped_model_loads() -> None:
    model = RankingModel.load("ranker_weights.json")
    assert set(model.features) <= set(FEATURES) and model.info.get("cv")
    assert model.trees is not None and model.tree_weight == model.info["tree_weight"]
    assert resolve_model_path("ranker_weights.json").parent.name == "data"
