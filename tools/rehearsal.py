"""O ensaio: cada lição na escala ``full`` com dados SINTÉTICOS do tamanho real, cronometrada.

Sem os dados reais (offline), nenhum notebook rodaria na escala da aula; com
``LABUTILS_SYNTHETIC_DATA=1`` os carregadores das lições (``labutils.data``) geram o California
Housing (20 640 × 8) e o CIFAR-100 (50 000 + 10 000 imagens 32×32×3, 100 classes) com os
tamanhos reais, e cada notebook imprime que os dados são sintéticos.

Para cada notebook (o do aluno da lição 07 fica de fora: ele para no 1º TODO), em ordem, num
kernel novo, grava o tempo de cada célula, o tempo do caminho principal (as células sem a tag
``opcional``) e o das partes opcionais, e o pico de memória em uso na máquina. Escreve
``ensaio.md`` (a tabela) e ``ensaio.json`` (o que ``python -m labutils.doctor`` lê para estimar
os minutos de cada lição em outra máquina) na pasta ``--out``, com a máquina, os núcleos, a data
e a sonda de velocidade (:func:`labutils.doctor.speed_probe`) medida antes das lições.

    python tools/rehearsal.py                       # tudo, em docs/ensaio/
    python tools/rehearsal.py --only 05 06 --out /tmp/ensaio
    python tools/rehearsal.py --scale smoke         # confere o próprio ensaio em minutos
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from labutils import doctor  # noqa: E402
from labutils.system import usable_cpus  # noqa: E402
from tools.run_notebooks import execute, lesson_notebooks  # noqa: E402

OPTIONAL_TAG = "opcional"
#: minutos de um período de aula para o caminho principal de uma lição (a meta do ensaio)
CLASS_PERIOD_MIN = 15.0


class MemoryPeak:
    """Amostra a memória em uso da máquina a cada ``every`` s; ``peak_mb`` acima do início."""

    def __init__(self, every: float = 0.5):
        import psutil

        self._psutil, self.every = psutil, every
        self.start_mb = self.peak_mb = psutil.virtual_memory().used / 2**20
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.peak_mb = max(self.peak_mb, self._psutil.virtual_memory().used / 2**20)

    def __enter__(self) -> MemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    @property
    def extra_mb(self) -> float:
        return self.peak_mb - self.start_mb


def machine() -> dict:
    import psutil

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": model,
        "logical_cpus": usable_cpus(),
        "physical_cores": psutil.cpu_count(logical=False),
        "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
    }


def uses_gpu(nb) -> bool:
    """Se a lição (o notebook ``nb``, lido pelo nbformat) usa a GPU quando há uma: o código das
    células usa o TensorFlow e não a esconde (a 06 roda só na CPU: ``CUDA_VISIBLE_DEVICES=""`` na
    primeira célula)."""
    source = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    uses_tf = any(k in source for k in ("tensorflow", "labutils.tf", "inference", "multiworker"))
    return uses_tf and 'os.environ["CUDA_VISIBLE_DEVICES"] = ""' not in source


def run_notebook(path: Path, env: dict[str, str], timeout: float) -> dict:
    """Executa ``path`` num kernel novo; devolve tempos por célula, totais e o erro, se houve."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    cells: list[dict] = []

    def note(index, cell, seconds):
        first = (cell.source.strip().splitlines() or [""])[0]
        optional = OPTIONAL_TAG in cell.get("metadata", {}).get("tags", [])
        cells.append({"index": index, "seconds": seconds, "optional": optional,
                      "first_line": first[:70]})  # fmt: skip

    error = None
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    try:
        with MemoryPeak() as memory:
            execute(nb, cwd=path.parent, env={**os.environ, **env}, timeout=timeout, on_cell=note)
    except Exception as err:  # a célula que falhou, o limite, o kernel que morreu
        error = (str(err).strip().splitlines() or [type(err).__name__])[-1][:300]
    total = time.perf_counter() - start
    core = sum(c["seconds"] for c in cells if not c["optional"])
    optional = sum(c["seconds"] for c in cells if c["optional"])
    return {
        "notebook": path.name,
        "gpu": uses_gpu(nb),  # o doctor estima estas pela sonda; as outras, pelas CPUs
        "total_s": round(total, 1),
        "core_s": round(core, 1),
        "optional_s": round(optional, 1),
        "peak_memory_mb": round(memory.extra_mb),
        # carga média (1 min) antes e depois: acima do nº de CPUs, a máquina estava disputada
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
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
        f"- **máquina**: {m['cpu']}; {m['logical_cpus']} CPUs lógicas, {m['physical_cores']} "
        f"núcleos físicos, {m['memory_gb']} GB de memória; GPU: {report['probe'].get('device')}",
        f"- **sonda de velocidade** (a rede da lição 05, treino centralizado): "
        f"{report['probe'].get('images_per_s', 0):,.0f} imagens/s",
        "- **comando**: `make rehearsal` (`python tools/rehearsal.py`); cada lição começou na "
        "hora da coluna *início* (— : na hora da data acima, no mesmo ensaio, uma depois da outra)",
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
            f"| {row['notebook']} | {row['date'][11:] if 'date' in row else '—'} | "
            f"{row['core_s'] / 60:.1f} | {row['optional_s'] / 60:.1f} | "
            f"{row['total_s'] / 60:.1f} | {row['peak_memory_mb']:,} | "
            f"{row['load'][0]:g} → {row['load'][1]:g} | {fits} | {slow} |"
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


def rewrite_markdown(out: Path) -> None:
    """Refaz ``ensaio.md`` a partir do ``ensaio.json`` da pasta (depois de mudar o formato)."""
    (out / "ensaio.md").write_text(markdown(json.loads((out / "ensaio.json").read_text())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="full", choices=["full", "smoke"])
    parser.add_argument("--only", nargs="*", help="prefixos dos notebooks (ex.: 05 06)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "ensaio"))
    parser.add_argument("--timeout", type=float, default=3600, help="limite por notebook (s)")
    args = parser.parse_args(argv)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = ROOT / "results" / f"ensaio_{args.scale}"  # modelos, checkpoints: fora do git
    env = {
        "LABUTILS_SCALE": args.scale,
        "LABUTILS_SYNTHETIC_DATA": "1",
        "LABUTILS_RESULTS_DIR": str(results),
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "TFDS_DISABLE_PROGRESS_BAR": "1",
    }
    notebooks = lesson_notebooks()
    if args.only:
        notebooks = [p for p in notebooks if p.name.startswith(tuple(args.only))]
    print("sonda de velocidade...", flush=True)
    report = {
        "scale": args.scale,
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "probe": doctor.speed_probe(),
        "class_period_min": CLASS_PERIOD_MIN,
        "lessons": [],
    }
    previous = out / "ensaio.json"
    if args.only and previous.exists():  # só algumas lições: as outras ficam as do ensaio anterior
        old = json.loads(previous.read_text())
        if old.get("scale") == args.scale:
            report["probe"], report["date"] = old["probe"], old["date"]
            report["lessons"] = [r for r in old["lessons"] if r["notebook"] not in
                                 {p.name for p in notebooks}]  # fmt: skip
    for path in notebooks:
        print(f"{path.name}...", flush=True)
        row = run_notebook(path, env, args.timeout)
        row["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
        report["lessons"].append(row)
        status = row["error"] or "ok"
        print(f"  principal {row['core_s']:.0f} s, opcionais {row['optional_s']:.0f} s: {status}")
    report["lessons"].sort(key=lambda r: r["notebook"])
    (out / "ensaio.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    (out / "ensaio.md").write_text(markdown(report))
    print(markdown(report))
    return 1 if any(r["error"] for r in report["lessons"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
