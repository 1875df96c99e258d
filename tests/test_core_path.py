"""A passada "sem opcionais" de ``notebooks/conftest.py`` pega uma célula principal que depende de
uma opcional (e só ela: o notebook inteiro passa).

Um pytest interno roda, com o ``conftest.py`` dos notebooks, um notebook mínimo em que a última
célula (principal) usa um nome que só uma célula com a tag ``opcional`` define; e um em que depois
da opcional só há o encerramento, que não ganha a segunda passada (o caminho principal é o começo
da execução inteira).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from labutils import config, system

ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location("nb_conftest", ROOT / "notebooks" / "conftest.py")
nb_conftest = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(nb_conftest)


def _notebook(path: Path, last_cell: str) -> None:
    optional = {"tags": ["opcional"]}
    nb = new_notebook(
        cells=[
            new_code_cell("x = 1\nclass Cluster:\n    def stop(self):\n        pass"),
            new_markdown_cell("## Aprofundamento (opcional)", metadata=optional),
            new_code_cell("y = x + 1", metadata=optional),
            new_code_cell(last_cell),
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(path))


def _inner_pytest(folder: Path) -> subprocess.CompletedProcess:
    shutil.copy(ROOT / "notebooks" / "conftest.py", folder / "conftest.py")
    env = config.child_env({"LABUTILS_NBVAL_CORE": "1", "LABUTILS_CHECK_RAY_LEFTOVERS": "0"})
    cmd = [sys.executable, "-m", "pytest", "--nbval-lax", "--nbval-current-env", "-p",
           "no:cacheprovider", "-q", "-rA", str(folder)]  # fmt: skip
    return system.run(cmd, timeout=240, env=env, cwd=folder, check=False)


def test_core_run_fails_only_when_a_core_cell_needs_an_optional_one(tmp_path):
    good, bad = tmp_path / "bom", tmp_path / "ruim"
    good.mkdir()
    bad.mkdir()
    _notebook(good / "01_bom.ipynb", "assert x == 1")
    # as opcionais no fim, depois delas só o encerramento: o caminho principal é o começo da
    # execução inteira, e a passada sem opcionais não roda
    _notebook(good / "02_fim.ipynb", "if x is not None:\n    Cluster().stop()")
    _notebook(bad / "01_ruim.ipynb", "assert y == 2  # y vem da célula opcional")

    done = _inner_pytest(good)
    out = done.stdout
    assert done.returncode == 0, out[-3000:]
    assert "PASSED 01_bom.ipynb[sem opcionais]::Cell 2" in out, out[-3000:]
    assert "01_bom.ipynb[sem opcionais]::Cell 1" not in out, "a célula opcional rodou"
    assert "PASSED 02_fim.ipynb::Cell 2" in out and "02_fim.ipynb[sem" not in out, out[-3000:]

    done = _inner_pytest(bad)
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "01_ruim.ipynb[sem opcionais]::Cell 2" in failed[0], out[-3000:]


@pytest.mark.parametrize(
    ("after_optional", "needed"),
    [
        ("ray.shutdown()", False),
        ("ray.shutdown()\nif cluster_local is not None:\n    cluster_local.stop()", False),
        ("ray.shutdown()\nprint(y)", True),
        ("cluster.stop(force=True)", True),
        ("if pronto:\n    ray.shutdown()\nelse:\n    print(y)", True),
    ],
)
def test_the_core_run_is_needed_unless_only_releases_follow_the_optional_cells(
    after_optional, needed
):
    optional = {"tags": ["opcional"]}
    nb = new_notebook(
        cells=[
            new_code_cell("x = 1"),
            new_code_cell("y = 2", metadata=optional),
            new_code_cell(after_optional),
        ]
    )
    assert nb_conftest.needs_core_run(nb) is needed
    assert not nb_conftest.needs_core_run(new_notebook(cells=[new_code_cell("x = 1")]))
