"""Os notebooks são versionados limpos (sem saídas), numerados e com o kernel certo."""

import json
import re
from pathlib import Path

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_lessons():
    assert any(nb.name.startswith("01_") for nb in NOTEBOOKS)


def test_notebooks_have_no_outputs():
    """Sem saídas, exceto a referência revisada de uma célula com a tag ``nbval-check-output``
    (a única saída que o nbval compara; veja tests/test_nbval_markers.py)."""
    dirty = []
    for nb in NOTEBOOKS:
        for cell in json.loads(nb.read_text())["cells"]:
            reference = "nbval-check-output" in cell.get("metadata", {}).get("tags", [])
            if reference:
                continue
            if cell["cell_type"] == "code" and (cell["outputs"] or cell["execution_count"]):
                dirty.append(nb.name)
                break
    assert not dirty, f"notebooks com saídas (limpe antes de versionar): {dirty}"


def test_notebooks_are_numbered_and_use_python3():
    for nb in NOTEBOOKS:
        assert re.match(r"^\d{2}_[a-z0-9_]+\.ipynb$", nb.name), nb.name
        meta = json.loads(nb.read_text())["metadata"]
        assert meta["kernelspec"]["name"] == "python3", nb.name
