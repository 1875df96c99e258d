"""``tools/grade.py``: a correção de uma turma da lição 07.

Duas correções pela linha de comando, escala ``smoke``, divididas pelos testes deste módulo:

- a de uma pasta com o notebook do aluno intacto e um arquivo que não é JSON, como o instrutor a
  roda (sem ``--all-cells``: os exemplos e as seções opcionais não rodam);
- a de uma cópia da solução com UM erro conhecido (``from_logits=True`` depois da softmax, que só
  a verificação do TODO 2 pega; e a célula dessa verificação apagada, o que não adianta), com
  ``--all-cells``: roda inteira, exemplos e seções opcionais incluídos. É a execução da solução no
  ``make test`` (o nbval não a roda de novo, ``notebooks/conftest.py``): a cópia só difere da
  solução nessas duas células, e as outras verificações passam nela.

Os notebooks que travam ou derrubam o kernel são notebooks mínimos, corrigidos à parte com
limites curtos.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import grade

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
STUDENT = ROOT / "notebooks" / "07_exercicio_multiworker_aluno.ipynb"
CHECKS = grade.reference_checks()
LABELS = [tag[len(grade.CHECK_TAG) :] for tag in CHECKS]
GRADE_TIMEOUT_S = 900


def _with_mistake(target: Path) -> None:
    nb = nbformat.read(SOLUTION, as_version=4)
    cell = next(c for c in nb.cells if "def build_model(" in c.source)
    assert "from_logits=False" in cell.source
    cell.source = cell.source.replace("from_logits=False", "from_logits=True")
    check = next(c for c in nb.cells if "check-2-modelo" in c.metadata.get("tags", []))
    check.source = "pass  # a verificação apagada não vale: a correção usa a da solução"
    nbformat.write(nb, target)


def _grade_cli(folder: Path, *extra: str) -> dict[str, dict[str, str]]:
    """Corrige ``folder`` pela linha de comando; devolve as linhas do ``grades.csv`` por arquivo."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "grade.py"), str(folder), "--scale", "smoke"]
        + ["--timeout", "600", *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=GRADE_TIMEOUT_S,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    with open(folder / "grades.csv", encoding="utf-8") as f:
        return {row["arquivo"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A pasta das entregas corrigida pela linha de comando, como o instrutor faz."""
    folder = tmp_path_factory.mktemp("entregas")
    shutil.copy(STUDENT, folder / "bruno_intacto.ipynb")
    (folder / "davi_quebrado.ipynb").write_text('{"cells": [', encoding="utf-8")
    return folder, _grade_cli(folder)


@pytest.fixture(scope="module")
def mistake_graded(tmp_path_factory):
    """A cópia da solução com um erro, corrigida com ``--all-cells``: roda inteira."""
    folder = tmp_path_factory.mktemp("um_erro")
    _with_mistake(folder / "carla_um_erro.ipynb")
    return folder, _grade_cli(folder, "--all-cells")


def _error_cells(nb) -> list:
    """As células que terminaram com um erro."""
    return [c for c in nb.cells if any(o.output_type == "error" for o in c.get("outputs", []))]


def _errors(nb) -> list[str]:
    return [
        f"{o.ename}: {o.evalue}"
        for c in nb.cells
        for o in c.get("outputs", [])
        if o.output_type == "error"
    ]


@pytest.mark.slow
@pytest.mark.timeout(GRADE_TIMEOUT_S + 60)
def test_one_row_per_file_with_one_column_per_check_and_a_total(graded):
    folder, rows = graded
    assert sorted(rows) == sorted(p.name for p in folder.glob("*.ipynb"))
    header = next(csv.reader(open(folder / "grades.csv", encoding="utf-8")))
    assert header == ["arquivo", *LABELS, "total", "motivo"]
    assert len(LABELS) == 6, LABELS
    report = (folder / "grades.md").read_text(encoding="utf-8")
    assert all(name in report for name in rows) and "| total |" in report


@pytest.mark.slow
@pytest.mark.timeout(GRADE_TIMEOUT_S + 60)
def test_the_untouched_student_notebook_scores_none_and_stops_kindly(graded):
    folder, rows = graded
    row = rows["bruno_intacto.ipynb"]
    assert [row[label] for label in LABELS] == [grade.NOT_DONE] * len(LABELS), row
    assert row["total"] == f"0/{len(LABELS)}" and not row["motivo"]
    executed = nbformat.read(folder / grade.OUTPUT_DIR / "bruno_intacto.ipynb", as_version=4)
    # sem --all-cells, os exemplos (antes do TODO 1) e as seções opcionais não rodam: não valem nota
    skipped = [
        c
        for c in executed.cells
        if c.cell_type == "code" and grade.SKIP_TAGS & set(c.metadata.get("tags", []))
    ]
    assert {"exemplo", "opcional"} <= {t for c in skipped for t in c.metadata.tags}
    assert not any(c.execution_count or c.outputs for c in skipped)
    # a 1ª célula com erro é a verificação do TODO 1, sem traceback
    failed = _error_cells(executed)
    first = next(o for o in failed[0].outputs if o.output_type == "error")
    assert "check-1-dados" in failed[0].metadata.get("tags", []), failed[0].source
    assert first.ename == "TodoNotDone" and first.evalue.startswith("TODO 1 ainda não terminado")
    shown = "\n".join(first.traceback)
    assert "Traceback" not in shown and len(first.traceback) <= 3, shown


@pytest.mark.slow
@pytest.mark.timeout(GRADE_TIMEOUT_S + 60)
def test_a_copy_with_one_known_mistake_fails_exactly_that_check_and_runs_whole(mistake_graded):
    folder, rows = mistake_graded
    assert sorted(rows) == ["carla_um_erro.ipynb"]
    row = rows["carla_um_erro.ipynb"]
    failed = {label: row[label] for label in LABELS if row[label] != grade.PASSED}
    assert list(failed) == ["2-modelo"], row
    assert failed["2-modelo"].startswith("falhou:") and "from_logits=True" in failed["2-modelo"]
    assert row["total"] == f"{len(LABELS) - 1}/{len(LABELS)}" and not row["motivo"]
    executed = nbformat.read(folder / grade.OUTPUT_DIR / "carla_um_erro.ipynb", as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code), "com --all-cells, toda célula roda"
    assert {"exemplo", "opcional"} <= {t for c in code for t in c.metadata.get("tags", [])}
    tags = [c.metadata.get("tags") for c in _error_cells(executed)]
    assert tags == [["check-2-modelo"]], _errors(executed)


@pytest.mark.slow
@pytest.mark.timeout(GRADE_TIMEOUT_S + 60)
def test_a_file_that_is_not_json_gets_its_row_with_the_reason(graded):
    row = graded[1]["davi_quebrado.ipynb"]
    assert row["motivo"].startswith("notebook inválido"), row
    assert row["total"] == f"0/{len(LABELS)}"


def _tiny(folder: Path, name: str, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.cells.append(nbformat.v4.new_code_cell("1", metadata={"tags": ["check-1-dados"]}))
    path = folder / name
    nbformat.write(nb, path)
    return path


SHOW_DIRS = "import os\nprint(os.environ['LABUTILS_RESULTS_DIR'], os.getpid())"


@pytest.mark.timeout(120)
def test_a_notebook_that_hangs_or_kills_its_kernel_gets_its_row_and_nothing_is_shared(tmp_path):
    """Um notebook que trava é cortado no limite; um que derruba o kernel ganha a sua linha; cada
    um roda num kernel e numa pasta de resultados próprios, apagada no fim."""
    checks = {"check-1-dados": "print('ok')"}
    out = tmp_path / grade.OUTPUT_DIR
    hang = _tiny(tmp_path, "trava.ipynb", SHOW_DIRS, "import time\ntime.sleep(600)")
    crash = _tiny(tmp_path, "cai.ipynb", SHOW_DIRS, "os._exit(1)")
    rows = {
        p.name: grade.grade_notebook(p, checks, scale="smoke", timeout_s=10, out_dir=out)
        for p in (hang, crash)
    }
    missing = _tiny(tmp_path, "sem_verificacao.ipynb", "x = 1")
    nb = nbformat.read(missing, as_version=4)
    nb.cells[-1].metadata["tags"] = []  # a célula de verificação perdeu a etiqueta
    nbformat.write(nb, missing)
    row = grade.grade_notebook(missing, checks, scale="smoke", timeout_s=60, out_dir=out)
    assert row["check-1-dados"] == "falhou: célula de verificação não encontrada", row
    assert rows["trava.ipynb"]["motivo"].startswith("passou do limite de 10 s"), rows
    assert rows["cai.ipynb"]["motivo"].startswith("o kernel morreu"), rows
    assert all(row["check-1-dados"] == grade.NOT_RUN for row in rows.values())
    seen = []
    for name in rows:
        cell = nbformat.read(out / name, as_version=4).cells[0]
        results_dir, pid = cell.outputs[0]["text"].split()
        seen.append((results_dir, pid))
        assert not Path(results_dir).exists(), "a pasta de resultados ficou para trás"
    assert seen[0][0] != seen[1][0] and seen[0][1] != seen[1][1], seen
    grade.write_reports(tmp_path, rows, checks)
    table = list(csv.DictReader(open(tmp_path / "grades.csv", encoding="utf-8")))
    assert [r["total"] for r in table] == ["0/1", "0/1"]


def test_cli_refuses_a_folder_without_notebooks(tmp_path, capsys):
    assert grade.main([str(tmp_path)]) == 2
    assert "Nenhum .ipynb" in capsys.readouterr().err
    assert grade.main([str(tmp_path / "nao-existe")]) == 2


def test_the_checks_come_from_the_solution_in_notebook_order():
    assert LABELS == [
        "1-dados",
        "2-modelo",
        "3-funcao-de-treino",
        "4-trainer",
        "5-treino",
        "6-acuracia",
    ]
    assert all(source.startswith("checks.check_") for source in CHECKS.values())
    assert json.dumps(CHECKS)  # texto simples, gravável
    assert os.path.basename(grade.SOLUTION) == SOLUTION.name
