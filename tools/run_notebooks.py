"""O executor de notebooks do repositório (nbclient): ``make notebooks``, o ensaio, a correção
da lição 07 e os testes que rodam notebooks fora do nbval passam todos por :func:`execute`.

    python tools/notebooks.py [--scale smoke|full] [--out build/notebooks] [NOTEBOOK ...]

Sem nomes, roda cada lição e a solução da lição 07, em ordem, cada uma num kernel novo, e
imprime uma linha por notebook com o tempo. O notebook do aluno fica de fora: ele para, de
propósito, no TODO 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labutils.system import kill_tree  # noqa: E402

STUDENT_SUFFIX = "_aluno.ipynb"


def lesson_notebooks(folder: Path = ROOT / "notebooks") -> list[Path]:
    """As lições e a solução do exercício, em ordem (sem a cópia do aluno, que para no TODO 1)."""
    return [p for p in sorted(folder.glob("[0-9]*.ipynb")) if not p.name.endswith(STUDENT_SUFFIX)]


def tags(cell) -> set[str]:
    return set(cell.get("metadata", {}).get("tags", []))


def execute(
    nb,
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 3600,
    skip: Iterable[str] = (),
    allow_errors: bool = False,
    on_cell: Callable | None = None,
) -> list[dict]:
    """Roda as células de código de ``nb`` (nbformat) num kernel novo, em ``cwd``, e devolve o
    tempo de cada uma: ``[{"index", "seconds", "tags"}]``.

    ``timeout``: limite do notebook inteiro (s); passou dele, ``TimeoutError``. ``skip``: etiquetas
    de células que não rodam. ``allow_errors``: uma célula com erro não interrompe (o erro fica
    na saída dela); sem ele, ``nbclient``'s ``CellExecutionError``. ``on_cell(index, cell, seconds)``
    depois de cada célula (também da que falhou). No fim, o kernel e tudo o que ele iniciou (o Ray) são encerrados.
    """
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    kernel_env = dict(os.environ if env is None else env)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
        resources={"metadata": {"path": str(cwd)}},
    )  # fmt: skip
    skip = set(skip)
    deadline = time.monotonic() + timeout
    times: list[dict] = []
    with client.setup_kernel(env=kernel_env, cwd=str(cwd)):
        pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
        try:
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or tags(cell) & skip:
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"passou do limite de {timeout:g} s")
                client.timeout = max(1, int(left))
                start = time.perf_counter()
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    raise TimeoutError(f"passou do limite de {timeout:g} s") from None
                except CellExecutionError:
                    if not allow_errors:
                        raise
                finally:
                    seconds = time.perf_counter() - start
                    times.append({"index": index, "seconds": seconds, "tags": sorted(tags(cell))})
                    if on_cell is not None:
                        on_cell(index, cell, seconds)
        finally:  # antes de o nbclient desligar o kernel: o Ray que ele iniciou vai junto
            kill_tree(pid)
    return times


def main(argv: list[str] | None = None) -> int:
    import nbformat

    parser = argparse.ArgumentParser(
        description="Executa as lições (o que o instrutor roda antes da aula)."
    )
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--scale", default=os.environ.get("LABUTILS_SCALE", "full"))
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "notebooks")
    parser.add_argument("--timeout", type=float, default=3600, help="limite por notebook (s)")
    args = parser.parse_args(argv)

    env = {**os.environ, "LABUTILS_SCALE": args.scale, "TF_CPP_MIN_LOG_LEVEL": "2"}
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for path in args.notebooks or lesson_notebooks():
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        try:
            execute(nb, cwd=path.resolve().parent, env=env, timeout=args.timeout)
            status = "ok"
        except Exception as err:  # a célula que falhou, o limite, o kernel que morreu
            failed += 1
            last = str(err).strip().splitlines()[-1:] or [type(err).__name__]
            status = f"FALHOU ({last[0][:200]})"
        nbformat.write(nb, args.out / path.name)
        print(f"{path.name:45} {status} em {time.perf_counter() - start:6.1f} s", flush=True)
    print(f"cópias executadas em {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
