"""Os notebooks são versionados limpos (sem saídas), numerados, com o kernel certo e o labutils
importado antes do Ray."""

import json
import re
from pathlib import Path

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_notebooks_are_clean_numbered_and_use_python3():
    """Sem saídas, e sem marca do nbval que compara a saída de uma célula (sem saída guardada,
    ela não confere nada: o que a lição afirma é um ``assert``)."""
    dirty, marks = [], []
    for nb in NOTEBOOKS:
        assert re.match(r"^\d{2}_[a-z0-9_]+\.ipynb$", nb.name), nb.name
        content = json.loads(nb.read_text())
        assert content["metadata"]["kernelspec"]["name"] == "python3", nb.name
        for cell in content["cells"]:
            if cell["cell_type"] != "code":
                continue
            if cell["outputs"] or cell["execution_count"]:
                dirty.append(nb.name)
            tags = cell.get("metadata", {}).get("tags", [])
            if "nbval-check-output" in tags or "NBVAL_CHECK_OUTPUT" in "".join(cell["source"]):
                marks.append(nb.name)
    assert not dirty, f"notebooks com saídas (limpe antes de versionar): {sorted(set(dirty))}"
    assert not marks, f"comparação de saída que não compara nada: {sorted(set(marks))}"


IMPORT_RAY = re.compile(r"^\s*(import ray\b|from ray\b)", re.M)
IMPORT_LABUTILS = re.compile(r"^\s*(import labutils\b|from labutils\b)", re.M)


def first_import(cells: list[dict], pattern: re.Pattern) -> tuple[int, int] | None:
    """``(célula, posição na célula)`` do primeiro import que casa com ``pattern``."""
    for index, cell in enumerate(cells):
        source = "".join(cell["source"]) if cell["cell_type"] == "code" else ""
        found = pattern.search(source)
        if found:
            return index, found.start()
    return None


def test_labutils_is_imported_before_ray():
    """O ``import labutils`` liga o token (``RAY_AUTH_MODE``) antes de o Ray ser carregado; o
    nbval não o pegaria (o conftest da raiz já exporta a variável para os kernels)."""
    wrong = []
    for nb in NOTEBOOKS:
        cells = json.loads(nb.read_text())["cells"]
        ray, labutils = first_import(cells, IMPORT_RAY), first_import(cells, IMPORT_LABUTILS)
        if ray is not None and (labutils is None or labutils > ray):
            wrong.append(nb.name)
    assert not wrong, f"importe labutils antes do ray, numa célula própria (lição 04): {wrong}"
