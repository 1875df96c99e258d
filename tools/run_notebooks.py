"""O executor de notebooks do repositório (nbclient): ``make notebooks``, o ensaio, a correção
da lição 07 e os testes que rodam notebooks fora do nbval passam todos por :func:`execute`.

    python tools/run_notebooks.py [--scale smoke|full] [--out build/notebooks] [NOTEBOOK ...]
    python tools/run_notebooks.py --rehearsal [--only 05 06] [--out docs/ensaio]   # make rehearsal

Sem nomes, roda as lições e a solução da lição 07 (a cópia do aluno para, de propósito, no TODO
1), cada uma num kernel novo, com uma linha por notebook e o tempo. ``--rehearsal`` (o ensaio,
escala ``full`` por padrão): dados SINTÉTICOS do tamanho real (``LABUTILS_SYNTHETIC_DATA=1``),
cada célula cronometrada, e ``ensaio.md`` e ``ensaio.json`` (o que ``python -m labutils.doctor``
lê para estimar os minutos de cada lição em outra máquina) gravados em ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labutils.system import describe_machine, kill_tree, machine  # noqa: E402

#: minutos de um período de aula para o caminho principal de uma lição (a meta do ensaio)
CLASS_PERIOD_MIN = 15.0


def lesson_notebooks(folder: Path = ROOT / "notebooks") -> list[Path]:
    """As lições e a solução do exercício, em ordem (sem a cópia do aluno, que para no TODO 1)."""
    return [p for p in sorted(folder.glob("[0-9]*.ipynb")) if not p.name.endswith("_aluno.ipynb")]


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
    times: list[dict] | None = None,
) -> list[dict]:
    """Roda as células de código de ``nb`` num kernel novo, em ``cwd``, menos as com uma etiqueta
    de ``skip``, e devolve o tempo de cada uma em ``times``: ``[{"index", "seconds", "tags"}]``
    (também o da célula que falhou). ``timeout``: o limite do notebook inteiro (s); passou dele,
    ``TimeoutError``. Sem ``allow_errors``, a célula com erro levanta ``CellExecutionError``. No
    fim, o kernel e tudo o que ele iniciou (o Ray) são encerrados."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    kernel_env = dict(os.environ if env is None else env)
    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=allow_errors,
        resources={"metadata": {"path": str(cwd)}},
    )  # fmt: skip
    skip = set(skip)
    deadline = time.monotonic() + timeout
    times = [] if times is None else times
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
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    raise TimeoutError(f"passou do limite de {timeout:g} s") from None
                finally:  # o nbclient anota o início e o fim de cada célula (record_timing)
                    if (seconds := _cell_seconds(cell)) is not None:
                        times.append(
                            {"index": index, "seconds": seconds, "tags": sorted(tags(cell))}
                        )
        finally:  # antes de o nbclient desligar o kernel: o Ray que ele iniciou vai junto
            kill_tree(pid)
    return times


def _cell_seconds(cell) -> float | None:
    """Da entrada da célula no kernel à resposta dele, pelas horas que o nbclient anota."""
    marks = cell.get("metadata", {}).get("execution", {})
    if "iopub.execute_input" not in marks or "shell.execute_reply" not in marks:
        return None  # interrompida antes da resposta
    start, end = (dt.datetime.fromisoformat(marks[k].replace("Z", "+00:00"))
                  for k in ("iopub.execute_input", "shell.execute_reply"))  # fmt: skip
    return (end - start).total_seconds()


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def uses_gpu(nb) -> bool:
    """Se a lição usa a GPU quando há uma: as células usam o TensorFlow e não a escondem (a 06
    roda só na CPU: ``CUDA_VISIBLE_DEVICES=""`` na primeira célula)."""
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    uses_tf = any(k in source for k in ("tensorflow", "labutils.tf", "inference", "multiworker"))
    return uses_tf and 'os.environ["CUDA_VISIBLE_DEVICES"] = ""' not in source


def rehearsal_row(path: Path, nb, times: list[dict], error: str | None, **extra) -> dict:
    """A linha de uma lição no ``ensaio.json``: os totais e as 3 células mais lentas."""
    cells = [{"index": t["index"], "seconds": t["seconds"], "optional": "opcional" in t["tags"],
              "first_line": (nb.cells[t["index"]].source.strip().splitlines() or [""])[0][:70]}
             for t in times]  # fmt: skip
    core = sum(c["seconds"] for c in cells if not c["optional"])
    return {
        "notebook": path.name,
        "gpu": uses_gpu(nb),  # o doctor estima estas pela sonda; as outras, pelas CPUs
        "core_s": round(core, 1),
        "optional_s": round(sum(c["seconds"] for c in cells) - core, 1),
        **extra,
        "error": error,
        "slowest": sorted(cells, key=lambda c: -c["seconds"])[:3],
    }


def markdown(report: dict) -> str:
    m = report["machine"]
    lines = [
        f"# Ensaio das lições (escala `{report['scale']}`, dados sintéticos"
        + (" do tamanho real)" if report["scale"] == "full" else ": tamanhos mínimos)"),
        "",
        f"- **data**: {report['date']}",
        f"- **máquina**: {m['cpu']}; {describe_machine(m)}; GPU: {report['probe'].get('device')}",
        f"- **sonda de velocidade** (a rede da lição 05, treino centralizado): "
        f"{report['probe'].get('images_per_s', 0):,.0f} imagens/s",
        "- **comando**: `make rehearsal` (`python tools/run_notebooks.py --rehearsal`); cada "
        "lição começou na hora da coluna *início*, uma depois da outra",
        f"- **meta**: o caminho principal de cada lição em até {CLASS_PERIOD_MIN:g} min",
        "",
        "| lição | início | caminho principal (min) | opcionais (min) | tudo (min) | pico de memória "
        "(MB acima do início) | carga média antes → depois | cabe na aula? | "
        "células mais lentas |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- | --- |",
    ]
    for row in report["lessons"]:
        fits = "erro: " + row["error"] if row["error"] else (
            "sim" if row["core_s"] / 60 <= CLASS_PERIOD_MIN else "**não**"
        )  # fmt: skip
        slow = "; ".join(f"{c['seconds']:.0f} s `{c['first_line']}`" for c in row["slowest"])
        lines.append(
            f"| {row['notebook']} | {row['date'][11:]} | {row['core_s'] / 60:.1f} | "
            f"{row['optional_s'] / 60:.1f} | {row['total_s'] / 60:.1f} | "
            f"{row['peak_memory_mb']:,} | {row['load'][0]:g} → {row['load'][1]:g} | {fits} | "
            f"{slow} |"
        )
    lines += [
        "",
        "Carga média acima do número de CPUs lógicas quer dizer máquina disputada por outro "
        "trabalho: os tempos dessa linha são maiores que os de uma máquina quieta. "
        "Tempos de parede de cada célula, somados; o notebook roda inteiro, num kernel novo, e o "
        "caminho principal é a soma das células sem a tag `opcional`. Os dados são SINTÉTICOS: "
        "a acurácia não diz nada, mas o trabalho por época, por imagem e por configuração é o da "
        "aula. Em outra máquina, `python -m labutils.doctor` estima estes minutos pela sonda.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import nbformat
    import psutil

    parser = argparse.ArgumentParser(
        description="Executa as lições (o que o instrutor roda antes da aula) ou o ensaio."
    )
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--scale", default=None, help="padrão: LABUTILS_SCALE; no ensaio, full")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=3600, help="limite por notebook (s)")
    parser.add_argument("--rehearsal", action="store_true", help="o ensaio: ensaio.json e .md")
    parser.add_argument("--only", nargs="*", help="prefixos dos notebooks (ex.: 05 06)")
    parser.add_argument(
        "--core", action="store_true", help="só o caminho principal (sem opcionais)"
    )
    args = parser.parse_args(argv)

    rehearsal = args.rehearsal
    scale = args.scale or ("full" if rehearsal else os.environ.get("LABUTILS_SCALE", "full"))
    out = args.out or (ROOT / "docs" / "ensaio" if rehearsal else ROOT / "build" / "notebooks")
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "LABUTILS_SCALE": scale, "TF_CPP_MIN_LOG_LEVEL": "2"}
    notebooks = args.notebooks or lesson_notebooks()
    if args.only:
        notebooks = [p for p in notebooks if p.name.startswith(tuple(args.only))]
    if rehearsal:
        from labutils import doctor

        env.update(LABUTILS_SYNTHETIC_DATA="1", TFDS_DISABLE_PROGRESS_BAR="1",
                   LABUTILS_RESULTS_DIR=str(ROOT / "results" / f"ensaio_{scale}"))  # fmt: skip
        print("sonda de velocidade...", flush=True)
        report = {"scale": scale, "date": now(), "machine": machine(),
                  "probe": doctor.speed_probe(), "class_period_min": CLASS_PERIOD_MIN,
                  "lessons": []}  # fmt: skip
        previous = out / "ensaio.json"
        if args.only and previous.exists():  # só algumas lições: as outras ficam as de antes
            old = json.loads(previous.read_text(encoding="utf-8"))
            if old.get("scale") == scale:
                report["probe"], report["date"] = old["probe"], old["date"]
                ran = {p.name for p in notebooks}
                report["lessons"] = [r for r in old["lessons"] if r["notebook"] not in ran]
    failed = 0
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        load, date, start, error = os.getloadavg()[0], now(), time.perf_counter(), None
        memory = [psutil.virtual_memory().used] * 2  # [no início, o pico], amostrado a cada 0,5 s
        done = threading.Event()

        def sample(memory=memory, done=done):
            while not done.wait(0.5):
                memory[1] = max(memory[1], psutil.virtual_memory().used)

        if rehearsal:  # o pico de memória só entra no ensaio
            threading.Thread(target=sample, daemon=True).start()
        times: list[dict] = []  # também as células até a que falhou
        try:
            execute(nb, cwd=path.resolve().parent, env=env, timeout=args.timeout, times=times,
                    skip={"opcional"} if args.core else ())  # fmt: skip
        except Exception as err:  # a célula que falhou, o limite, o kernel que morreu
            failed += 1
            error = (str(err).strip().splitlines() or [type(err).__name__])[-1][:300]
        finally:
            done.set()
        seconds = time.perf_counter() - start
        status = f"FALHOU ({error[:200]})" if error else "ok"
        print(f"{path.name:45} {status} em {seconds:6.1f} s", flush=True)
        if not rehearsal:
            nbformat.write(nb, out / path.name)
            continue
        report["lessons"].append(rehearsal_row(
            path, nb, times, error, total_s=round(seconds, 1),
            peak_memory_mb=round((memory[1] - memory[0]) / 2**20),
            # carga média (1 min) antes e depois: acima do nº de CPUs, a máquina estava disputada
            load=[round(load, 2), round(os.getloadavg()[0], 2)], date=date,
        ))  # fmt: skip
    if rehearsal:
        report["lessons"].sort(key=lambda r: r["notebook"])
        (out / "ensaio.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
        (out / "ensaio.md").write_text(markdown(report))
        print(markdown(report))
    else:
        print(f"cópias executadas em {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
