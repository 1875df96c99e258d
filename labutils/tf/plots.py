"""Gráficos e tabela que comparam o treino centralizado e o distribuído (lição 05).

Cada abordagem entra como um :class:`Run`: o histórico do ``fit`` (``History`` ou o dicionário
``history.history``) e o :class:`~labutils.tf.timing.EpochTimer` usado no mesmo ``fit``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Run:
    """Resultado de um treino: histórico por época, tempos por época e acurácia no teste."""

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

    if not runs:
        raise ValueError("Nenhum treino para desenhar: passe {'nome': Run(...)}.")
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
        ax.set_title(title)
        ax.set_xlabel("época")
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
