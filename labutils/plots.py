"""Gráficos das lições, uma seção por lição (devolvem a ``Figure`` do matplotlib)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


# ---------------------------------------------------------------- lição 02
# Os resultados são alinhados pela configuração ``(n_estimators, max_depth)``, não pela posição:
# a busca distribuída pode devolvê-las em outra ordem.
def _seconds_by_config(results: Iterable[Sequence[Any]]) -> dict[tuple[int, int], float]:
    return {(int(row[0]), int(row[1])): float(row[3]) for row in results}


def plot_comparison(
    central_results: Sequence[Sequence[Any]],
    central_total: float,
    distributed_results: Sequence[Sequence[Any]],
    distributed_total: float,
    grid: Sequence[Sequence[int]] | None = None,
) -> Any:
    """À esquerda, na ordem de ``grid`` (ou dos resultados centralizados), o tempo ACUMULADO do
    laço, o de cada tarefa distribuída e, tracejado, o de cada configuração; à direita, os totais."""
    import matplotlib.pyplot as plt

    central = _seconds_by_config(central_results)
    dist = _seconds_by_config(distributed_results)
    order = [(int(n), int(d)) for n, d in grid] if grid is not None else list(central)
    k = len(order)
    x = np.arange(k)
    central_each = np.array([central[c] for c in order])
    dist_each = np.array([dist[c] for c in order])

    fig, (ax_t, ax_b) = plt.subplots(
        1, 2, figsize=(min(6 + 0.7 * k, 22), 4.2), gridspec_kw={"width_ratios": [2.2, 1]}
    )
    ax_t.plot(x, np.cumsum(central_each), "o-", color="tab:red", label="Centralizado (acumulado)")
    ax_t.plot(x, central_each, "o--", color="tab:red", alpha=0.45, label="Centralizado (cada)")
    ax_t.plot(x, dist_each, "o-", color="tab:blue", label="Distribuído (cada tarefa)")
    rotate = {"rotation": 45, "ha": "right"} if k > 6 else {}
    ax_t.set_xticks(x, [f"({n}, {d})" for n, d in order], **rotate)
    ax_t.set(xlabel="Configuração (n_estimators, max_depth)", ylabel="Tempo (s)", ylim=(0, None))
    ax_t.set_title("Tempo por configuração")
    ax_t.grid(True, linestyle=":")
    ax_t.legend(loc="upper left", fontsize="small")

    totals = [central_total, distributed_total]
    bars = ax_b.barh(["Centralizado", "Distribuído"], totals, color=["tab:red", "tab:blue"], ec="k")
    ax_b.bar_label(
        bars, labels=[f"{t:.1f} s" if t >= 10 else f"{t:.2f} s" for t in totals], padding=3
    )
    speedup = central_total / distributed_total
    ax_b.set(xlabel="Tempo total (s)", xlim=(0, max(totals) * 1.3))
    ax_b.set_title(f"Tempo total (speedup {speedup:.2f}×)")
    ax_b.grid(True, axis="x", linestyle=":")
    fig.tight_layout()
    return fig


def plot_speedups(
    names: Sequence[str], speedups: Sequence[float], bounds: Sequence[float], cores: float
) -> Any:
    """Speedup medido de cada estratégia (barras) ao lado do limite que ela permite (marcas)."""
    import matplotlib.pyplot as plt

    speedups, bounds = [float(s) for s in speedups], [float(b) for b in bounds]
    y = np.arange(len(speedups))
    fig, ax = plt.subplots(figsize=(8, 1.8 + 0.6 * len(speedups)))
    bars = ax.barh(y, speedups, color="tab:blue", ec="k", height=0.6, label="speedup medido")
    ax.bar_label(bars, labels=[f"{s:.2f}×" for s in speedups], padding=3)
    ax.scatter(
        bounds, y, marker="|", s=900, linewidths=3, color="tab:red", zorder=3, label="limite"
    )
    ax.axvline(1.0, color="gray", linestyle=":", label="sem ganho (1×)")
    ax.axvline(cores, color="tab:green", linestyle="--", label=f"núcleos ({cores:g})")
    ax.set_yticks(y, list(names))
    ax.invert_yaxis()
    ax.set(
        xlabel="Speedup sobre a busca centralizada (×)",
        xlim=(0, max(*speedups, *bounds, cores) * 1.2),
    )
    ax.grid(True, axis="x", linestyle=":")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.22),
        ncol=4,
        fontsize="small",
        frameon=False,
        markerscale=0.4,
    )
    fig.tight_layout()
    return fig


def _timeline_panel(ax, rows, bars, labels, colors, title):
    """Desenha as barras ``(linha, início, fim)`` numa linha por valor de ``rows``."""
    total = max((end for _, _, end in bars), default=1.0) or 1.0
    for (row, start, end), label in zip(bars, labels, strict=True):
        y = rows.index(row)
        ax.barh(y, end - start, left=start, height=0.6, color=colors[label], ec="k", lw=0.6)
        if end - start > 0.08 * total:  # rótulo só onde cabe
            ax.text((start + end) / 2, y, label, ha="center", va="center", fontsize="small")
    ax.set(title=title, xlabel="Tempo desde o envio (s)", ylim=(len(rows) - 0.5, -0.5))
    ax.grid(True, axis="x", linestyle=":")


def plot_timeline(
    measured: Sequence[Sequence[float]],
    labels: Sequence[str],
    simulated: Sequence[Sequence[float]] | None = None,
) -> Any:
    """Uma linha por processo, uma barra por tarefa (``measured``: ``(pid, início, fim)``; mesmo
    rótulo, mesma cor) e, num 2º painel, ``simulated``: ``(núcleo, início, fim)`` da fila."""
    import matplotlib.pyplot as plt

    labels = [str(label) for label in labels]
    panels = [measured] + ([simulated] if simulated is not None else [])
    palette = plt.get_cmap("tab10").colors
    colors = {label: palette[i % len(palette)] for i, label in enumerate(dict.fromkeys(labels))}
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 1.6 + 0.5 * 4), sharex=True)
    axes = np.atleast_1d(axes)
    pids = list(dict.fromkeys(int(p) for p, _, _ in sorted(measured, key=lambda b: b[1])))
    measured = [(int(p), float(s), float(e)) for p, s, e in measured]
    _timeline_panel(axes[0], pids, measured, labels, colors, "Medido: uma linha por processo")
    axes[0].set_yticks(range(len(pids)), [f"PID {p}" for p in pids])
    if simulated is not None:
        simulated = [(int(c), float(s), float(e)) for c, s, e in simulated]
        cores = sorted({c for c, _, _ in simulated})
        _timeline_panel(axes[1], cores, simulated, labels, colors, "Fila simulada (tempos do laço)")
        axes[1].set_yticks(range(len(cores)), [f"núcleo {c}" for c in cores])
    fig.tight_layout()
    return fig


def plot_worker_timelines(panels: Mapping[str, Sequence[Sequence[float]]], labels) -> Any:
    """Lição 03: um painel por modo de distribuir os mesmos jobs (``panels``: título → barras
    ``(pid, início, fim)``, na ordem dos jobs e dos ``labels``), uma linha por processo."""
    import matplotlib.pyplot as plt

    labels = [str(label) for label in labels]
    palette = plt.get_cmap("tab10").colors
    colors = {label: palette[i % len(palette)] for i, label in enumerate(dict.fromkeys(labels))}
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 3.6), sharex=True)
    for ax, (title, bars) in zip(np.atleast_1d(axes), panels.items(), strict=True):
        bars = [(int(p), float(s), float(e)) for p, s, e in bars]
        pids = list(dict.fromkeys(p for p, _, _ in sorted(bars, key=lambda b: b[1])))
        _timeline_panel(ax, pids, bars, labels, colors, title)
        ax.set_yticks(range(len(pids)), [f"PID {p}" for p in pids])
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------- lição 05
@dataclass
class Run:
    """Um treino: o histórico do ``fit`` (ou o seu dict), o ``EpochTimer`` e a acurácia no teste."""

    history: Any
    timer: Any
    test_accuracy: float | None = None
    num_replicas: int = 1
    global_batch: int | None = None

    @property
    def metrics(self) -> dict[str, list[float]]:
        return getattr(self.history, "history", self.history)


def plot_training(runs: dict[str, Run]) -> Any:
    """Uma figura com 4 painéis: perda, acurácia, segundos por época e imagens/s por época."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    panels = [
        (axes[0, 0], "perda de treino", lambda r: r.metrics["loss"]),
        (axes[0, 1], "acurácia de treino", lambda r: r.metrics["accuracy"]),
        (axes[1, 0], "segundos por época", lambda r: r.timer.epoch_seconds),
        (axes[1, 1], "imagens por segundo", lambda r: r.timer.images_per_second),
    ]
    for ax, title, values in panels:
        for name, run in runs.items():
            ys = list(values(run))
            ax.plot(range(1, len(ys) + 1), ys, marker="o", label=name)
        ax.set(title=title, xlabel="época")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle("Centralizado × distribuído (mesmo modelo, mesmos dados)")
    fig.tight_layout()
    return fig


def summary_table(runs: dict[str, Run]) -> Any:
    """Tabela ``pandas``: réplicas, lote global, s/época, imagens/s e acurácia no teste."""
    import pandas as pd

    rows = []
    for name, run in runs.items():
        seconds = run.timer.epoch_seconds
        steady = seconds[1:] or seconds
        rows.append(
            {
                "abordagem": name,
                "réplicas": run.num_replicas,
                "lote global": run.global_batch,
                "1ª época (s)": seconds[0],
                "s/época (demais)": sum(steady) / len(steady),
                "imagens/s (demais)": run.timer.steady_images_per_second,
                "acurácia no teste": run.test_accuracy,
            }
        )
    return pd.DataFrame(rows).set_index("abordagem")
