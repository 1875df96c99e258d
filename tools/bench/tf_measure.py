"""Medidas do TensorFlow do benchmark, num processo Python novo (veja ``tf_bench``).

``python -m tools.bench.tf_measure MODO JSON`` mede ``local`` (pipeline e treino, centralizado
e com MirroredStrategy) ou ``multiworker`` (Ray Train com 1 e 2 workers) e imprime as medidas
como JSON na última linha da saída.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from labutils.system import usable_cpus


def omp_threads() -> int | None:
    """``OMP_NUM_THREADS``, se definida (quantas threads o TF/OpenMP usam por processo)."""
    value = os.environ.get("OMP_NUM_THREADS")
    return int(value) if value and value.isdigit() else None


def load_train(scale: str, images: int, synthetic: bool) -> tuple[Any, int, str]:
    """``(dataset de treino, número de imagens, fonte)``; levanta ``DatasetUnavailableError``."""
    from labutils.data import DatasetUnavailableError, load_cifar100

    if scale == "smoke":
        cifar = load_cifar100("smoke")
        n = min(images, cifar.num_train)
        return cifar.train.take(n), n, cifar.source
    try:
        cifar = load_cifar100("full", download=False)
    except DatasetUnavailableError:
        if not synthetic:
            raise
        import tensorflow_datasets as tfds

        mock_dir = Path(tempfile.gettempdir()) / "labutils-tfds-mock"
        with tfds.testing.mock_data(num_examples=images):
            train = tfds.load("cifar100", split="train", as_supervised=True, data_dir=str(mock_dir))
        source = f"imagens SINTÉTICAS (tfds.testing.mock_data, {images}): o CIFAR-100 real falta"
        return train.take(images), images, source
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
    """Pipeline, treino centralizado e MirroredStrategy, num processo só."""
    import warnings

    from labutils.lesson05 import SHUFFLE_BUFFER, create_model, get_data, global_batch_size
    from labutils.lesson05 import normalize_images as scale
    from tools.lesson_code import load

    devices = load("05_tensorflow_mirrored").setup_devices(logical_cpus=2)
    import tensorflow as tf

    tf.get_logger().setLevel("ERROR")
    warnings.filterwarnings("ignore", message=".*`shuffle=True` was passed.*")
    train, n, source = load_train(args["scale"], args["images"], args["synthetic"])
    repeats, bpr = args["repeats"], args["batch_per_replica"]
    tf.keras.utils.set_random_seed(42)

    plain = (
        train.map(scale, num_parallel_calls=tf.data.AUTOTUNE)
        .shuffle(SHUFFLE_BUFFER, seed=42)
        .batch(global_batch_size(bpr, 1))
    )
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
    meta = {"images": n, "source": source, "device_kind": devices.kind, "replicas": replicas}
    meta["physical"] = len(devices.physical)  # uma GPU dividida em 2 réplicas conta 1
    return {"meta": meta, "results": results}


def _multiworker_loop(config: dict[str, Any]) -> None:
    """Corpo de cada worker do Ray Train (o ``TF_USE_LEGACY_KERAS=1`` já veio no runtime_env)."""
    import ray.train
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # antes de qualquer outra op do TF
    from labutils.lesson05 import create_model, get_data

    train, n, source = load_train(config["scale"], config["images"], config["synthetic"])
    global_batch = config["batch_per_replica"] * strategy.num_replicas_in_sync
    dataset, _ = get_data(train, train, global_batch=global_batch, seed=42)
    options = tf.data.Options()  # cada worker tem os dados todos: fatiar por elementos
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    dataset = dataset.with_options(options)
    with strategy.scope():
        model = create_model()
    ips = _fit(model, dataset, n, config["repeats"])
    context = ray.train.get_context()
    info = {
        "rank": context.get_world_rank(),
        "ips": ips,
        "source": source,
        "node": ray.get_runtime_context().get_node_id(),
        "gpus": len(tf.config.list_physical_devices("GPU")),
        # o Ray limita as threads de cálculo ao que a tarefa reservou (OMP_NUM_THREADS)
        "threads": omp_threads() or usable_cpus(),
        "node_cores": usable_cpus(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, f"bench_{info['rank']}.json").write_text(json.dumps(info), encoding="utf-8")
        ray.train.report({"done": 1}, checkpoint=ray.train.Checkpoint.from_directory(tmp))


def fit_with_timeout(trainer: Any, timeout_s: float) -> Any:
    """``trainer.fit()`` numa thread, com prazo: ``TimeoutError`` em vez de travar a medida."""
    import threading

    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = trainer.fit()
        except BaseException as err:  # repassado a quem chamou
            box["error"] = err

    thread = threading.Thread(target=target, name="trainer.fit", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(
            f"O treino passou de {timeout_s:g} s sem terminar. Causas comuns: um worker esperando "
            "um par que nunca subiu, ou recursos ocupados. Rode `ray.shutdown()` e confira o "
            "dashboard."
        )
    if "error" in box:
        raise box["error"]
    return box["result"]


def usable_cores(infos: list[dict[str, Any]]) -> int:
    """Núcleos que os workers conseguem ocupar juntos: por nó, ``min(núcleos, Σ threads)``."""
    by_node: dict[str, list[dict[str, Any]]] = {}
    for info in infos:
        by_node.setdefault(info["node"], []).append(info)
    return sum(
        min(group[0]["node_cores"], sum(i["threads"] for i in group)) for group in by_node.values()
    )


def measure_multiworker(args: dict[str, Any]) -> dict[str, Any]:
    """Ray Train ``TensorflowTrainer`` com 1 e com 2 workers, cada treino com limite de tempo."""
    import ray
    from ray.train import RunConfig, ScalingConfig
    from ray.train.tensorflow import TensorflowTrainer

    from labutils import multiworker
    from labutils.raytools import init_ray

    init_ray(runtime_env=multiworker.runtime_env(), dashboard=False)
    results, errors, meta = {}, {}, {}
    storage = tempfile.mkdtemp(prefix="labutils-bench-train-")
    try:
        total_cpus = float(ray.cluster_resources().get("CPU", 0))
        cpus = min(1.0, total_cpus / 4) or 0.5
        meta["cpus_per_worker"] = cpus
        # o mesmo dispositivo nos dois treinos: numa máquina com 1 GPU, o plano de 1 worker a
        # usaria e o de 2 não, e o speedup compararia a GPU com a CPU
        use_gpu = multiworker.plan_workers(2, cpus_per_worker=cpus).use_gpu
        for workers in (1, 2):
            key = f"mw_{workers}"
            try:
                plan = multiworker.plan_workers(workers, use_gpu=use_gpu, cpus_per_worker=cpus)
                trainer = TensorflowTrainer(
                    _multiworker_loop,
                    train_loop_config=args,
                    scaling_config=ScalingConfig(
                        num_workers=workers,
                        use_gpu=plan.use_gpu,
                        resources_per_worker=plan.resources_per_worker,
                    ),
                    run_config=RunConfig(name=f"bench-{workers}w", storage_path=storage),
                )
                result = fit_with_timeout(trainer, args["fit_timeout_s"])
                with result.checkpoint.as_directory() as folder:
                    infos = [json.loads(p.read_text()) for p in Path(folder).glob("bench_*.json")]
                rank0 = next(i for i in infos if i["rank"] == 0)
                results[key] = rank0["ips"]
                meta["source"] = rank0["source"]
                meta[f"nodes_{workers}"] = len({i["node"] for i in infos})
                meta[f"threads_{workers}"] = rank0["threads"]
                meta[f"cores_{workers}"] = usable_cores(infos)
                meta[f"gpus_{workers}"] = sum(i["gpus"] for i in infos) if plan.use_gpu else 0
            except Exception as err:  # um treino que falha não apaga os outros
                errors[key] = f"{type(err).__name__}: {' '.join(str(err).split())[:400]}"
    finally:
        ray.shutdown()
    return {"meta": meta, "results": results, "errors": errors}


def _main(argv: list[str]) -> int:
    from labutils.data import DatasetUnavailableError
    from labutils.system import JSON_MARK

    mode, args = argv[0], json.loads(argv[1])
    measure = {"local": measure_local, "multiworker": measure_multiworker}[mode]
    try:
        out = measure(args)
    except DatasetUnavailableError as err:
        out = {"error": "DatasetUnavailableError: " + " ".join(str(err).split())}
    print(JSON_MARK + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
