"""Exercício da lição 07: o gerador do notebook do aluno (``tools/make_student_notebook.py``) e as
mensagens das autoverificações (``labutils.multiworker.checks``; as respostas certas e erradas
estão em ``tests/test_exercise_mistakes.py``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from labutils.multiworker import checks
from tools import make_student_notebook as exercise

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
STUDENT = ROOT / "notebooks" / "07_exercicio_multiworker_aluno.ipynb"


@pytest.mark.parametrize(
    ("source", "student"),
    [
        ("def f(x):\n    y = 1\n    # BEGIN SOLUTION\n    # STUB: return checks.todo(1, 'faça')\n"
         "    return x + y\n    # END SOLUTION\nprint(f)",
         "def f(x):\n    y = 1\n    return checks.todo(1, 'faça')\nprint(f)"),
        ("a\n<!-- BEGIN SOLUTION -->\n<!-- STUB: # Aluno -->\n<!-- STUB: -->\n# Solução\n"
         "<!-- END SOLUTION -->\nb",
         "a\n# Aluno\n\nb"),
    ],
    ids=["com o recuo do marcador", "várias linhas STUB, em markdown"],
)  # fmt: skip
def test_a_region_becomes_its_stub(source, student):
    assert exercise.strip_solutions(source) == student


@pytest.mark.parametrize(
    "source, problem",
    [
        ("# BEGIN SOLUTION\n# STUB: x = ...\nx = 1", "sem END"),
        ("x = 1\n# END SOLUTION", "fora de uma região"),
        ("# BEGIN SOLUTION\nx = 1\n# END SOLUTION", "sem nenhuma linha STUB"),
        ("# BEGIN SOLUTION\n# BEGIN SOLUTION\n# END SOLUTION", "aberta duas vezes"),
    ],
)
def test_malformed_markers_are_rejected_with_a_clear_message(source, problem):
    with pytest.raises(exercise.ExerciseFormatError, match=problem):
        exercise.strip_solutions(source)


def test_generate_drops_solution_only_cells_and_outputs():
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("só do instrutor", metadata={"tags": ["solution-only"]}),
        nbformat.v4.new_code_cell("# BEGIN SOLUTION\n# STUB: x = ...\nx = 42\n# END SOLUTION"),
    ]
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", text="42")]
    nb.cells[1].execution_count = 3
    student = exercise.generate(nb)
    assert [c.source for c in student.cells] == ["x = ..."]
    assert student.cells[0].outputs == [] and student.cells[0].execution_count is None
    assert nb.cells[1].source.endswith("# END SOLUTION")  # a solução não foi alterada


def test_committed_student_notebook_is_the_generated_one():
    assert STUDENT.read_text(encoding="utf-8") == exercise.render(SOLUTION), (
        "O notebook do aluno está desatualizado: rode "
        "`python tools/make_student_notebook.py notebooks/07_exercicio_multiworker_solucao.ipynb`."
    )


def test_cli_check_detects_a_stale_student_notebook(tmp_path, capsys):
    sol = tmp_path / "07_x_solucao.ipynb"
    shutil.copy(SOLUTION, sol)
    assert exercise.main([str(sol), "--check"]) == 1  # o do aluno ainda não existe
    cli = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_student_notebook.py"), str(sol)],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 0 and "gravado" in cli.stdout
    assert exercise.main([str(sol), "--check"]) == 0
    nb = nbformat.read(sol, as_version=4)
    nb.cells[0].source += "\nmudou"
    nbformat.write(nb, sol)
    capsys.readouterr()
    assert exercise.main([str(sol), "--check"]) == 1
    assert "desatualizado" in capsys.readouterr().err
    with pytest.raises(exercise.ExerciseFormatError, match="_solucao"):
        exercise.student_path(tmp_path / "07_x.ipynb")


def test_the_student_notebook_leaves_todos_4_and_5_to_the_student():
    """Rodadas, as células dos TODOs 4 e 5 do aluno param nas suas verificações."""
    cifar = SimpleNamespace(
        train=None, test=None, num_test=0, num_classes=100, is_mock=True, source=""
    )
    ns = {
        "checks": checks,
        "plan": None,
        "config": {},
        "size": SimpleNamespace(batch_per_replica=8),
    }
    ns.update(load_cifar100=lambda: cifar, get_data=lambda *args, **kwargs: (None, None))
    cells = [c for c in nbformat.read(STUDENT, as_version=4).cells if c.cell_type == "code"]
    for number in (4, 5):
        check = next(
            i
            for i, cell in enumerate(cells)
            if any(t.startswith(f"check-{number}-") for t in cell.metadata.get("tags", []))
        )
        exercise.run_cell(cells[check - 1].source, ns)  # a resposta vem logo antes da verificação
        with pytest.raises(checks.TodoNotDone, match=f"TODO {number}"):
            exercise.run_cell(cells[check].source, ns)


def test_todo_is_friendly():
    with pytest.raises(checks.TodoNotDone) as info:
        checks.todo(3, "crie a estratégia")
    err = info.value
    assert isinstance(err, NotImplementedError) and str(err).startswith("TODO 3 ainda não")
    assert err._render_traceback_() == [f"{err.icon} {err}"]  # no Jupyter, sem traceback
