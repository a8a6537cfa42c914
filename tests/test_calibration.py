"""`haystack-fin calibrate` end to end on the Best Buy 10-Q fixture: one retrieval per question, every threshold
applied to the same ranked lists, the baseline equal to the pipeline's own output, a fragment query.yaml loads."""

import json
import shutil
from pathlib import Path

import pytest
from haystack import Pipeline

from haystack_fin.cli import main
from haystack_fin.pipeline_loader import ALLOWED_MODULES, apply_fragment, load_fragment, pipeline_dict

FIXTURE = Path(__file__).parent / "fixtures" / "bestbuy-10q-2023-07-29.pdf"
DOC = "BESTBUY_2023_10Q"


@pytest.mark.integration
def test_calibrate_writes_a_fragment_the_query_yaml_loads(tmp_path, capsys):
    pdfs = tmp_path / "pdfs"
    pdfs.mkdir()
    shutil.copy(FIXTURE, pdfs / f"{DOC}.pdf")
    questions = tmp_path / "q.jsonl"
    records = [
        {
            "financebench_id": "q1",
            "doc_name": DOC,
            "question_type": "metrics-generated",
            "question": "What was Best Buy's revenue in Q2 FY2024?",
            "evidence": [{"evidence_page_num": 3, "evidence_text": "Revenue 9,583"}],
        },
        {
            "financebench_id": "q2",
            "doc_name": DOC,
            "question_type": "domain-relevant",
            "question": "What drove the change in Best Buy's gross profit rate?",
            "evidence": [{"evidence_page_num": 22, "evidence_text": "gross profit rate"}],
        },
    ]
    questions.write_text("\n".join(json.dumps(r) for r in records))
    out, sweep = tmp_path / "fallback.yaml", tmp_path / "sweep.json"
    code = main(
        [
            "calibrate",
            "--questions",
            str(questions),
            "--pdfs",
            str(pdfs),
            "--store",
            str(tmp_path / "idx"),
            "--text-range",
            "0.2:0.6:0.2",
            "--out",
            str(out),
            "--json",
            str(sweep),
            "-q",
        ]
    )
    assert code == 0
    result = json.loads(sweep.read_text())
    assert result["baseline_mismatches"] == 0  # the sweep's baseline is what the pipeline returns
    assert [r["thresholds"]["text"] for r in result["rows"] if r["stage"] == "text"] == [0.2, 0.4, 0.6]
    assert all(sum(r["tiers"].values()) == 2 for r in result["rows"])
    assert "off" in capsys.readouterr().out
    fragment = load_fragment(out)
    data = apply_fragment(pipeline_dict("query"), fragment)
    fallback = Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES).get_component("fallback")
    params = fragment["components"]["fallback"]["init_parameters"]
    if result["chosen"] is None:
        assert fallback.enabled is False
    else:
        assert dict(fallback.config.thresholds) == params["thresholds"] == result["chosen"]["thresholds"]
