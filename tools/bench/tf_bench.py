"""Seção do benchmark: TensorFlow (pipeline de entrada, MirroredStrategy, multi-worker).

O TensorFlow só divide a CPU em dispositivos lógicos antes de inicializar, e o multi-worker
precisa do ``TF_USE_LEGACY_KERAS=1`` antes do import: cada parte roda num processo novo
(``python -m tools.bench.tf_bench local|multiworker JSON``, :func:`tools.bench.run_measure`).
Dados: o mock do tfds na escala ``smoke``; na ``full``, as primeiras imagens do CIFAR-100 de
``data/`` (mede-se vazão, não acurácia), ou os SINTÉTICOS com ``--synthetic-data``.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from typing import Any

from labutils.config import pick, sizes
from labutils.system import usable_cpus
from tools.bench import measure_main, run_measure
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


def run(report: Report, repeats: int, scale: str) -> None:
    """Mede as três partes, cada uma num processo novo, e acrescenta as linhas ao relatório."""
    # o limite rígido de cada processo de medida inclui importar o TF e iniciar o Ray
    timeout = pick(full=1800.0, smoke=420.0, scale=scale)
    args = {
        "scale": scale,
        "repeats": repeats,
        # imagens de treino de cada medida de vazão
        "images": pick(full=10_000, smoke=sizes("smoke").cifar_train_examples or 512, scale=scale),
        "batch_per_replica": sizes(scale).batch_per_replica,
    }
    local = run_measure("tf_bench", "local", args, scale=scale, timeout=timeout)
    if "DatasetUnavailable" in local.get("error", ""):  # os mesmos dados faltariam nos workers
        multi = local
    else:
        multi = run_measure("tf_bench", "multiworker", args, scale=scale, timeout=timeout)
    _add_rows(report, local, multi)


def _add_rows(report: Report, local: dict[str, Any], multi: dict[str, Any]) -> None:
    results = {**local.get("results", {}), **multi.get("results", {})}
    errors = {**local.get("errors", {}), **multi.get("errors", {})}
    meta, mmeta = local.get("meta", {}), multi.get("meta", {})
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
    gpus1, gpus2 = mmeta.get("gpus_1", 0), mmeta.get("gpus_2", 0)
    cores1, cores2 = mmeta.get("cores_1", 1), mmeta.get("cores_2", 1)
    if gpus1 and gpus2:
        workers_bound, workers_why = gpus2 / gpus1, f"{gpus2} GPU(s) contra {gpus1}"
    else:
        workers_bound = cores2 / cores1 if cores1 else None
        workers_why = (
            f"núcleos ocupáveis {cores2} contra {cores1} (por nó: min(núcleos, Σ threads))"
        )
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
        "mw_1": (None, None, f"Ray Train, {mmeta.get('cpus_per_worker', '?')} CPU reservada por "
                 f"worker, que o Ray traduz em OMP_NUM_THREADS={mmeta.get('threads_1', '?')}; "
                 f"{mmeta.get('source', '')}"),
        "mw_2": ("mw_1", workers_bound, f"os 2 workers em {mmeta.get('nodes_2', '?')} nó(s); "
                 f"limite = {workers_why}; speedup sobre 1 worker"),
    }  # fmt: skip
    for key, (base, bound, note) in plan.items():
        section, approach = ROWS[key]
        if key not in results:
            err = errors.get(key) or (multi if key.startswith("mw") else local).get("error")
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


def _multiworker_loop(config: dict[str, Any]) -> None:
    """Corpo de cada worker do Ray Train (o ``TF_USE_LEGACY_KERAS=1`` já veio no runtime_env)."""
    import ray.train
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # antes de qualquer outra op do TF
    from labutils import multiworker
    from labutils.lesson05 import create_model, get_data

    train, n, source = load_train(config["scale"], config["images"])
    global_batch = config["batch_per_replica"] * strategy.num_replicas_in_sync
    dataset, _ = get_data(train, train, global_batch=global_batch, seed=42)
    options = tf.data.Options()  # cada worker tem os dados todos: fatiar por elementos
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    with strategy.scope():
        model = create_model()
    ips = _fit(model, dataset.with_options(options), n, config["repeats"])
    omp = os.environ.get("OMP_NUM_THREADS", "")
    info = {
        **multiworker.describe_worker(model, global_batch),  # o rank e o nó (node_id)
        "ips": ips,
        "source": source,
        "gpus": len(tf.config.list_physical_devices("GPU")),
        # o Ray limita as threads de cálculo ao que a tarefa reservou (OMP_NUM_THREADS)
        "threads": int(omp) if omp.isdigit() else usable_cpus(),
        "node_cores": usable_cpus(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        multiworker.write_worker(tmp, info)
        ray.train.report({"done": 1}, checkpoint=ray.train.Checkpoint.from_directory(tmp))


def measure_multiworker(args: dict[str, Any]) -> dict[str, Any]:
    """Ray Train ``TensorflowTrainer`` com 1 e com 2 workers."""
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.tensorflow import TensorflowTrainer

    from labutils import multiworker
    from labutils.raytools import init_ray

    init_ray(runtime_env=multiworker.runtime_env(), dashboard=False)
    results, errors, meta = {}, {}, {}
    storage = tempfile.mkdtemp(prefix="labutils-bench-train-")
    try:
        cpus = min(1.0, float(ray.cluster_resources().get("CPU", 0)) / 4) or 0.5
        meta["cpus_per_worker"] = cpus
        # o mesmo dispositivo nos dois treinos: com 1 GPU, o de 1 worker a usaria e o de 2 não
        use_gpu = multiworker.plan_workers(2, cpus_per_worker=cpus).use_gpu
        for workers in (1, 2):
            key = f"mw_{workers}"
            try:
                plan = multiworker.plan_workers(workers, use_gpu=use_gpu, cpus_per_worker=cpus)
                trainer = TensorflowTrainer(
                    _multiworker_loop,
                    train_loop_config=args,
                    scaling_config=ScalingConfig(num_workers=workers, use_gpu=plan.use_gpu,
                                                 resources_per_worker=plan.resources_per_worker),
                    run_config=RunConfig(name=f"bench-{workers}w", storage_path=storage),
                )  # fmt: skip
                infos = multiworker.read_workers(trainer.fit().checkpoint)  # em ordem de rank
                by_node: dict[str, list[dict[str, Any]]] = {}
                for info in infos:
                    by_node.setdefault(info["node_id"], []).append(info)
                results[key], meta["source"] = infos[0]["ips"], infos[0]["source"]
                meta[f"nodes_{workers}"] = len(by_node)
                meta[f"threads_{workers}"] = infos[0]["threads"]
                # núcleos que os workers conseguem ocupar juntos: por nó, min(núcleos, Σ threads)
                meta[f"cores_{workers}"] = sum(min(g[0]["node_cores"], sum(i["threads"] for i in g))
                                               for g in by_node.values())  # fmt: skip
                meta[f"gpus_{workers}"] = sum(i["gpus"] for i in infos) if plan.use_gpu else 0
            except Exception as err:  # um treino que falha não apaga os outros
                errors[key] = f"{type(err).__name__}: {' '.join(str(err).split())[:400]}"
    finally:
        ray.shutdown()
    return {"meta": meta, "results": results, "errors": errors}


if __name__ == "__main__":
    modes = {"local": measure_local, "multiworker": measure_multiworker}
    raise SystemExit(measure_main(modes[sys.argv[1]], sys.argv[2]))
