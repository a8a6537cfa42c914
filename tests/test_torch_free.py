import copy
import subprocess
import sys

import yaml

from haystack_fin import pipelines_dir
from haystack_fin.torch_free import runs_without_torch


def _query() -> dict:
    return yaml.safe_load((pipelines_dir() / "query.yaml").read_text())


def test_the_shipped_query_pipeline_runs_without_torch():
    assert runs_without_torch(_query())


def test_a_cross_encoder_or_an_unknown_component_keeps_torch():
    with_model = copy.deepcopy(_query())
    with_model["components"]["ranker"]["init_parameters"]["model"] = "BAAI/bge-reranker-base"
    assert not runs_without_torch(with_model)
    unknown = copy.deepcopy(_query())
    unknown["components"]["extra"] = {"type": "mypackage.MyRanker", "init_parameters": {}}
    assert not runs_without_torch(unknown)
    assert not runs_without_torch({}) and not runs_without_torch({"components": {}})
    indexing = yaml.safe_load((pipelines_dir() / "indexing.yaml").read_text())
    assert not runs_without_torch(indexing)  # the document embedder runs torch


def test_haystack_loads_the_query_pipeline_with_torch_kept_out(tmp_path):
    """In a fresh process (torch is already imported in this one, and keep_torch_out never removes it)."""
    code = (
        "import sys, yaml\n"
        "from haystack_fin import pipelines_dir\n"
        "from haystack_fin.torch_free import keep_torch_out\n"
        "query = yaml.safe_load((pipelines_dir() / 'query.yaml').read_text())\n"
        "assert keep_torch_out(query)\n"
        "from haystack_fin.pipeline_loader import load_pipeline\n"
        "load_pipeline('query').warm_up()  # components built and warmed: nothing asked for torch\n"
        "assert sys.modules['torch'] is None\n"
        "assert not keep_torch_out(query)  # once is enough; never undone\n"
        "print('ok')\n"
    )
    # cwd: warm_up opens the YAML's ./fin-index
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "ok"
