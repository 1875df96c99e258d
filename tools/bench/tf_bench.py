"""Seção do benchmark: TensorFlow (pipeline de entrada, MirroredStrategy).

O TensorFlow só divide a CPU em dispositivos lógicos antes de inicializar: a medida roda num
processo novo (``python -m tools.bench.tf_bench local JSON``, :func:`tools.bench.run_measure`).
1 × 2 workers do Ray Train (``MultiWorkerMirroredStrategy``) não são medidos aqui: a própria
lição 07 os mede, e o ensaio (``make rehearsal``) registra o tempo de cada célula dela.
Dados: o mock do tfds na escala ``smoke``; na ``full``, as primeiras imagens do CIFAR-100 de
``data/`` (mede-se vazão, não acurácia), ou os SINTÉTICOS com ``--synthetic-data``.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from labutils.config import pick, sizes
from tools.bench import measure_main, run_measure
from tools.bench.report import Measurement, Report

PIPELINE = "TensorFlow: pipeline de entrada"
TRAIN = "TensorFlow: treino"
IPS = "imagens/s"
#: onde está a medida que saiu daqui (o relatório a nomeia)
LESSON_07 = (
    "medido pela própria lição 07 (o exemplo com 1 e 2 workers), não aqui; o tempo de cada "
    "célula dela está no ensaio (docs/ensaio/ensaio.md, `make rehearsal`)"
)

ROWS = {
    "pipe_plain": (PIPELINE, "map + shuffle + batch (sem cache nem prefetch)"),
    "pipe_cached": (PIPELINE, "get_data: + cache + prefetch"),
    "fit_plain": (TRAIN, "centralizado, pipeline sem cache nem prefetch"),
    "fit_central": (TRAIN, "centralizado (get_data)"),
    "fit_mirrored": (TRAIN, "MirroredStrategy"),
}


def run(report: Report, repeats: int, scale: str) -> None:
    """Mede o pipeline e o treino num processo novo e acrescenta as linhas ao relatório."""
    # o limite rígido de cada processo de medida inclui importar o TF e iniciar o Ray
    timeout = pick(full=1800.0, smoke=420.0, scale=scale)
    args = {
        "scale": scale,
        "repeats": repeats,
        # imagens de treino de cada medida de vazão
        "images": pick(full=10_000, smoke=sizes("smoke").cifar_train_examples or 512, scale=scale),
        "batch_per_replica": sizes(scale).batch_per_replica,
    }
    _add_rows(report, run_measure("tf_bench", "local", args, scale=scale, timeout=timeout))
    report.skip("TensorFlow: multi-worker (Ray Train)", "1 × 2 workers", LESSON_07)


def _add_rows(report: Report, local: dict[str, Any]) -> None:
    results, errors, meta = local.get("results", {}), local.get("errors", {}), local.get("meta", {})
    kind, replicas = meta.get("device_kind", "cpu"), meta.get("replicas", 1)
    physical = meta.get("physical", replicas)
    if kind == "gpu" and physical < replicas:
        mirrored_bound = float(physical)
        mirrored_why = f"{physical} GPU física(s) em {replicas} réplicas: limite {physical}x"
    elif kind == "gpu":
        mirrored_bound, mirrored_why = float(replicas), f"{replicas} GPU(s): uma réplica por GPU"
    else:
        mirrored_bound = 1.0
        mirrored_why = f"{replicas} CPUs lógicas sobre os mesmos núcleos: limite 1x"
    # a linha de base do speedup, o limite e a nota de cada linha
    plan = {
        "pipe_plain": (None, None, "só lê o dataset, sem modelo; 1ª passada fora; "
                       f"{meta.get('images')} imagens: {meta.get('source', '')}"),
        "pipe_cached": ("pipe_plain", None, "speedup sobre o pipeline sem cache nem prefetch"),
        "fit_plain": (None, None, "cada repetição = uma época depois da 1ª (compilação do grafo)"),
        "fit_central": ("fit_plain", None,
                        "linha de base do treino; speedup sobre o pipeline simples"),
        "fit_mirrored": ("fit_central", mirrored_bound,
                         f"{replicas} réplicas; {mirrored_why}; speedup sobre centralizado"),
    }  # fmt: skip
    for key, (base, bound, note) in plan.items():
        section, approach = ROWS[key]
        if key not in results:
            err = errors.get(key) or local.get("error")
            report.skip(section, approach, err or "não medido (sem motivo registrado)")
            continue
        speedup = None
        if base in results:
            speedup = statistics.median(results[key]) / statistics.median(results[base])
        report.add(Measurement(section, approach, IPS, results[key], speedup, bound, note))


def load_train(scale: str, images: int) -> tuple[Any, int, str]:
    """``(dataset de treino, número de imagens, fonte)``; levanta ``DatasetUnavailableError``."""
    from labutils.data import load_cifar100

    cifar = load_cifar100(scale, download=False)
    n = min(images, cifar.num_train)
    return cifar.train.take(n), n, f"{cifar.source}, primeiras {n} imagens"


def _images_per_second(dataset: Any, n: int, passes: int) -> list[float]:
    """Percorre o dataset ``1 + passes`` vezes; a 1ª (que enche o cache) fica de fora."""
    out = []
    for i in range(passes + 1):
        start = time.perf_counter()
        for _ in dataset:
            pass
        if i:
            out.append(n / (time.perf_counter() - start))
    return out


def _fit(model: Any, dataset: Any, n: int, repeats: int) -> list[float]:
    from labutils.tf import EpochTimer

    timer = EpochTimer(n)
    model.fit(dataset, epochs=repeats + 1, callbacks=[timer], verbose=0)
    return timer.images_per_second[1:]  # a 1ª época compila o grafo


def measure_local(args: dict[str, Any]) -> dict[str, Any]:
    """Pipeline, treino centralizado e MirroredStrategy (lição 05), num processo só."""
    import warnings

    from labutils.lesson05 import SHUFFLE_BUFFER, create_model, get_data, global_batch_size
    from labutils.lesson05 import normalize_images as scale
    from tools.lesson_code import load

    devices = load("05_tensorflow_mirrored").setup_devices(logical_cpus=2)
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    warnings.filterwarnings("ignore", message=".*`shuffle=True` was passed.*")
    train, n, source = load_train(args["scale"], args["images"])
    repeats, bpr = args["repeats"], args["batch_per_replica"]
    tf.keras.utils.set_random_seed(42)
    plain = (train.map(scale, num_parallel_calls=tf.data.AUTOTUNE)
             .shuffle(SHUFFLE_BUFFER, seed=42).batch(global_batch_size(bpr, 1)))  # fmt: skip
    cached, _ = get_data(train, train, num_replicas=1, batch_per_replica=bpr, seed=42)
    results = {
        "pipe_plain": _images_per_second(plain, n, repeats),
        "pipe_cached": _images_per_second(cached, n, repeats),
        "fit_plain": _fit(create_model(), plain, n, repeats),
        "fit_central": _fit(create_model(), cached, n, repeats),
    }
    strategy = tf.distribute.MirroredStrategy()
    replicas = strategy.num_replicas_in_sync
    mirrored, _ = get_data(train, train, num_replicas=replicas, batch_per_replica=bpr, seed=42)
    with strategy.scope():
        model = create_model()
    results["fit_mirrored"] = _fit(model, mirrored, n, repeats)
    meta = {
        "images": n,
        "source": source,
        "device_kind": devices.kind,
        "replicas": replicas,
        "physical": len(devices.physical),
    }  # fmt: skip (uma GPU em 2 réplicas conta 1)
    return {"meta": meta, "results": results}


if __name__ == "__main__":
    raise SystemExit(measure_main(measure_local, sys.argv[2]))
