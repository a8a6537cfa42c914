"""The set-up's torch decision (Makefile ``TORCH_BUILD_PY``): the CPU index only when the configured index would
install a CUDA build. Reports are real ``pip install --dry-run --report`` outputs, trimmed to names, versions and
URLs (``_how`` in each file says how it was made)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO / "tests" / "fixtures" / "torch-reports"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def _build(report: Path) -> str:
    out = subprocess.run(
        ["make", "-s", "-C", str(REPO), "torch-build", f"REPORT={report}", f"PYTHON={sys.executable}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.mark.parametrize(
    ("report", "build"),
    [("pypi-linux-x86_64.json", "cuda"), ("local-cpu-wheel.json", "cpu")],
    ids=["plain-pypi-linux", "local-cpu-wheel"],
)
def test_torch_build_of_a_dry_run_report(report, build):
    assert _build(REPORTS / report) == build


def test_a_cuda_local_version_without_nvidia_packages_is_cuda(tmp_path):
    report = tmp_path / "r.json"
    report.write_text('{"install": [{"metadata": {"name": "torch", "version": "2.13.0+cu130"}}]}')
    assert _build(report) == "cuda"
    report.write_text('{"install": []}')  # torch already installed: nothing to fetch, the plain install is a no-op
    assert _build(report) == "cpu"


def test_cpu_index_is_named_once_in_the_makefile_and_in_the_readme():
    assert (REPO / "Makefile").read_text().count(CPU_INDEX) == 1
    assert CPU_INDEX in (REPO / "README.md").read_text()
