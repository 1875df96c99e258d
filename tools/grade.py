"""Corrige uma turma: roda cada notebook entregue da lição 07 e anota as autoverificações.

Ferramenta do instrutor (fora do pacote ``labutils``, que os alunos importam)::

    python tools/grade.py PASTA_DAS_ENTREGAS [--scale smoke|full] [--timeout S]
    make grade DIR=PASTA_DAS_ENTREGAS

Cada ``*.ipynb`` da pasta roda num kernel **novo**, com o seu próprio Ray (o notebook inicia um
Ray local: ``RAY_ADDRESS`` é tirada do ambiente) e a sua pasta de resultados e checkpoints
(temporária, apagada no fim), com um limite de tempo para o notebook inteiro. Terminado (ou
estourado o limite), o kernel e tudo o que ele iniciou (o Ray) são encerrados antes do próximo.

As verificações são as células com a etiqueta ``check-...`` da solução; o código delas vem da
solução (o aluno não pode trocá-lo). As células de exemplo e opcionais (etiquetas ``exemplo`` e
``opcional``) não rodam: não valem nota. Com ``--all-cells`` elas rodam também (sem nota): é como o
instrutor confere a solução inteira nas máquinas da sala antes da aula, e como o teste roda a
solução (``tests/test_grade.py``). Na pasta ficam ``grades.csv`` e ``grades.md`` (uma linha
por arquivo, uma coluna por verificação, ``total`` = quantas passaram, ``motivo`` quando o
notebook não terminou: travou, o kernel morreu, o JSON é inválido) e, em ``_correcao/``, a cópia
executada de cada notebook, para ler as saídas.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.run_notebooks import execute  # noqa: E402

SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
CHECK_TAG = "check-"
SKIP_TAGS = {"exemplo", "opcional"}
PASSED, NOT_DONE, NOT_RUN = "passou", "não terminado", "não avaliado"
OUTPUT_DIR = "_correcao"


def reference_checks(solution: Path = SOLUTION) -> dict[str, str]:
    """``{etiqueta: código}`` das células de verificação da solução, na ordem do notebook."""
    import nbformat

    found: dict[str, str] = {}
    for cell in nbformat.read(solution, as_version=4).cells:
        for tag in cell.get("metadata", {}).get("tags", []):
            if tag.startswith(CHECK_TAG):
                found[tag] = cell.source
    return found


def _tags(cell: Any) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def _verdict(cell: Any) -> str:
    """``passou``, ``não terminado`` ou ``falhou: mensagem`` de uma célula de verificação já rodada."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if not errors:
        return PASSED
    name, value = errors[0].get("ename", ""), errors[0].get("evalue", "")
    if name == "TodoNotDone":
        return NOT_DONE
    first = " ".join(value.split())[:300]
    return f"falhou: {first}" if name == "CheckFailed" else f"falhou: {name}: {first}"


def _kernel_env(scale: str, results: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "TF_CONFIG")}
    env.update(
        LABUTILS_SCALE=scale,
        LABUTILS_RESULTS_DIR=str(results),
        LABUTILS_TRAIN_STORAGE=str(results / "ray_train"),
        TF_CPP_MIN_LOG_LEVEL="2",
    )
    return env


def grade_notebook(
    path: Path,
    checks: dict[str, str],
    *,
    scale: str,
    timeout_s: float,
    out_dir: Path,
    all_cells: bool = False,
) -> dict[str, Any]:
    """Roda um notebook num kernel e num Ray novos; devolve ``{etiqueta: veredito, ...}``.

    ``all_cells``: roda também os exemplos e as partes opcionais (que nunca valem nota)."""
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
    present = {tag for cell in nb.cells for tag in _tags(cell) if tag in checks}
    for cell in nb.cells:  # a verificação é a da solução, não a que o aluno deixou
        for tag in _tags(cell) & set(checks):
            cell.source = checks[tag]
    for tag in set(checks) - present:
        row[tag] = "falhou: célula de verificação não encontrada"
    work = Path(tempfile.mkdtemp(prefix="grade-"))

    def note(index: int, cell: Any, seconds: float) -> None:
        for tag in _tags(cell) & set(checks):
            row[tag] = _verdict(cell)

    try:
        execute(
            nb, cwd=work, env=_kernel_env(scale, work / "results"), timeout=timeout_s,
            skip=set() if all_cells else SKIP_TAGS, allow_errors=True, on_cell=note,
        )  # fmt: skip
    except TimeoutError:
        row["motivo"] = f"passou do limite de {timeout_s:g} s (travou ou é lento demais)"
    except DeadKernelError as err:
        row["motivo"] = f"o kernel morreu: {' '.join(str(err).split())[:200]}"
    except Exception as err:  # o kernel não subiu, etc.
        row["motivo"] = f"não rodou ({type(err).__name__}): {' '.join(str(err).split())[:200]}"
    finally:
        shutil.rmtree(work, ignore_errors=True)
        out_dir.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out_dir / path.name)
    return row


def _label(tag: str) -> str:
    return tag[len(CHECK_TAG) :]


def write_reports(folder: Path, rows: dict[str, dict[str, Any]], checks: dict[str, str]) -> None:
    """``grades.csv`` e ``grades.md`` em ``folder``: uma linha por arquivo."""
    header = ["arquivo", *(_label(t) for t in checks), "total", "motivo"]
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
    for cells in table:
        shown = [cells[0]]
        for value in cells[1:-2]:
            mark = icon.get(value, "❌")
            shown.append(mark if mark != "❌" else f"❌ {value[len('falhou: ') :][:120]}")
        shown += cells[-2:]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in shown) + " |")
    lines += ["", "✅ passou · 🚧 não terminado · ❌ falhou (motivo) · ⏹️ não avaliado", ""]
    (folder / "grades.md").write_text("\n".join(lines), encoding="utf-8")


def grade_folder(
    folder: Path,
    *,
    scale: str = "smoke",
    timeout_s: float = 900.0,
    solution: Path = SOLUTION,
    all_cells: bool = False,
) -> dict[str, dict[str, Any]]:
    """Corrige todos os ``*.ipynb`` de ``folder`` e grava os relatórios; devolve as linhas."""
    checks = reference_checks(solution)
    rows: dict[str, dict[str, Any]] = {}
    for path in sorted(folder.glob("*.ipynb")):
        start = time.monotonic()
        print(f"corrigindo {path.name} ...", flush=True)
        rows[path.name] = grade_notebook(
            path,
            checks,
            scale=scale,
            timeout_s=timeout_s,
            out_dir=folder / OUTPUT_DIR,
            all_cells=all_cells,
        )
        passed = sum(rows[path.name][t] == PASSED for t in checks)
        print(f"  {passed}/{len(checks)} em {time.monotonic() - start:.0f} s", flush=True)
    write_reports(folder, rows, checks)
    return rows


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
    args = parser.parse_args(argv)
    if not args.folder.is_dir():
        print(f"{args.folder} não é uma pasta.", file=sys.stderr)
        return 2
    if not any(args.folder.glob("*.ipynb")):
        print(f"Nenhum .ipynb em {args.folder}.", file=sys.stderr)
        return 2
    grade_folder(args.folder, scale=args.scale, timeout_s=args.timeout, all_cells=args.all_cells)
    print(f"gravados {args.folder / 'grades.csv'} e {args.folder / 'grades.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
