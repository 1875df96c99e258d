"""Seção 3 do benchmark: TensorFlow (pipeline de entrada, MirroredStrategy, multi-worker).

O TensorFlow só deixa dividir a CPU em dispositivos lógicos antes de inicializar, e o
multi-worker precisa do ``TF_USE_LEGACY_KERAS=1`` antes do import. Por isso cada parte roda num
processo Python novo (``python -m tools.bench.tf_measure MODO JSON``), que devolve as medidas
como JSON na última linha da saída, com um limite de tempo rígido: passou dele, o grupo de
processos inteiro é encerrado (SIGKILL) e a linha do relatório diz isso. Nunca trava.

Dados: na escala ``smoke``, o mock do tfds (imagens aleatórias). Na ``full``, o CIFAR-100 real de
``data/`` (as primeiras :func:`bench_images` imagens: o que se mede é vazão, não acurácia); sem
ele, as linhas não são medidas e o relatório diz o que falta — a não ser com ``--synthetic-data``,
que mede nas imagens aleatórias do mock, no mesmo tamanho, e diz isso em cada linha.
"""

from __future__ import annotations

import statistics
from typing import Any

from labutils.config import pick, sizes
from tools.bench import run_measure
from tools.bench.report import Measurement, Report

PIPELINE = "TensorFlow: pipeline de entrada"
TRAIN = "TensorFlow: treino"
MULTI = "TensorFlow: multi-worker (Ray Train)"
IPS = "imagens/s"

ROWS = {
    "pipe_plain": (PIPELINE, "map + shuffle + batch (sem cache nem prefetch)"),
    "pipe_cached": (PIPELINE, "get_data: + cache + prefetch"),
    "fit_plain": (TRAIN, "centralizado, pipeline sem cache nem prefetch"),
    "fit_central": (TRAIN, "centralizado (get_data)"),
    "fit_mirrored": (TRAIN, "MirroredStrategy"),
    "mw_1": (MULTI, "MultiWorkerMirrored, 1 worker"),
    "mw_2": (MULTI, "MultiWorkerMirrored, 2 workers"),
}


def bench_images(scale: str) -> int:
    """Quantas imagens de treino cada medida de vazão usa."""
    return pick(full=10_000, smoke=sizes("smoke").cifar_train_examples or 512, scale=scale)


def subprocess_timeout_s(scale: str) -> float:
    """Limite rígido de cada processo de medida (inclui importar o TF e iniciar o Ray)."""
    return pick(full=1800.0, smoke=420.0, scale=scale)


# ---------------------------------------------------------------- lado do benchmark


def run(report: Report, repeats: int, scale: str, *, synthetic: bool = False) -> None:
    """Mede as três partes, cada uma num processo novo, e acrescenta as linhas ao relatório."""
    args = {
        "scale": scale,
        "repeats": repeats,
        "images": bench_images(scale),
        "batch_per_replica": sizes(scale).batch_per_replica,
        "synthetic": synthetic,
        "fit_timeout_s": subprocess_timeout_s(scale) / 2 - 30,
    }
    local = spawn("local", args, subprocess_timeout_s(scale))
    if "DatasetUnavailable" in local.get("error", ""):  # os mesmos dados faltariam nos workers
        multi = local
    else:
        multi = spawn("multiworker", args, subprocess_timeout_s(scale))
    _add_rows(report, local, multi)


def spawn(mode: str, args: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """``python -m tools.bench.tf_measure MODE JSON`` (:func:`tools.bench.run_measure`)."""
    return run_measure("tf_measure", mode, args, scale=args["scale"], timeout=timeout_s)


def _add_rows(report: Report, local: dict[str, Any], multi: dict[str, Any]) -> None:
    results = {**local.get("results", {}), **multi.get("results", {})}
    errors = {**local.get("errors", {}), **multi.get("errors", {})}
    for key in ROWS:
        if key in results:
            continue
        err = errors.get(key) or (local if key.startswith(("pipe", "fit")) else multi).get("error")
        report.skip(*ROWS[key], err or "não medido (sem motivo registrado)")

    def add(key, base=None, bound=None, note=""):
        if key not in results:
            return
        speedup = (
            statistics.median(results[key]) / statistics.median(results[base])
            if base and base in results
            else None
        )
        section, approach = ROWS[key]
        report.add(Measurement(section, approach, IPS, results[key], speedup, bound, note, True))

    meta = local.get("meta", {})
    source = meta.get("source", "")
    n = meta.get("images")
    add("pipe_plain", note=f"só lê o dataset, sem modelo; 1ª passada fora; {n} imagens: {source}")
    add("pipe_cached", "pipe_plain", note="speedup sobre o pipeline sem cache nem prefetch")
    add("fit_plain", note="cada repetição = uma época depois da 1ª (compilação do grafo)")
    add(
        "fit_central", "fit_plain", note="linha de base do treino; speedup sobre o pipeline simples"
    )
    kind, replicas = meta.get("device_kind", "cpu"), meta.get("replicas", 1)
    physical = meta.get("physical", replicas)
    if kind == "gpu" and physical < replicas:
        bound, why = (
            float(physical),
            f"{physical} GPU física(s) em {replicas} réplicas: limite {physical}x",
        )
    elif kind == "gpu":
        bound, why = float(replicas), f"{replicas} GPU(s): uma réplica por GPU"
    else:
        bound, why = 1.0, f"{replicas} CPUs lógicas sobre os mesmos núcleos: limite 1x"
    add(
        "fit_mirrored",
        "fit_central",
        bound,
        f"{replicas} réplicas; {why}; speedup sobre centralizado",
    )
    mmeta = multi.get("meta", {})
    threads = mmeta.get("threads_1", "?")
    add(
        "mw_1",
        note=f"Ray Train, {mmeta.get('cpus_per_worker', '?')} CPU reservada por worker, que o Ray "
        f"traduz em OMP_NUM_THREADS={threads}; {mmeta.get('source', '')}",
    )
    gpus1, gpus2 = mmeta.get("gpus_1", 0), mmeta.get("gpus_2", 0)
    if gpus1 and gpus2:
        bound2, why = gpus2 / gpus1, f"{gpus2} GPU(s) contra {gpus1}"
    else:
        cores1, cores2 = mmeta.get("cores_1", 1), mmeta.get("cores_2", 1)
        bound2 = cores2 / cores1 if cores1 else None
        why = f"núcleos ocupáveis {cores2} contra {cores1} (por nó: min(núcleos, Σ threads))"
    add(
        "mw_2",
        "mw_1",
        bound2,
        f"os 2 workers em {mmeta.get('nodes_2', '?')} nó(s); limite = {why}; speedup sobre 1 worker",
    )


# ---------------------------------------------------------------- lado do processo de medida
