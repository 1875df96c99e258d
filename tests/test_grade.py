"""``tools/grade.py``: a correção de uma turma da lição 07.

Duas correções pela linha de comando (escala smoke): a das tentativas de calar a correção no
notebook do aluno, como o instrutor a roda, e a de uma cópia da solução com um erro no TODO 5,
com ``--all-cells`` (a execução da solução no ``make test``: o nbval não a roda de novo).
"""

from __future__ import annotations

import csv
import os
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


#: a resposta do TODO 5 com um erro: a perda no lugar da acurácia (evaluate devolve [perda, acc])
TODO5_MISTAKE = """
cifar = load_cifar100()
_, test_ds = get_data(cifar.train, cifar.test, global_batch=size.batch_per_replica)
with result.checkpoint.as_directory() as checkpoint_dir:
    model = tf.keras.models.load_model(os.path.join(checkpoint_dir, "model.keras"))
test_accuracy, test_loss = model.evaluate(test_ds, verbose=0)
"""

#: troca toda verificação (e o que a correção lê do kernel) por nada
NOOP_CHECKS = """
from labutils.multiworker import checks
for _name in dir(checks):
    if _name.startswith(("check_", "judge_", "run_")):
        setattr(checks, _name, lambda *a, **k: print("✅ tudo certo"))
"""
#: uma resposta que, ao ser chamada, troca o código das verificações seguintes
BODY_PATCH = """
def worker_datasets(train, val, *, global_batch, num_workers, worker_index):
    from labutils.multiworker import checks
    for check in (checks.check_build_model, checks.check_training_function):
        check.__code__ = (lambda *a, **k: None).__code__
    return checks.todo(1, "fatie")
"""
#: definições cuja criação roda código (o valor padrão, o decorador, o corpo da classe)
DEF_TIME_PATCH = """
def build_model(strategy, num_classes, _=exec(NOOP)):
    return checks.todo(2, "o modelo")


@(lambda f: exec(NOOP) or f)
def resume(checkpoint, strategy):
    return checks.todo(3, "a retomada")


class Sneaky:
    exec(NOOP)
"""
CLASS_OK = (
    "class Ok(object):\n    'doc'\n    K = 1\n\n    def m(self):\n        return exec('no corpo')"
)


def _attacks(target: Path) -> None:
    """O notebook do aluno intacto com todas as formas de calar a correção."""
    nb = nbformat.read(STUDENT, as_version=4)
    nb.cells.insert(3, nbformat.v4.new_code_cell(NOOP_CHECKS))  # uma célula acrescentada
    for cell in nb.cells:
        if "def worker_datasets(" in cell.source:
            cell.source = BODY_PATCH + NOOP_CHECKS  # a resposta que também troca as verificações
        elif "def build_model(" in cell.source:
            cell.source = f"NOOP = {NOOP_CHECKS!r}\n" + DEF_TIME_PATCH
        elif any(t.startswith(grade.CHECK_TAG) for t in cell.metadata.get("tags", [])):
            cell.source = 'print("✅ passou")'  # a verificação editada
    nbformat.write(nb, target)


def _with_mistake(target: Path) -> None:
    nb = nbformat.read(SOLUTION, as_version=4)
    cell = next(c for c in nb.cells if "test_accuracy =" in c.source and "# BEGIN" in c.source)
    cell.source = TODO5_MISTAKE.strip()
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
    folder = tmp_path_factory.mktemp("entregas")
    _attacks(folder / "bruno_ataques.ipynb")
    (folder / "davi_quebrado.ipynb").write_text('{"cells": [', encoding="utf-8")
    return folder, _grade_cli(folder)


@pytest.fixture(scope="module")
def mistake_graded(tmp_path_factory):
    """A cópia da solução com um erro no TODO 5, corrigida com ``--all-cells``: roda inteira."""
    folder = tmp_path_factory.mktemp("um_erro")
    _with_mistake(folder / "carla_um_erro.ipynb")
    return folder, _grade_cli(folder, "--all-cells")


def _error_cells(nb) -> list:
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
    broken = rows["davi_quebrado.ipynb"]  # não é JSON: a sua linha, com o motivo
    assert broken["motivo"].startswith("notebook inválido"), broken
    assert broken["total"] == f"0/{len(LABELS)}", broken
    report = (folder / "grades.md").read_text(encoding="utf-8")
    assert all(name in report for name in rows) and "| total |" in report


@pytest.mark.slow
@pytest.mark.timeout(GRADE_TIMEOUT_S + 60)
def test_no_student_cell_can_silence_the_grading(graded):
    """O notebook do aluno intacto mais todas as formas de trocar as verificações: nenhuma passa
    (com o grader antigo, só a célula acrescentada já dava 6/6)."""
    folder, rows = graded
    row = rows["bruno_ataques.ipynb"]
    assert not [label for label in LABELS if row[label] == grade.PASSED], row
    assert row["total"] == f"0/{len(LABELS)}", row
    # a resposta do TODO 1 roda nos TODOs 1 e 3 e troca o código das outras: não as alcança
    assert row["1-dados"] == row["3-funcao-de-treino"] == grade.NOT_DONE, row
    assert row["2-modelo"].startswith("falhou: Não encontrei a função build_model"), row
    executed = nbformat.read(folder / grade.OUTPUT_DIR / "bruno_ataques.ipynb", as_version=4)
    checks_shown = [c for c in executed.cells if set(c.metadata.get("tags", [])) & set(CHECKS)]
    assert [c.source for c in checks_shown] == list(CHECKS.values())  # as da solução, de volta
    assert all(c.outputs[0]["text"].startswith("[correção] ") for c in checks_shown)
    # sem --all-cells, os exemplos e as seções opcionais não rodam: não valem nota
    skipped = [
        c
        for c in executed.cells
        if c.cell_type == "code" and grade.SKIP_TAGS & set(c.metadata.get("tags", []))
    ]
    assert {"exemplo", "opcional"} <= {t for c in skipped for t in c.metadata.tags}
    assert not any(c.execution_count or c.outputs for c in skipped)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_untouched_student_notebook_stops_at_todo_1_kindly(tmp_path):
    """Rodado como o aluno o roda, o notebook intacto para na verificação do TODO 1, com a
    mensagem amigável e sem traceback (o exemplo da seção 3 fica de fora: não muda nada aqui)."""
    from nbclient.exceptions import CellExecutionError

    from tools.run_notebooks import execute

    nb = nbformat.read(STUDENT, as_version=4)
    env = {**os.environ, "LABUTILS_SCALE": "smoke", "TF_CPP_MIN_LOG_LEVEL": "2"}
    env["LABUTILS_RESULTS_DIR"] = str(tmp_path / "results")
    env.pop("RAY_ADDRESS", None)
    # sem ela, o kernel mostra nas células o que o C++ escreve no stderr, como no Jupyter (o
    # ipykernel não o captura quando vê essa variável do pytest)
    env.pop("PYTEST_CURRENT_TEST", None)
    with pytest.raises(CellExecutionError):
        execute(nb, cwd=tmp_path, env=env, timeout=240, skip={"exemplo"})
    failed = _error_cells(nb)
    assert len(failed) == 1 and "check-1-dados" in failed[0].metadata.get("tags", []), _errors(nb)
    first = next(o for o in failed[0].outputs if o.output_type == "error")
    assert first.ename == "TodoNotDone" and first.evalue.startswith("TODO 1 ainda não terminado")
    shown = "\n".join(first.traceback)
    assert "Traceback" not in shown and len(first.traceback) <= 3, shown
    # sem GPU, o TF avisa no stderr que o cuInit falhou (e segue na CPU): em vermelho, ao lado
    # das verificações, pareceria um erro
    printed = [o.get("text", "") for c in nb.cells for o in c.get("outputs", [])]
    assert not [text for text in printed if "cuInit" in text], printed


@pytest.mark.slow
@pytest.mark.timeout(GRADE_TIMEOUT_S + 60)
def test_a_copy_with_one_known_mistake_fails_exactly_that_check_and_runs_whole(mistake_graded):
    folder, rows = mistake_graded
    assert sorted(rows) == ["carla_um_erro.ipynb"]
    row = rows["carla_um_erro.ipynb"]
    failed = {label: row[label] for label in LABELS if row[label] != grade.PASSED}
    assert list(failed) == ["5-acuracia"], row
    assert "a perda no lugar dela" in failed["5-acuracia"], failed
    assert row["total"] == f"{len(LABELS) - 1}/{len(LABELS)}" and not row["motivo"]
    executed = nbformat.read(folder / grade.OUTPUT_DIR / "carla_um_erro.ipynb", as_version=4)
    code = [c for c in executed.cells if c.cell_type == "code"]
    ran = [c for c in code if not set(c.metadata.get("tags", [])) & set(CHECKS)]
    assert all(c.execution_count for c in ran), "com --all-cells, toda célula roda"
    assert {"exemplo", "opcional"} <= {t for c in code for t in c.metadata.get("tags", [])}
    assert not _error_cells(executed), _errors(executed)


def test_only_imports_definitions_and_literals_reach_the_judge():
    """O que entra no processo do julgamento: de cada célula, só os ``import``, as definições
    cuja criação não roda código e as constantes literais."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import os\nfrom json import dumps\nN = 3\nNAMES = ('a', 'b')"),
        nbformat.v4.new_code_cell(BODY_PATCH + NOOP_CHECKS),
        nbformat.v4.new_code_cell(f"NOOP = {NOOP_CHECKS!r}\n" + DEF_TIME_PATCH),
        nbformat.v4.new_code_cell(
            "def f(x: exec('1') = 1, *, y=os.sep) -> exec('2'):\n    return x"
        ),
        nbformat.v4.new_code_cell("%%time\nexec('mágica')"),
        nbformat.v4.new_code_cell("checks.check_x(1)", metadata={"tags": ["check-1-dados"]}),
        nbformat.v4.new_code_cell(CLASS_OK),
    ]
    source = grade.answers_source(nb)
    ns: dict = {}
    exec(compile(source, "<respostas>", "exec"), ns)
    assert {"os", "dumps", "N", "NAMES", "worker_datasets", "NOOP", "f", "Ok"} <= set(ns)
    assert not {"build_model", "resume", "Sneaky", "_name"} & set(ns)
    assert "mágica" not in source and "check_x" not in source
    assert ns["f"].__annotations__ == {} and ns["f"](2) == 2


def _tiny(folder: Path, name: str, *sources: str, tags=("check-1-dados",)) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.cells.append(nbformat.v4.new_code_cell("1", metadata={"tags": list(tags)}))
    path = folder / name
    nbformat.write(nb, path)
    return path


def test_an_answer_missing_from_the_notebook_is_judged_without_a_new_process(tmp_path, monkeypatch):
    """Sem ``def worker_datasets`` (nem import ou constante com o nome) nas respostas, o veredito
    sai sem o processo do julgamento (que importaria o TensorFlow só para não achá-la)."""
    found = ["def worker_datasets(): pass", "class worker_datasets: pass",
             "from x import f as worker_datasets", "import worker_datasets.sub",
             "from x import *", "worker_datasets = 1"]  # fmt: skip
    assert all(grade.defines(source, "worker_datasets") for source in found)
    for source in ("", "def build_model(): pass", "import os\nworker = 1"):
        assert not grade.defines(source, "worker_datasets"), source

    def no_process(*args):
        raise AssertionError("abriu um processo de julgamento")

    monkeypatch.setattr(grade, "judge", no_process)
    blank = _tiny(tmp_path, "em_branco.ipynb", "import os\nN = 3")
    row = grade.grade_notebook(
        blank, {"check-1-dados": "1"}, scale="smoke", timeout_s=60, out_dir=tmp_path / "out"
    )
    assert row["check-1-dados"] == "falhou: " + grade.missing("1"), row


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
    missing = _tiny(tmp_path, "sem_verificacao.ipynb", "x = 1", tags=())  # perdeu a etiqueta
    row = grade.grade_notebook(missing, checks, scale="smoke", timeout_s=60, out_dir=out)
    # a nota não depende da célula de verificação (é a da solução), mas a falta dela é anotada
    assert "check-1-dados apagada" in row["motivo"], row
    assert row["check-1-dados"].startswith("falhou: Não encontrei a função worker_datasets"), row
    assert rows["trava.ipynb"]["motivo"].startswith("passou do limite de 10 s"), rows
    assert rows["cai.ipynb"]["motivo"].startswith("o kernel morreu"), rows
    # as respostas são julgadas fora do kernel, mesmo quando ele trava ou morre
    assert all(row["check-1-dados"].startswith("falhou: Não encontrei") for row in rows.values())
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
