"""O executor de notebooks (``tools/run_notebooks.py``, o ``make notebooks``): quais notebooks
roda, uma linha por notebook com o tempo, e o código de saída."""

import sys

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from labutils import system
from tools.run_notebooks import ROOT, lesson_notebooks


def test_make_notebooks_runs_every_lesson_and_the_solution_but_not_the_student_copy():
    names = [p.name for p in lesson_notebooks()]
    assert names == sorted(names) and names[0].startswith("00_"), names
    assert "07_exercicio_multiworker_solucao.ipynb" in names
    assert not [n for n in names if n.endswith("_aluno.ipynb")], names
    every = {p.name for p in (ROOT / "notebooks").glob("[0-9]*.ipynb")}
    assert every - set(names) == {"07_exercicio_multiworker_aluno.ipynb"}


def _notebook(path, *sources):
    nbformat.write(new_notebook(cells=[new_code_cell(s) for s in sources]), path)
    return path


@pytest.mark.timeout(180)
def test_one_line_per_notebook_with_its_time_and_rc_1_when_one_fails(tmp_path):
    ok = _notebook(tmp_path / "01_ok.ipynb", "import os\nx = os.environ['LABUTILS_SCALE']", "x")
    bad = _notebook(tmp_path / "02_ruim.ipynb", "raise ValueError('célula quebrada')")
    out = tmp_path / "out"
    cmd = [sys.executable, "tools/run_notebooks.py", "--scale", "smoke", "--out", str(out)]
    done = system.run([*cmd, str(ok), str(bad)], timeout=150, cwd=ROOT, check=False)
    lines = done.stdout.splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert lines[0].startswith("01_ok.ipynb") and " ok em " in lines[0], lines
    assert "FALHOU" in lines[1] and "célula quebrada" in lines[1], lines
    executed = nbformat.read(out / "01_ok.ipynb", as_version=4)
    assert executed.cells[1].outputs[0]["data"]["text/plain"] == "'smoke'"

    done = system.run([*cmd, str(ok)], timeout=150, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
