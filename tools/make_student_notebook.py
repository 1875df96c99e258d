"""Gera o notebook do aluno a partir do notebook de solução (uma única fonte da verdade).

Ferramenta de quem mantém o curso: fica fora do pacote ``labutils`` (que os alunos importam).

No notebook de solução, cada trecho que o aluno deve escrever fica entre marcadores. Numa
célula de código::

    # BEGIN SOLUTION
    # STUB: strategy = checks.todo(1, "crie a estratégia")
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    # END SOLUTION

No notebook do aluno a região inteira vira as linhas ``STUB`` (sem o prefixo), na mesma
indentação do marcador. Em células Markdown os marcadores são comentários HTML:
``<!-- BEGIN SOLUTION -->``, ``<!-- STUB: texto -->``, ``<!-- END SOLUTION -->``.
Células com a etiqueta (tag) ``solution-only`` não vão para o notebook do aluno.

Linha de comando::

    python tools/make_student_notebook.py notebooks/07_exercicio_multiworker_solucao.ipynb          # grava
    python tools/make_student_notebook.py notebooks/07_exercicio_multiworker_solucao.ipynb --check  # confere
"""

from __future__ import annotations

import argparse
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


def _parse(line: str) -> tuple[str, str, str] | None:
    """``(tipo, indentação, texto)`` de uma linha de marcador, ou ``None``."""
    match = _MARKER.match(line)
    if not match:
        return None
    kind = match["code"] or match["md"]
    text = match["ctext"] if match["code"] else match["mtext"]
    if kind == "STUB:":
        text = text[1:] if text.startswith(" ") else text
    return kind, match["indent"], text


def strip_solutions(source: str, where: str = "célula") -> str:
    """Troca cada região ``BEGIN/END SOLUTION`` de ``source`` pelas suas linhas ``STUB``."""
    out: list[str] = []
    region: tuple[str, list[str]] | None = None  # (indentação, stubs)
    for number, line in enumerate(source.splitlines(), start=1):
        marker = _parse(line)
        kind = marker[0] if marker else None
        if region is None:
            if kind == "BEGIN SOLUTION":
                region = (marker[1], [])
            elif kind is not None:
                raise ExerciseFormatError(f"{where}, linha {number}: {kind} fora de uma região.")
            else:
                out.append(line)
            continue
        if kind == "BEGIN SOLUTION":
            raise ExerciseFormatError(f"{where}, linha {number}: região aberta duas vezes.")
        if kind == "STUB:":
            region[1].append(region[0] + marker[2] if marker[2] else "")
        elif kind == "END SOLUTION":
            if not region[1]:
                raise ExerciseFormatError(
                    f"{where}, linha {number}: região sem nenhuma linha STUB (o que o aluno vê?)."
                )
            out.extend(region[1])
            region = None
    if region is not None:
        raise ExerciseFormatError(f"{where}: BEGIN SOLUTION sem END SOLUTION.")
    return "\n".join(out)


def generate(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Devolve o notebook do aluno (novo objeto; ``solution`` não é alterado), sem saídas."""
    student = nbformat.v4.new_notebook(metadata=dict(solution.metadata))
    student.nbformat, student.nbformat_minor = solution.nbformat, solution.nbformat_minor
    for index, cell in enumerate(solution.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if SOLUTION_ONLY_TAG in tags:
            continue
        new = nbformat.from_dict(dict(cell))
        new.source = strip_solutions(cell.source, where=f"célula {index}")
        if new.cell_type == "code":
            new.outputs = []
            new.execution_count = None
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
    solution = nbformat.read(solution_path, as_version=4)
    return nbformat.writes(generate(solution)) + "\n"


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
    if args.check:
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current != text:
            print(
                f"{target} está desatualizado: rode `python tools/make_student_notebook.py {args.solution}`.",
                file=sys.stderr,
            )
            return 1
        print(f"{target} está em dia com {args.solution}.")
        return 0
    target.write_text(text, encoding="utf-8")
    print(f"gravado {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
