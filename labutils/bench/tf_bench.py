"""Seção 3 do benchmark: TensorFlow (pipeline de entrada, MirroredStrategy, multi-worker).

O TensorFlow só deixa dividir a CPU em dispositivos lógicos antes de inicializar, e o
multi-worker precisa do ``TF_USE_LEGACY_KERAS=1`` antes do import. Por isso cada parte roda num
processo Python novo (``python -m labutils.bench.tf_bench MODO JSON``), que devolve as medidas
como JSON na última linha da saída, com um limite de tempo rígido: passou dele, o grupo de
processos inteiro é encerrado (SIGKILL) e a linha do relatório diz isso. Nunca trava.

Dados: na escala ``smoke``, o mock do tfds (imagens aleatórias). Na ``full``, o CIFAR-100 real de
``data/`` (as primeiras :func:`bench_images` imagens: o que se mede é vazão, não acurácia); sem
ele, as linhas não são medidas e o relatório diz o que falta — a não ser com ``--synthetic-data``,
que mede nas imagens aleatórias do mock, no mesmo tamanho, e diz isso em cada linha.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from labutils.bench.report import Measurement, Report
from labutils.config import pick, sizes

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
    """Roda ``python -m labutils.bench.tf_bench MODE JSON`` e devolve o JSON que ele imprime.

    Em qualquer falha devolve ``{"error": motivo}``. O processo abre um grupo próprio, encerrado
    inteiro no fim (inclusive o Ray que ele tenha iniciado), termine ele bem ou não.
    """
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "LABUTILS_SCALE": args["scale"]}
    cmd = [sys.executable, "-m", "labutils.bench.tf_bench", mode, json.dumps(args)]
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.communicate()
        return {"error": f"passou do limite de {timeout_s:g} s e foi encerrado (SIGKILL)."}
    finally:
        _kill_group(proc.pid)
    for line in reversed(out.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = " | ".join(err.strip().splitlines()[-5:])
    return {"error": f"o processo de medida terminou com código {proc.returncode}: {tail}"}


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _add_rows(report: Report, local: dict[str, Any], multi: dict[str, Any]) -> None:
    results = {**local.get("results", {}), **multi.get("results", {})}
    errors = {**local.get("errors", {}), **multi.get("errors", {})}
    for key in ROWS:
        if key in results:
            continue
        err = errors.get(key) or (local if key.startswith(("pipe", "fit")) else multi).get("error")
        report.skip(*ROWS[key], err or "não medido (sem motivo registrado)")

    def median(key: str) -> float:
        values = sorted(results[key])
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2

    def add(key, base=None, bound=None, note=""):
        if key not in results:
            return
        speedup = median(key) / median(base) if base and base in results else None
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
    if kind == "gpu":
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
    from labutils.tf.timing import EpochTimer

    timer = EpochTimer(n)
    model.fit(dataset, epochs=repeats + 1, callbacks=[timer], verbose=0)
    return timer.images_per_second[1:]  # a 1ª época compila o grafo


def measure_local(args: dict[str, Any]) -> dict[str, Any]:
    """Pipeline, treino centralizado e MirroredStrategy, num processo só."""
    import warnings

    from labutils.tf.devices import setup_devices

    devices = setup_devices(logical_cpus=2)
    import tensorflow as tf

    from labutils.tf.data import SHUFFLE_BUFFER, get_data, global_batch_size
    from labutils.tf.data import normalize_images as scale
    from labutils.tf.model import create_model

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
    return {"meta": meta, "results": results}


def _multiworker_loop(config: dict[str, Any]) -> None:
    """Corpo de cada worker do Ray Train (o ``TF_USE_LEGACY_KERAS=1`` já veio no runtime_env)."""
    import ray.train
    import tensorflow as tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # antes de qualquer outra op do TF
    from labutils.tf.data import get_data
    from labutils.tf.model import create_model

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
        "threads": int(os.environ.get("OMP_NUM_THREADS") or len(os.sched_getaffinity(0))),
        "node_cores": len(os.sched_getaffinity(0)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, f"bench_{info['rank']}.json").write_text(json.dumps(info), encoding="utf-8")
        ray.train.report({"done": 1}, checkpoint=ray.train.Checkpoint.from_directory(tmp))


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
        for workers in (1, 2):
            key = f"mw_{workers}"
            try:
                plan = multiworker.plan_workers(workers, cpus_per_worker=cpus)
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
                result = multiworker.run_trainer(trainer, timeout_s=args["fit_timeout_s"])
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

    mode, args = argv[0], json.loads(argv[1])
    measure = {"local": measure_local, "multiworker": measure_multiworker}[mode]
    try:
        out = measure(args)
    except DatasetUnavailableError as err:
        out = {"error": "DatasetUnavailableError: " + " ".join(str(err).split())}
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
