"""Registro das medidas e relatório (Markdown, CSV e figura) com a descrição da máquina."""

from __future__ import annotations

import csv
import os
import platform
import statistics
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from labutils import system
from tools.run_notebooks import now


@dataclass
class Measurement:
    """Uma linha do relatório: várias repetições de uma medida."""

    section: str
    approach: str
    metric: str
    values: list[float]
    #: speedup sobre a linha de base da seção (mediana), se fizer sentido
    speedup: float | None = None
    #: maior speedup que a máquina permite para este trabalho
    bound: float | None = None
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def spread(self) -> tuple[float, float]:
        return min(self.values), max(self.values)

    @property
    def of_bound(self) -> float | None:
        if self.speedup is None or not self.bound:
            return None
        return self.speedup / self.bound


@dataclass
class Skipped:
    """Uma medida que não pôde ser feita, e por quê (ex.: dados ausentes). Nunca um número falso."""

    section: str
    approach: str
    reason: str


@dataclass
class Report:
    machine: dict[str, str]
    rows: list[Measurement] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    #: ``(seção, linha)``: as metas de uma seção, conferidas com os números desta execução
    targets: list[tuple[str, str]] = field(default_factory=list)

    def add(self, row: Measurement) -> Measurement:
        self.rows.append(row)
        return row

    def skip(self, section: str, approach: str, reason: str) -> None:
        """Registra uma medida não feita; ela aparece no relatório com o motivo (numa linha)."""
        self.skipped.append(Skipped(section, approach, " ".join(reason.split())))

    def markdown(self) -> str:
        lines = ["# Benchmark do laboratório", "", "## Máquina", ""]
        lines += [f"- **{k}**: {v}" for k, v in self.machine.items()]
        lines += ["", "## Resultados", ""]
        lines.append(
            "| seção | abordagem | métrica | mediana | mín – máx | n | speedup | limite | % do limite | nota |"
        )
        lines.append("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
        for r in self.rows:
            low, high = r.spread
            pct = "–" if r.of_bound is None else f"{100 * r.of_bound:.0f}%"
            lines.append(
                f"| {r.section} | {r.approach} | {r.metric} | {_fmt(r.median)} | "
                f"{_fmt(low)} – {_fmt(high)} | {len(r.values)} | {_fmt(r.speedup, 'x')} | "
                f"{_fmt(r.bound, 'x')} | {pct} | {r.note} |"
            )
        if self.targets:
            lines += ["", "## Metas, conferidas nesta execução", ""]
            lines += [f"- **{section}**: {line}" for section, line in self.targets]
        if self.skipped:
            lines += ["", "## Não medido", ""]
            lines += [f"- **{s.section} / {s.approach}**: {s.reason}" for s in self.skipped]
        return "\n".join(lines) + "\n"

    def write(self, out_dir: Path) -> dict[str, Path]:
        # a carga no fim (junto da do início) mostra se a máquina esteve ocupada durante as medidas
        self.machine["carga média (1 min) ao gravar"] = f"{os.getloadavg()[0]:.2f}"
        out_dir.mkdir(parents=True, exist_ok=True)
        names = {"markdown": "relatorio.md", "csv": "resultados.csv", "figure": "resultados.png"}
        paths = {kind: out_dir / name for kind, name in names.items()}
        paths["markdown"].write_text(self.markdown(), encoding="utf-8")
        with paths["csv"].open("w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(
                ["secao", "abordagem", "metrica", "mediana", "minimo", "maximo", "n",
                 "speedup", "limite", "fracao_do_limite", "valores", "nota"]
            )  # fmt: skip
            for r in self.rows:
                low, high = r.spread
                writer.writerow(
                    [r.section, r.approach, r.metric, r.median, low, high, len(r.values),
                     r.speedup, r.bound, r.of_bound, " ".join(f"{v:.6g}" for v in r.values), r.note]
                )  # fmt: skip
            for s in self.skipped:  # linha sem números: o motivo vai na nota
                writer.writerow(
                    [s.section, s.approach, "não medido", "", "", "", 0, "", "", "", "", s.reason]
                )
        self.figure(paths["figure"])
        return paths

    def figure(self, path: Path) -> None:
        """Uma barra por linha (mediana, com o mín – máx), um painel por seção e métrica."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        groups: dict[tuple[str, str], list[Measurement]] = {}
        for r in self.rows:
            groups.setdefault((r.section, r.metric), []).append(r)
        fig, axes = plt.subplots(max(1, len(groups)), 1, figsize=(9, 2.2 + 0.45 * len(self.rows)),
                                 squeeze=False)  # fmt: skip
        if not groups:  # nada medido: a figura diz isso, em vez de um erro
            axes[0, 0].axis("off")
            axes[0, 0].text(0.5, 0.5, "nenhuma medida (veja 'Não medido')", ha="center")
        for ax, ((section, metric), rows) in zip(axes[:, 0], groups.items(), strict=False):
            med = [r.median for r in rows]
            err = [[m - r.spread[0] for m, r in zip(med, rows, strict=True)],
                   [r.spread[1] - m for m, r in zip(med, rows, strict=True)]]  # fmt: skip
            ax.barh([r.approach for r in rows], med, xerr=err, color="tab:blue", ec="k", capsize=3)
            ax.invert_yaxis()
            ax.set(title=section, xlabel=metric + "  (barra = mediana, traço = mín – máx)")
            ax.grid(True, axis="x", linestyle=":")
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


def verdict(ok: bool) -> str:
    """O fim da linha de uma meta: cumprida ou não, nesta execução."""
    return "**cumprida**" if ok else "**não cumprida**"


def _fmt(value: float | None, suffix: str = "") -> str:
    if value is None:
        return "–"
    if abs(value) >= 100:
        return f"{value:,.0f}{suffix}".replace(",", " ")
    return f"{value:.3g}{suffix}"


def machine_info(scale: str) -> dict[str, str]:
    """Núcleos, memória, GPU e versões: registrados junto de cada resultado."""
    here = system.machine()
    try:
        gpus = system.run(["nvidia-smi", "-L"], timeout=10, check=False).stdout.strip()
    except OSError:  # sem nvidia-smi
        gpus = ""
    except system.CommandError:
        gpus = "nvidia-smi não respondeu"
    info = {
        "data": now(),
        "processador": here["cpu"],
        "núcleos disponíveis": str(here["logical_cpus"]),
        "núcleos físicos": str(here["physical_cores"]),
        "memória": f"{here['memory_gb']} GB",
        "GPU": "; ".join(gpus.splitlines()) or "nenhuma",
        "carga média (1 min) no início": f"{os.getloadavg()[0]:.2f}",
        "escala": scale,
        "Python": platform.python_version(),
    }
    for pkg in ("ray", "tensorflow", "scikit-learn"):
        try:
            info[pkg] = version(pkg)
        except PackageNotFoundError:
            info[pkg] = "ausente"
    return info
