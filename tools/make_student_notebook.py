"""Gera o notebook do aluno a partir do de solução (uma única fonte da verdade).

No notebook de solução, cada trecho que o aluno deve escrever fica entre marcadores; no do aluno,
a região inteira vira as linhas ``STUB`` (sem o prefixo), na indentação do marcador::

    # BEGIN SOLUTION
    # STUB: strategy = checks.todo(1, "crie a estratégia")
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    # END SOLUTION

Em células Markdown os marcadores são comentários HTML (``<!-- STUB: texto -->``). Células com a
etiqueta ``solution-only`` não vão para o notebook do aluno. Uso::

    python tools/make_student_notebook.py notebooks/07_exercicio_multiworker_solucao.ipynb [--check]
"""

from __future__ import annotations

import argparse
import linecache
import re
import sys
from pathlib import Path

import nbformat

SOLUTION_ONLY_TAG = "solution-only"
_MARKER = re.compile(
    r"^(?P<indent>\s*)(?:#\s*(?P<code>BEGIN SOLUTION|END SOLUTION|STUB:)(?P<ctext>.*)"
    r"|<!--\s*(?P<md>BEGIN SOLUTION|END SOLUTION|STUB:)(?P<mtext>.*?)\s*-->)\s*$"
)


class ExerciseFormatError(ValueError):
    """Os marcadores de solução do notebook estão malformados."""


def strip_solutions(source: str, where: str = "célula") -> str:
    """Troca cada região ``BEGIN/END SOLUTION`` de ``source`` pelas suas linhas ``STUB``."""
    out: list[str] = []
    stubs: list[str] | None = None  # dentro de uma região: as linhas STUB dela
    for number, line in enumerate(source.splitlines(), start=1):
        match = _MARKER.match(line)
        kind = match and (match["code"] or match["md"])
        if stubs is None:
            if kind == "BEGIN SOLUTION":
                stubs, indent = [], match["indent"]
            elif kind:
                raise ExerciseFormatError(f"{where}, linha {number}: {kind} fora de uma região.")
            else:
                out.append(line)
        elif kind == "BEGIN SOLUTION":
            raise ExerciseFormatError(f"{where}, linha {number}: região aberta duas vezes.")
        elif kind == "STUB:":
            text = match["ctext"] if match["code"] else match["mtext"]
            text = text.removeprefix(" ")
            stubs.append(indent + text if text else "")
        elif kind == "END SOLUTION":
            if not stubs:
                raise ExerciseFormatError(
                    f"{where}, linha {number}: região sem nenhuma linha STUB (o que o aluno vê?)."
                )
            out.extend(stubs)
            stubs = None
    if stubs is not None:
        raise ExerciseFormatError(f"{where}: BEGIN SOLUTION sem END SOLUTION.")
    return "\n".join(out)


def run_cell(source: str, ns: dict, name: str = "celula") -> None:
    """Executa o código de uma célula como o IPython faz: com o texto no ``linecache``, onde o
    ``inspect.getsource`` o acha (as verificações leem os TODOs do código-fonte)."""
    filename = f"<{name}-{len(linecache.cache)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)


def generate(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Devolve o notebook do aluno (novo objeto; ``solution`` não é alterado), sem saídas."""
    student = nbformat.v4.new_notebook(metadata=dict(solution.metadata))
    student.nbformat, student.nbformat_minor = solution.nbformat, solution.nbformat_minor
    for index, cell in enumerate(solution.cells):
        if SOLUTION_ONLY_TAG in cell.get("metadata", {}).get("tags", []):
            continue
        new = nbformat.from_dict(dict(cell))
        new.source = strip_solutions(cell.source, where=f"célula {index}")
        if new.cell_type == "code":
            new.outputs, new.execution_count = [], None
        student.cells.append(new)
    return student


def student_path(solution_path: Path) -> Path:
    """``..._solucao.ipynb`` → ``..._aluno.ipynb``."""
    name = solution_path.name
    if "_solucao" not in name:
        raise ExerciseFormatError(f"O nome do notebook de solução deve conter '_solucao': {name}")
    return solution_path.with_name(name.replace("_solucao", "_aluno"))


def render(solution_path: Path) -> str:
    """Texto JSON do notebook do aluno, exatamente como é gravado em disco."""
    return nbformat.writes(generate(nbformat.read(solution_path, as_version=4))) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tools/make_student_notebook.py",
        description="Gera o notebook do aluno (…_aluno.ipynb) a partir do de solução.",
    )
    parser.add_argument("solution", type=Path, help="notebook de solução (…_solucao.ipynb)")
    parser.add_argument(
        "--check", action="store_true", help="só confere se o notebook do aluno está em dia"
    )
    args = parser.parse_args(argv)
    target = student_path(args.solution)
    text = render(args.solution)
    if not args.check:
        target.write_text(text, encoding="utf-8")
        print(f"gravado {target}")
    elif not target.exists() or target.read_text(encoding="utf-8") != text:
        print(
            f"{target} está desatualizado: rode `python tools/make_student_notebook.py "
            f"{args.solution}`.",
            file=sys.stderr,
        )
        return 1
    else:
        print(f"{target} está em dia com {args.solution}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
