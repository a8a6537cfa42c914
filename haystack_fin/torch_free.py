"""Keep torch out of a CLI process whose pipeline runs no torch model.

Haystack imports torch on ``import haystack`` whenever torch is installed: ``haystack.utils.device`` wraps
``import torch`` in a ``LazyImport``, which defers only an import that fails. The shipped query pipeline runs no
torch model (NumpyTextEmbedder computes the question's vector in numpy; TwoStageRanker's default scorer needs no
cross-encoder), yet a cold ``haystack-fin ask`` spent about 1.8 s of its 4.1 s importing torch (52-filing Edge
store, quiet machine; 2.2-2.4 s and 349 MB instead of 519 MB without it, same passages).

``keep_torch_out`` marks torch as not importable (``sys.modules["torch"] = None``, which makes ``import torch``
raise ImportError) when every component of the pipeline is known here to run without it, so that Haystack behaves
as on an install without torch. A component type not listed, or a listed one configured with a model that needs
torch, keeps torch importable. Only the console entry point calls it, before Haystack is imported, and only when
nothing imported torch yet: a process that calls ``cli.main()`` in-process (tests, notebooks) is never changed.

No Haystack import here (it would import torch).
"""

import sys
from collections.abc import Callable, Mapping
from typing import Any


def _always(_params: Mapping[str, Any]) -> bool:
    return True


def _no_ranker_model(params: Mapping[str, Any]) -> bool:
    return not params.get("model")  # with a model, the ranker runs a sentence-transformers cross-encoder


# Component types that run without torch (given their init parameters). Store nodes are nested in these.
TORCH_FREE: dict[str, Callable[[Mapping[str, Any]], bool]] = {
    "haystack_fin.components.query_analyzer.QueryAnalyzer": _always,
    "haystack_fin.components.numpy_text_embedder.NumpyTextEmbedder": _always,
    "haystack_fin.components.filing_scope.FilingScope": _always,
    "haystack_fin.components.dense_filing_scope.DenseFilingScope": _always,
    "haystack_fin.components.flam_router.FlamRouter": _always,
    "haystack_fin.components.dual_tree_retriever.DualTreeRetriever": _always,
    "haystack_fin.components.graph_expander.GraphExpander": _always,
    "haystack_fin.components.two_stage_ranker.TwoStageRanker": _no_ranker_model,
    "haystack_fin.components.modality_fallback.ModalityThresholdFallback": _always,
    "haystack_fin.components.passage_window.PassageWindow": _always,
    "haystack_fin.components.answer_checker.AnswerChecker": _always,
    "haystack.components.routers.conditional_router.ConditionalRouter": _always,
    "haystack.components.builders.chat_prompt_builder.ChatPromptBuilder": _always,
    "haystack.components.builders.answer_builder.AnswerBuilder": _always,
    "haystack_integrations.components.generators.ollama.chat.chat_generator.OllamaChatGenerator": _always,
}


def runs_without_torch(pipeline: Mapping[str, Any]) -> bool:
    """Whether every component of ``pipeline`` (a pipeline's dict form) is listed in ``TORCH_FREE`` as running
    without torch with its init parameters."""
    components = pipeline.get("components")
    if not isinstance(components, Mapping) or not components:
        return False
    for node in components.values():
        check = TORCH_FREE.get(node.get("type", "")) if isinstance(node, Mapping) else None
        if check is None or not check(node.get("init_parameters") or {}):
            return False
    return True


def keep_torch_out(pipeline: Mapping[str, Any] | None = None) -> bool:
    """Make ``import torch`` fail in this process when ``pipeline`` runs without torch (``None``: the command runs
    no pipeline model at all) and torch was not imported yet. Returns whether it did."""
    if "torch" in sys.modules:
        return False
    if pipeline is not None and not runs_without_torch(pipeline):
        return False
    sys.modules["torch"] = None  # type: ignore[assignment]  # None in sys.modules is how Python marks "not importable"
    return True
