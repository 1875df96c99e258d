"""A passada "sem opcionais" de ``notebooks/conftest.py`` pega uma célula principal que depende de
uma opcional (e só ela: o notebook inteiro passa).

Um pytest interno roda, com o ``conftest.py`` dos notebooks, um notebook mínimo em que a última
célula (principal) usa um nome que só uma célula com a tag ``opcional`` define.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from labutils import config, system

ROOT = Path(__file__).resolve().parents[1]


def _notebook(path: Path, last_cell: str) -> None:
    optional = {"tags": ["opcional"]}
    nb = new_notebook(
        cells=[
            new_code_cell("x = 1"),
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
    _notebook(bad / "01_ruim.ipynb", "assert y == 2  # y vem da célula opcional")

    done = _inner_pytest(good)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "PASSED 01_bom.ipynb[sem opcionais]::Cell 2" in done.stdout, done.stdout[-3000:]
    assert "01_bom.ipynb[sem opcionais]::Cell 1" not in done.stdout, "a célula opcional rodou"

    done = _inner_pytest(bad)
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and "01_ruim.ipynb[sem opcionais]::Cell 2" in failed[0], out[-3000:]


def _core_cells_after_optional(path: Path) -> list[str]:
    """As células de código principais que vêm depois da 1ª opcional, menos o ``ray.shutdown()``."""
    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    tags = [set(c.get("metadata", {}).get("tags", [])) for c in code]
    first = next((i for i, t in enumerate(tags) if "opcional" in t), len(code))
    return [
        c.source
        for c, t in zip(code[first:], tags[first:], strict=True)
        if "opcional" not in t and c.source.strip() != "ray.shutdown()"
    ]


def test_a_notebook_without_the_core_run_ends_with_its_optional_cells(tmp_path):
    """A passada "sem opcionais" só é dispensada (``CORE_RUN_SKIPPED``) quando o caminho principal
    é o começo da execução inteira: depois da 1ª célula opcional, nenhuma principal além do
    ``ray.shutdown()`` final."""
    spec = importlib.util.spec_from_file_location("nb_conftest", ROOT / "notebooks" / "conftest.py")
    nb_conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nb_conftest)
    assert nb_conftest.CORE_RUN_SKIPPED
    for name in nb_conftest.CORE_RUN_SKIPPED:
        assert _core_cells_after_optional(ROOT / "notebooks" / name) == [], name
    _notebook(tmp_path / "ruim.ipynb", "assert x == 1")  # uma principal depois da opcional
    assert _core_cells_after_optional(tmp_path / "ruim.ipynb") == ["assert x == 1"]
