"""``make matrix``: as lições nos formatos de máquina que os alunos trazem, simulados nesta, e a
tabela ``docs/matriz.md`` (uma linha por lição, uma coluna por formato: ✅, a recusa clara que o
formato pede, ou a asserção que falhou).

- CPUs: ``LABUTILS_CPUS`` = 1, 4, 8 e 16 (o Ray declara N CPUs sobre os núcleos desta máquina),
  todas as lições na escala ``smoke``. Prova escalonamento, paradas, tamanhos e recusas; não
  prova velocidade.
- Memória, na escala ``full`` (dados sintéticos do tamanho real, só o caminho principal), nas
  lições que guardam muito na memória (01, 05 e 06): o armazém de objetos de 2 GiB do macOS, e um
  laptop de 8 GB (o processo e seus filhos num cgroup de 5 GiB, com o armazém de 1,2 GB). O cgroup
  precisa de root; sem ele, a coluna diz que foi pulada e por quê.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labutils import system  # noqa: E402
from tools.run_notebooks import lesson_notebooks, now  # noqa: E402

#: onde o cgroup (v1) de memória de um formato é criado
MEMORY_CGROUP = Path("/sys/fs/cgroup/memory")


@dataclass(frozen=True)
class Shape:
    name: str
    env: dict[str, str]
    scale: str = "smoke"
    lessons: tuple[str, ...] = ()  # prefixos; vazio: todas
    memory_gb: float | None = None
    #: lição → o começo da mensagem com que ela recusa este formato (a recusa é o verde dela)
    refusals: dict[str, str] = field(default_factory=dict)


MEMORY_LESSONS = ("01", "05", "06")
SHAPES = [
    # 1 CPU: a 06 precisa de 1 CPU para ler e gravar além dos atores, e a 07 de 2 workers
    Shape(
        "1 CPU", {"LABUTILS_CPUS": "1"}, refusals={"06": "O pool pede", "07": "Pedido: 2 workers"}
    ),
    Shape("4 CPUs", {"LABUTILS_CPUS": "4"}),
    Shape("8 CPUs", {"LABUTILS_CPUS": "8"}),
    Shape("16 CPUs", {"LABUTILS_CPUS": "16"}),
    Shape("armazém de 2 GiB (macOS)", {"LABUTILS_OBJECT_STORE_MB": "2048"}, "full", MEMORY_LESSONS),
    Shape(
        "laptop de 8 GB (5 GiB livres, armazém de 1,2 GB)",
        {"LABUTILS_OBJECT_STORE_MB": "1200"},
        "full",
        MEMORY_LESSONS,
        memory_gb=5,
    ),
]


@contextlib.contextmanager
def memory_cap(gigabytes: float | None):
    """Um cgroup com ``gigabytes`` de memória (``None``: sem limite); devolve o ``preexec_fn``
    que põe o processo nele, ou levanta ``PermissionError`` com o motivo."""
    if gigabytes is None:
        yield None
        return
    group = MEMORY_CGROUP / f"labutils-matriz-{os.getpid()}"
    try:
        group.mkdir()
        (group / "memory.limit_in_bytes").write_text(str(int(gigabytes * 2**30)))
    except OSError as err:
        raise PermissionError(
            f"sem cgroup de memória aqui ({err.strerror}): precisa de root"
        ) from err
    procs = group / "cgroup.procs"
    try:
        yield lambda: procs.write_text(str(os.getpid()))
    finally:
        for _ in range(50):  # o cgroup só some quando o último processo dele sai
            with contextlib.suppress(OSError):
                group.rmdir()
                break
            time.sleep(0.2)


def run_shape(shape: Shape, notebooks: list[Path], out: Path) -> dict[str, str]:
    """Cada lição de ``shape`` num kernel novo (o executor do ``make notebooks``): lição → célula
    da tabela."""
    chosen = [p for p in notebooks if not shape.lessons or p.name[:2] in shape.lessons]
    cmd = [sys.executable, str(ROOT / "tools" / "run_notebooks.py"), "--scale", shape.scale,
           "--out", str(out), *map(str, chosen)]  # fmt: skip
    env = {**os.environ, **shape.env, "LABUTILS_SCALE": shape.scale}
    if shape.scale == "full":  # sem os dados reais: sintéticos do tamanho real; só o principal
        env["LABUTILS_SYNTHETIC_DATA"] = "1"
        cmd.append("--core")
    try:
        with memory_cap(shape.memory_gb) as enter:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=ROOT,
                                  preexec_fn=enter, timeout=4 * 3600)  # fmt: skip
    except PermissionError as err:
        return {p.name: f"pulado: {err}" for p in chosen}
    cells = {}
    for path in chosen:
        line = next((x for x in proc.stdout.splitlines() if x.startswith(path.name)), "")
        cells[path.name] = verdict(line, shape.refusals.get(path.name[:2]))
    return cells


def verdict(line: str, refusal: str | None) -> str:
    """A linha do executor → ✅ (e os segundos), a recusa esperada, ou o erro (sem as cores do
    terminal que o traceback do Jupyter traz)."""
    line = re.sub(r"\x1b\[[0-9;]*m", "", line)
    seconds = line.rsplit(" em ", 1)[-1].strip() if " em " in line else ""
    if " ok em " in line:
        return f"✅ {seconds}"
    error = line.split("FALHOU (", 1)[-1].rsplit(") em ", 1)[0] if "FALHOU" in line else line
    if refusal and refusal in error:
        return f"✅ recusa clara: «{error[:160]}» {seconds}"
    return f"❌ {error[:200] or 'sem resultado'}"


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=ROOT, check=False)  # fmt: skip
    return done.stdout.strip() or "?"


def markdown(table: dict[str, dict[str, str]], shapes: list[Shape], started: str) -> str:
    here = system.machine()
    lessons = sorted({name for cells in table.values() for name in cells})
    lines = [
        "# Matriz de formatos de máquina (`make matrix`)",
        "",
        f"- **data**: {started} → {now()}",
        f"- **máquina**: {here['cpu']}; {system.describe_machine(here)}",
        f"- **commit**: `{_commit()}`",
        "- CPUs: o Ray declara N CPUs (`LABUTILS_CPUS`) sobre os núcleos desta máquina: prova "
        "escalonamento, paradas, tamanhos e recusas, não velocidade. Memória: escala `full` com "
        "dados sintéticos, só o caminho principal.",
        "",
        "| lição | " + " | ".join(s.name for s in shapes) + " |",
        "| --- |" + " --- |" * len(shapes),
    ]
    for lesson in lessons:
        row = [table.get(s.name, {}).get(lesson, "—") for s in shapes]
        lines.append(f"| {lesson} | " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="nomes dos formatos (ex.: '1 CPU')")
    parser.add_argument("--lessons", nargs="*", help="prefixos das lições (ex.: 00 07)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "matriz.md")
    args = parser.parse_args(argv)
    shapes = [s for s in SHAPES if not args.only or s.name in args.only]
    started, table = now(), {}
    for shape in shapes:
        print(f"--- {shape.name}", flush=True)
        notebooks = [
            p for p in lesson_notebooks() if not args.lessons or p.name[:2] in args.lessons
        ]
        table[shape.name] = run_shape(shape, notebooks, ROOT / "build" / "matriz")
        for lesson, cell in table[shape.name].items():
            print(f"{lesson:45} {cell}", flush=True)
        args.out.write_text(markdown(table, shapes, started), encoding="utf-8")
    bad = [c for cells in table.values() for c in cells.values() if c.startswith("❌")]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
