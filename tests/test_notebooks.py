"""The notebooks stay runnable: their code cells are executed in order, as a kernel would run them."""

import json
import os
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))


@pytest.mark.integration
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_code_cells_run(notebook: Path, capsys, monkeypatch):
    monkeypatch.chdir(notebook.parent)  # as Jupyter starts a kernel next to the notebook
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    namespace: dict = {"__name__": "__main__"}
    for n, cell in enumerate(c for c in cells if c["cell_type"] == "code"):
        source = "".join(cell["source"])
        exec(compile(source, f"{notebook.name}[code cell {n}]", "exec"), namespace)
    printed = capsys.readouterr().out
    assert "statements:" in printed and "[1] " in printed
    assert os.path.isdir(namespace["STORE"])


def test_notebooks_exist():
    assert NOTEBOOKS, "notebooks/ should hold at least the walkthrough"
