"""Corrige uma turma: roda cada notebook entregue da lição 07 e julga cada TODO com as
verificações de referência, fora do kernel do aluno::

    python tools/grade.py PASTA_DAS_ENTREGAS [--scale smoke|full] [--timeout S]   # make grade

1. **O treino**: o notebook roda num kernel e num Ray novos (sem ``RAY_ADDRESS``), numa pasta de
   trabalho e de checkpoints (``LABUTILS_TRAIN_STORAGE``) só da correção, com limite de tempo; sem
   as células de verificação (o aluno pode tê-las editado), nem, sem ``--all-cells``, os exemplos
   e as seções opcionais. Uma célula da correção, no fim, anota o que o treino devolveu.
2. **Os TODOs 1–3**, cada um num processo novo (:func:`judge`), enquanto o treino roda (eles
   julgam só as respostas): as verificações de referência são guardadas ANTES de qualquer código
   do aluno, e das células dele entram só os ``import``, as definições e as constantes literais
   (:func:`answers_source`). Uma resposta que nem está lá é julgada sem processo (:func:`defines`).
3. **Os TODOs 4 e 5**, num processo sem código do aluno: os checkpoints que ficaram na pasta da
   correção e o ``model.keras`` do último, avaliado aqui no teste.

Na pasta ficam ``grades.csv`` e ``grades.md`` (uma linha por arquivo, uma coluna por
verificação) e, em ``_correcao/``, a cópia executada de cada notebook, com o veredito de
referência em cada célula de verificação. O que a correção não impede está em
``docs/instrutor/licao_07.md``.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labutils import system  # noqa: E402
from tools.run_notebooks import execute, tags  # noqa: E402

SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
CHECK_TAG = "check-"
SKIP_TAGS = {"exemplo", "opcional"}
PASSED, NOT_DONE, NOT_RUN = "passou", "não terminado", "não avaliado"
OUTPUT_DIR = "_correcao"
#: limite (s) de cada processo de julgamento (o do TODO 3 roda 2 × 2 processos de treino)
JUDGE_TIMEOUT_S = 600
#: o que cada TODO julga fora do kernel: o nome definido pelo aluno que a verificação recebe
ANSWER_NAMES = {"1": "worker_datasets", "2": "build_model", "3": "train_loop_per_worker"}
#: a verificação do trainer ANTES do fit (TODO 4): tem o seu veredito, separado do do treino
TRAINER_LABEL = "4-configuracao"
#: a célula que a correção acrescenta ao fim do notebook: anota o que o treino devolveu
FACTS_CELL = """
import json as _json
from labutils.multiworker import checks as _checks
_facts = {}
try:
    _facts["trainer"] = _checks.trainer_facts(trainer)
except BaseException as _err:
    _facts["trainer_error"] = [type(_err).__name__, str(_err)]
try:
    _facts["run"] = _checks.run_facts(trainer, result)
    _facts["plan_use_gpu"] = bool(plan.use_gpu)
except BaseException as _err:
    _facts["run_error"] = [type(_err).__name__, str(_err)]
try:  # sem test_accuracy (ou ainda ...): o TODO 5 não foi feito
    _facts["accuracy"] = None if test_accuracy is ... else float(test_accuracy)
except BaseException:
    pass
with open(%r, "w", encoding="utf-8") as _f:
    _json.dump(_facts, _f)
"""


def reference_checks() -> dict[str, str]:
    """``{etiqueta: código}`` das células de verificação da solução, na ordem do notebook."""
    import nbformat

    cells = nbformat.read(SOLUTION, as_version=4).cells
    return {tag: cell.source for cell in cells for tag in tags(cell) if tag.startswith(CHECK_TAG)}


def _kernel_env(scale: str, results: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "TF_CONFIG")}
    env.update(
        LABUTILS_SCALE=scale,
        LABUTILS_RESULTS_DIR=str(results),
        LABUTILS_TRAIN_STORAGE=str(results / "ray_train"),
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    return env


def _dotted(node: ast.AST) -> bool:
    """``nome`` ou ``a.b.c``: avaliá-lo só lê nomes."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _safe_statement(stmt: ast.stmt, in_class: bool = False) -> bool:
    """Uma linha de nível superior cuja execução não chama nada: ``import``, constante literal,
    definição com decoradores e valores padrão só nomes ou literais (o corpo de uma função só
    roda quando a verificação a chama; as anotações são apagadas) ou classe feita dessas."""
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return not in_class
    if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
        args = stmt.args
        for arg in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]:
            if arg is not None:
                arg.annotation = None
        stmt.returns = None
        defaults = [*args.defaults, *(d for d in args.kw_defaults if d is not None)]
        return all(map(_dotted, stmt.decorator_list)) and all(
            _literal(d) or _dotted(d) for d in defaults
        )
    if isinstance(stmt, ast.ClassDef):
        return (
            not stmt.keywords
            and all(map(_dotted, [*stmt.bases, *stmt.decorator_list]))
            and all(_safe_statement(s, in_class=True) for s in stmt.body)
        )
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Name) for t in stmt.targets) and _literal(stmt.value)
    if isinstance(stmt, ast.Pass):
        return True
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)  # docstring


def answers_source(nb: Any) -> str:
    """O código das respostas do aluno: de cada célula de código (menos as de verificação), só os
    ``import``, as definições cuja criação não chama nada e as constantes literais, na ordem do
    notebook. Células com mágicas do IPython ou sintaxe inválida ficam de fora."""
    kept: list[ast.stmt] = []
    for cell in nb.cells:
        if cell.cell_type != "code" or any(t.startswith(CHECK_TAG) for t in tags(cell)):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        kept += [stmt for stmt in tree.body if _safe_statement(stmt)]
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))


def defines(answers: str, name: str) -> bool:
    """As respostas (:func:`answers_source`) podem definir ``name``: um ``def``, uma classe, um
    ``import`` ou uma constante com esse nome, ou um ``from … import *``. Sem nada disso, o
    julgamento já se sabe (a função não existe), sem um processo novo com o TensorFlow."""
    for stmt in ast.parse(answers).body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound = {stmt.name}
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            bound = {(a.asname or a.name).split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.Assign):
            bound = {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        else:
            continue
        if name in bound or "*" in bound:
            return True
    return False


def missing(number: str) -> str:
    return f"Não encontrei a função {ANSWER_NAMES[number]} no notebook."


def not_found(number: str) -> dict[str, str]:
    """O veredito do julgamento de uma resposta que não está no notebook (o de :func:`judge`)."""
    return {number: f"falhou: {missing(number)}", "output": f"❌ {missing(number)}\n"}


def judge(what: str, answers: str, facts: dict[str, Any], env: dict[str, str]) -> dict[str, str]:
    """Julga ``what`` (``"1"``, ``"2"``, ``"3"`` ou ``"4,5"``) num processo NOVO, com o ambiente
    ``env`` (o do kernel da correção): ``{número: veredito}`` e a saída das verificações."""
    with tempfile.TemporaryDirectory(prefix="grade-judge-") as folder:
        job = Path(folder) / "job.json"
        out = Path(folder) / "verdict.json"
        job.write_text(json.dumps({"what": what, "answers": answers, "facts": facts}))
        env = {**env, "TF_USE_LEGACY_KERAS": "1"}
        numbers = what.split(",")
        argv = [sys.executable, "-I", str(Path(__file__).resolve()), "--judge", str(job), str(out)]
        try:  # passou do prazo: o grupo inteiro (os processos de treino do TODO 3) é encerrado
            run = system.run(argv, cwd=folder, env=env, timeout=JUDGE_TIMEOUT_S, check=False)
        except system.CommandError:
            why = f"falhou: a verificação passou de {JUDGE_TIMEOUT_S} s"
            return {**{n: why for n in numbers}, "output": ""}
        if not out.exists():
            tail = " ".join((run.stderr or run.stdout).split()[-40:])
            why = f"falhou: a verificação não terminou (código {run.returncode}): {tail[:300]}"
            return {**{n: why for n in numbers}, "output": run.stdout[-3000:]}
        return json.loads(out.read_text(encoding="utf-8"))


def _judge_main(job_path: str, out_path: str) -> int:
    """O processo de julgamento: liga as verificações de referência ANTES de carregar qualquer
    código do aluno e guarda as referências delas aqui (trocar ``checks.check_x`` depois não as
    alcança); depois define as respostas e julga. Um processo por TODO: o que a resposta de um
    TODO fizer ao rodar não chega ao julgamento de outro."""
    import contextlib
    import io

    from labutils import config as lab_config
    from labutils.multiworker import checks  # o TF_USE_LEGACY_KERAS=1 veio no ambiente

    reference = {
        "1": checks.check_worker_datasets,
        "2": checks.check_build_model,
        "3": checks.check_training_function,
    }
    todo_error, check_error = checks.TodoNotDone, checks.CheckFailed
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    size = lab_config.sizes()
    verdicts: dict[str, str] = {}
    printed = io.StringIO()

    def verdict(number: str, run: Any) -> Any:
        try:
            with contextlib.redirect_stdout(printed):
                value = run()
        except todo_error as err:
            verdicts[number] = NOT_DONE
            printed.write(f"🚧 {err}\n")
            return None
        except Exception as err:
            why = str(err) if isinstance(err, check_error) else f"{type(err).__name__}: {err}"
            verdicts[number] = f"falhou: {' '.join(why.split())[:300]}"
            printed.write(f"❌ {why}\n")
            return None
        verdicts[number] = PASSED
        return value

    if job["what"] in ANSWER_NAMES:
        number = job["what"]
        namespace: dict[str, Any] = {"__name__": "__main__"}
        try:
            exec(compile(job["answers"], "<respostas do aluno>", "exec"), namespace)
        except Exception as err:
            namespace = {}
            printed.write(f"❌ as respostas não carregaram: {type(err).__name__}: {err}\n")
        answer = namespace.get(ANSWER_NAMES[number])

        def run_check() -> None:
            if answer is None:
                raise check_error(missing(number))
            config = {"batch_per_worker": size.batch_per_replica, "epochs": 2}
            reference[number](answer, *([config] if number == "3" else []))

        verdict(number, run_check)
    else:  # TODOs 4 e 5: o que ficou no disco, sem código do aluno
        facts = job["facts"]
        sizes = {
            "storage": os.environ["LABUTILS_TRAIN_STORAGE"],
            "num_workers": size.num_workers,
            "use_gpu": bool(facts.get("plan_use_gpu")),
            "batch_per_worker": size.batch_per_replica,
            "epochs": size.multiworker_epochs,
        }

        def stored(key: str, what: str) -> Any:
            """O que a célula da correção anotou em ``key``; senão, o erro que ela viu."""
            if key in facts:
                return facts[key]
            name, message = facts.get(f"{key}_error") or ("", "a célula da correção não rodou")
            if name == "TodoNotDone" or "is not defined" in message or not name:
                raise todo_error(f"TODO 4 sem {what}: {message}")
            raise check_error(f"{name}: {message}")

        verdict(TRAINER_LABEL, lambda: checks.judge_trainer(stored("trainer", "trainer"), **sizes))
        last = verdict("4", lambda: checks.judge_run(stored("run", "resultado"), **sizes))

        def run_accuracy() -> None:
            if facts.get("accuracy") is None:
                raise todo_error("TODO 5 sem test_accuracy.")
            if last is None:
                raise check_error("Conserte o TODO 4 primeiro: sem o treino, não há o que medir.")
            measured = checks.judge_accuracy(facts["accuracy"], last, size.batch_per_replica)
            from labutils.data import load_cifar100

            cifar = load_cifar100()
            checks.check_accuracy(measured, num_classes=cifar.num_classes, is_mock=cifar.is_mock)

        verdict("5", run_accuracy)
    verdicts["output"] = printed.getvalue()[-5000:]
    Path(out_path).write_text(json.dumps(verdicts), encoding="utf-8")
    return 0


def grade_notebook(
    path: Path,
    checks: dict[str, str],
    *,
    scale: str,
    timeout_s: float,
    out_dir: Path,
    all_cells: bool = False,
) -> dict[str, Any]:
    """Roda um notebook num kernel e num Ray novos e julga cada verificação fora dele; devolve
    ``{etiqueta: veredito, ...}``. ``all_cells``: roda também os exemplos e as partes opcionais
    (que nunca valem nota)."""
    import nbformat
    from nbclient.exceptions import DeadKernelError

    row: dict[str, Any] = {tag: NOT_RUN for tag in checks}
    row["motivo"] = ""
    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as err:  # JSON quebrado, formato desconhecido...
        row["motivo"] = (
            f"notebook inválido ({type(err).__name__}): {' '.join(str(err).split())[:200]}"
        )
        return row
    answers = answers_source(nb)  # antes de rodar: o que o aluno entregou
    work = Path(tempfile.mkdtemp(prefix="grade-"))
    results = work / "results"
    facts_path = work / "facts.json"
    skip = {tag for tag in checks} | (set() if all_cells else SKIP_TAGS)
    nb.cells.append(nbformat.v4.new_code_cell(FACTS_CELL % str(facts_path)))
    numbers = {tag: tag.split("-")[1] for tag in checks}  # "check-1-dados": "1"
    asked = {w for w in (*ANSWER_NAMES, "4,5") if set(w.split(",")) & set(numbers.values())}
    env = _kernel_env(scale, results)
    pool = ThreadPoolExecutor()
    # os TODOs 1–3 julgam só as respostas, não o treino: cada um no seu processo, junto do kernel
    judged: dict[str, Any] = {}
    for w in sorted(asked - {"4,5"}) if answers else ():
        if defines(answers, ANSWER_NAMES[w]):
            judged[w] = pool.submit(judge, w, answers, {}, env)
        else:
            judged[w] = Future()
            judged[w].set_result(not_found(w))
    try:
        execute(
            nb, cwd=work, env=env, timeout=timeout_s,
            skip=skip, allow_errors=True,
        )  # fmt: skip
    except TimeoutError:
        row["motivo"] = f"passou do limite de {timeout_s:g} s (travou ou é lento demais)"
    except DeadKernelError as err:
        row["motivo"] = f"o kernel morreu: {' '.join(str(err).split())[:200]}"
    except Exception as err:  # o kernel não subiu, etc.
        row["motivo"] = f"não rodou ({type(err).__name__}): {' '.join(str(err).split())[:200]}"
    try:
        facts = json.loads(facts_path.read_text(encoding="utf-8")) if facts_path.exists() else {}
        if "4,5" in asked:
            judged["4,5"] = pool.submit(judge, "4,5", answers, facts, env)
        outputs: dict[str, str] = {}
        for what, future in judged.items():
            got = future.result()
            for tag, number in numbers.items():
                if number in what.split(","):  # o do rótulo, se houver (o trainer); senão o do TODO
                    label = tag.removeprefix(CHECK_TAG)
                    row[tag] = got.get(label, got.get(number, NOT_RUN))
                    outputs[number] = got.get("output", "")
        nb.cells.pop()  # a célula da correção
        present = {tag for cell in nb.cells for tag in tags(cell) if tag in checks}
        for cell in nb.cells:  # a cópia mostra o veredito de referência em cada verificação
            for tag in tags(cell) & set(checks):
                cell.source = checks[tag]
                shown = f"[correção] {row[tag]}\n{outputs.get(numbers[tag], '')}"
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=shown)]
        # a nota não depende da célula, mas o aluno a apagou
        gone = [
            f"célula {tag} apagada (julgada assim mesmo)" for tag in checks if tag not in present
        ]
        row["motivo"] = "; ".join(filter(None, [row["motivo"], *gone]))
    finally:
        pool.shutdown(wait=True)
        shutil.rmtree(work, ignore_errors=True)
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out_dir / path.name)
    return row


def write_reports(folder: Path, rows: dict[str, dict[str, Any]], checks: dict[str, str]) -> None:
    """``grades.csv`` e ``grades.md`` em ``folder``: uma linha por arquivo."""
    header = ["arquivo", *(t.removeprefix(CHECK_TAG) for t in checks), "total", "motivo"]
    table = []
    for name, row in rows.items():
        total = sum(row[t] == PASSED for t in checks)
        table.append([name, *(row[t] for t in checks), f"{total}/{len(checks)}", row["motivo"]])
    with open(folder / "grades.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(table)
    icon = {PASSED: "✅", NOT_DONE: "🚧", NOT_RUN: "⏹️"}
    lines = [
        "# Notas da lição 07",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for name, *verdicts, total, why in table:
        marks = [icon.get(v) or f"❌ {v.removeprefix('falhou: ')[:120]}" for v in verdicts]
        lines.append(
            "| " + " | ".join(c.replace("|", "\\|") for c in [name, *marks, total, why]) + " |"
        )
    lines += ["", "✅ passou · 🚧 não terminado · ❌ falhou (motivo) · ⏹️ não avaliado", ""]
    (folder / "grades.md").write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/grade.py", description="Corrige os notebooks entregues da lição 07."
    )
    parser.add_argument("folder", type=Path, help="pasta com os .ipynb entregues")
    parser.add_argument("--scale", choices=("smoke", "full"), default="smoke")
    parser.add_argument("--timeout", type=float, default=900.0, help="segundos por notebook")
    parser.add_argument(
        "--all-cells",
        action="store_true",
        help="roda também os exemplos e as seções opcionais (sem nota): para conferir a solução",
    )
    if argv is None and len(sys.argv) == 4 and sys.argv[1] == "--judge":
        return _judge_main(sys.argv[2], sys.argv[3])
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder} não é uma pasta.", file=sys.stderr)
        return 2
    if not any(args.folder.glob("*.ipynb")):
        print(f"Nenhum .ipynb em {args.folder}.", file=sys.stderr)
        return 2
    checks = reference_checks()
    rows: dict[str, dict[str, Any]] = {}
    for path in sorted(args.folder.glob("*.ipynb")):
        start = time.monotonic()
        print(f"corrigindo {path.name} ...", flush=True)
        rows[path.name] = row = grade_notebook(
            path, checks, scale=args.scale, timeout_s=args.timeout,
            out_dir=args.folder / OUTPUT_DIR, all_cells=args.all_cells,
        )  # fmt: skip
        passed = sum(row[t] == PASSED for t in checks)
        print(f"  {passed}/{len(checks)} em {time.monotonic() - start:.0f} s", flush=True)
    write_reports(args.folder, rows, checks)
    print(f"gravados {args.folder / 'grades.csv'} e {args.folder / 'grades.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
