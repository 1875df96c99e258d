"""Exercício da lição 07: o gerador do notebook do aluno (``tools/make_student_notebook.py``) e as
autoverificações (``labutils.multiworker.checks``)."""

from __future__ import annotations

import pickle
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


# ---------------------------------------------------------------- gerador


def test_region_becomes_its_stub_with_the_marker_indentation():
    source = (
        "def f(x):\n"
        "    y = 1\n"
        "    # BEGIN SOLUTION\n"
        "    # STUB: return checks.todo(1, 'faça')\n"
        "    return x + y\n"
        "    # END SOLUTION\n"
        "print(f)"
    )
    assert exercise.strip_solutions(source) == (
        "def f(x):\n    y = 1\n    return checks.todo(1, 'faça')\nprint(f)"
    )


def test_several_stub_lines_and_markdown_regions():
    source = "a\n<!-- BEGIN SOLUTION -->\n<!-- STUB: # Aluno -->\n<!-- STUB: -->\n# Solução\n<!-- END SOLUTION -->\nb"
    assert exercise.strip_solutions(source) == "a\n# Aluno\n\nb"


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


def _code(nb):
    """O código do notebook, sem o exemplo completo da seção 3 (que mostra as peças de propósito)."""
    return "\n".join(
        c.source
        for c in nb.cells
        if c.cell_type == "code" and "exemplo" not in c.metadata.get("tags", [])
    )


def test_student_notebook_has_todos_and_no_solution():
    student = nbformat.read(STUDENT, as_version=4)
    code = _code(student)
    for secret in (
        "MultiWorkerMirroredStrategy()",
        "ScalingConfig(",
        "ray.train.report(",
        ".shard(num_workers, worker_index)",
        "from_logits=False)",
        "TensorflowTrainer(",
        "trainer.fit()",
        "BEGIN SOLUTION",
        "STUB:",
    ):
        assert secret not in code, secret
    for number in range(1, 7):
        assert f"TODO {number}" in code or f"todo({number}," in code, number
    assert (
        "SOLUÇÃO" not in student.cells[0].source
        and "SOLUÇÃO" in nbformat.read(SOLUTION, 4).cells[0].source
    )


def test_student_notebook_is_lint_clean():
    ruff = ROOT / ".venv" / "bin" / "ruff"
    if not ruff.exists():
        pytest.skip("ruff não está no .venv")
    for args in (["check"], ["format", "--check"]):
        run = subprocess.run(
            [str(ruff), *args, str(STUDENT)], capture_output=True, text=True, cwd=ROOT
        )
        assert run.returncode == 0, run.stdout + run.stderr


# ---------------------------------------------------------------- autoverificações


def test_todo_is_friendly_and_survives_pickle():
    with pytest.raises(checks.TodoNotDone) as info:
        checks.todo(3, "crie a estratégia")
    err = info.value
    assert isinstance(err, NotImplementedError)
    assert str(err) == "TODO 3 ainda não terminado: crie a estratégia."
    lines = err._render_traceback_()
    assert len(lines) == 1 and "ainda não terminado" in lines[0] and "Traceback" not in lines[0]
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is checks.TodoNotDone and str(again) == str(err)


def test_check_scaling_config():
    from ray.train import ScalingConfig

    from labutils.multiworker import WorkerPlan

    plan = WorkerPlan(2, False, {"CPU": 1.0})
    good = ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"CPU": 1.0})
    checks.check_scaling_config(good, plan)
    with pytest.raises(checks.TodoNotDone):
        checks.check_scaling_config(..., plan)
    with pytest.raises(checks.CheckFailed, match="num_workers"):
        checks.check_scaling_config(
            ScalingConfig(num_workers=3, resources_per_worker={"CPU": 1.0}), plan
        )
    with pytest.raises(checks.CheckFailed, match="resources_per_worker"):
        checks.check_scaling_config(ScalingConfig(num_workers=2), plan)
    with pytest.raises(checks.CheckFailed, match="ScalingConfig"):
        checks.check_scaling_config({"num_workers": 2}, plan)


def _workers(n=2, strategy="MultiWorkerMirroredStrategy", replicas=2, batch=128):
    return [
        {"rank": r, "strategy": strategy, "replicas": replicas, "global_batch": batch}
        for r in range(n)
    ]


def test_check_result():
    result = SimpleNamespace(checkpoint="ckpt", metrics={"loss": 4.5, "accuracy": 0.02})
    checks.check_result(result, _workers(), num_workers=2, batch_per_worker=64)
    cases = [
        (SimpleNamespace(checkpoint=None, metrics=None), _workers(), "checkpoint"),
        (SimpleNamespace(checkpoint="c", metrics=None), _workers(), "métricas"),
        (result, _workers(n=1), "1 worker"),
        (result, _workers(strategy="MirroredStrategy"), "MirroredStrategy"),
        (result, _workers(strategy="padrão (fora de strategy.scope())"), "FORA de strategy"),
        (result, _workers(replicas=1), "réplica"),
        (result, _workers(batch=64), "lote global 64"),
    ]
    for res, workers, match in cases:
        with pytest.raises(checks.CheckFailed, match=match):
            checks.check_result(res, workers, num_workers=2, batch_per_worker=64)


def test_check_accuracy(capsys):
    checks.check_accuracy(0.2)
    with pytest.raises(checks.CheckFailed, match="acaso"):
        checks.check_accuracy(0.005)
    with pytest.raises(checks.TodoNotDone):
        checks.check_accuracy(...)
    checks.check_accuracy(0.005, is_mock=True)  # dados aleatórios: só informa
    assert "SIMULADOS" in capsys.readouterr().out


# O notebook do aluno intacto, rodando do início ao fim (cada verificação diz "ainda não
# terminado", sem traceback), é conferido em tests/test_grade.py, na mesma correção que dá as
# notas: o mesmo kernel serve aos dois.
