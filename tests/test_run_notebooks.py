"""O executor de notebooks (``tools/run_notebooks.py``, o ``make notebooks``): quais notebooks
roda, uma linha por notebook com o tempo, e o código de saída."""

import sys

import nbformat
import pytest
from nbclient.exceptions import CellExecutionError
from nbformat.v4 import new_code_cell, new_notebook

from labutils import system
from tools.run_notebooks import ROOT, execute, lesson_notebooks


def test_make_notebooks_runs_the_lessons_in_order_and_the_solution_but_not_the_student_copy(
    tmp_path,
):
    for name in (
        "01_b.ipynb",
        "00_a.ipynb",
        "07_c_aluno.ipynb",
        "07_c_solucao.ipynb",
        "notas.ipynb",
    ):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in lesson_notebooks(tmp_path)] == [
        "00_a.ipynb", "01_b.ipynb", "07_c_solucao.ipynb"
    ]  # fmt: skip


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


@pytest.mark.timeout(120)
def test_each_cell_s_time_comes_from_the_kernel_s_own_marks(tmp_path):
    nb = nbformat.read(_notebook(tmp_path / "a.ipynb", "import time", "time.sleep(0.5)", "1/0"), 4)
    times = []
    with pytest.raises(CellExecutionError):
        execute(nb, cwd=tmp_path, timeout=60, times=times)
    assert [t["index"] for t in times] == [0, 1, 2]  # a que falhou também
    assert 0.5 <= times[1]["seconds"] < 5 and times[0]["seconds"] < 0.5
