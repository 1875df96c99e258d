"""Lição 06, o que não é o assunto dela: o modelo (carregar ou treinar), as imagens (arrays,
Parquet), a conferência das previsões e se um pool cabe nas CPUs. Os workers não chamam o tfds.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from labutils.config import sizes
from labutils.system import usable_cores

IMAGE_SHAPE = (32, 32, 3)
#: previsões: ``(rótulos int64, confiança float32)``, uma linha por imagem
Preds = tuple[np.ndarray, np.ndarray]
#: CPUs deixadas livres para as tarefas de leitura e gravação do Ray Data
IO_CPUS = 1.0


def load_or_train(scale: str | None = None, *, path: Path | None = None) -> tuple[Any, str]:
    """``(modelo, de onde veio)``: o da lição 05 se existir; senão um treino rápido, salvo à parte."""
    import tensorflow as tf

    from labutils.lesson05 import create_model, get_data
    from labutils.tf import lesson_model_path, save_lesson_model

    size = sizes(scale)
    path = Path(path) if path else lesson_model_path()
    quick = path.with_name(f"{path.stem}_rapido_{size.scale}.keras")
    for found, origin in ((path, "salvo pela lição 05"), (quick, "do treino rápido anterior")):
        try:  # arquivo ausente, truncado ou de outra versão: segue para o próximo / treina
            return tf.keras.models.load_model(found, compile=False), f"modelo {origin}: {found}"
        except Exception:  # noqa: S112
            continue
    from labutils.data import load_cifar100

    cifar = load_cifar100(size.scale)
    tf.keras.utils.set_random_seed(0)
    train, _ = get_data(cifar.train, cifar.test, batch_per_replica=size.batch_per_replica, seed=0)
    model = create_model(cifar.num_classes)
    with warnings.catch_warnings():  # o get_data já embaralha; o aviso do fit não se aplica
        warnings.filterwarnings("ignore", message=".*`shuffle=True` was passed.*")
        model.fit(train, epochs=size.inference_train_epochs, verbose=0)
    save_lesson_model(model, quick)
    return model, (
        f"{path} não existe (rode a lição 05 antes para usar o modelo dela): treinei "
        f"{size.inference_train_epochs} época(s) rápida(s) em {cifar.num_train} imagens "
        f"e salvei em {quick}"
    )


@dataclass
class Images:
    """Imagens ``uint8`` N×32×32×3 do conjunto de teste, e o fluxo (o teste repetido)."""

    test: np.ndarray
    test_labels: np.ndarray
    stream: np.ndarray
    source: str


def load_images(scale: str | None = None) -> Images:
    """Teste do CIFAR-100 como arrays (``load_cifar100``) e um fluxo de ``inference_images``."""
    import tensorflow_datasets as tfds

    from labutils.data import load_cifar100

    size = sizes(scale)
    cifar = load_cifar100(size.scale, download=False)
    parts = list(tfds.as_numpy(cifar.test.batch(1024)))
    x = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts]).astype(np.int64)
    index = np.arange(size.inference_images) % len(x)
    return Images(x, y, x[index], cifar.source)


def write_image_files(images: np.ndarray, folder: Path, files: int) -> Path:
    """As imagens em ``files`` Parquet (``id``, ``image`` em bytes, sem dicionário)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.parquet"):
        old.unlink()
    ids = np.arange(len(images))
    for k, part in enumerate(np.array_split(ids, files)):
        column = pa.array([images[i].tobytes() for i in part], type=pa.binary())
        table = pa.table({"id": part, "image": column})
        pq.write_table(table, folder / f"imagens-{k:04d}.parquet", use_dictionary=False)
    return folder


def decode(column: Any) -> np.ndarray:
    """Bytes de cada imagem (coluna ``image`` do Parquet) → array ``uint8`` N×32×32×3."""
    return np.frombuffer(b"".join(column), dtype=np.uint8).reshape(-1, *IMAGE_SHAPE)


def plan_pool(wanted: int | None, cpus_per_actor: float = 1.0, *, reserve: float = 0.0) -> int:
    """Quantos atores de ``cpus_per_actor`` CPUs cabem nas CPUs livres, deixando ``reserve``
    (``wanted=None``: todos os que couberem, esperando até 10 s as CPUs recém-liberadas); se
    cabem menos que ``wanted``, ``RuntimeError`` em vez de esperar para sempre."""
    import ray

    from labutils.raytools import wait_for_free

    total = float(ray.cluster_resources().get("CPU", 0.0))
    # sem um número pedido, o pool inteiro: ray.available_resources() demora a ver as CPUs
    # que acabaram de ser liberadas, e ler uma vez só daria um pool menor por acaso
    need = wanted or max(1, math.floor((total - reserve) / cpus_per_actor + 1e-9))
    cpus = need * cpus_per_actor + reserve
    _, free_now = wait_for_free({"CPU": cpus}, 10.0 if cpus <= total + 1e-9 else 0.0)
    free = float(free_now.get("CPU", 0.0))
    fits = math.floor((free - reserve) / cpus_per_actor + 1e-9)
    if wanted is None and fits >= 1:
        return min(fits, need)
    if fits < need:
        extra = f" (mais {reserve:g} para ler e gravar)" if reserve else ""
        raise RuntimeError(
            f"O pool pede {need} ator(es) × {cpus_per_actor:g} CPU{extra}, mas há {free:g} CPU(s) "
            f"livre(s) de {total:g} no cluster: os atores esperariam para sempre. Peça menos "
            "atores ou menos CPUs por ator, encerre atores anteriores (ray.kill) ou junte mais nós."
        )
    return wanted


def data_actor_cpus(actors: int, reserve: float = IO_CPUS) -> float:
    """CPUs de cada ator do Ray Data: até 1, deixando ``reserve`` para ler e gravar."""
    import ray

    total = float(ray.cluster_resources().get("CPU", 0.0))
    return max(0.05, min(1.0, round((total - reserve) / actors, 2)))


def check_same_labels(reference: Preds, got: Preds, what: str) -> None:
    """``AssertionError`` se os rótulos ou a confiança de ``got`` diferem da referência (a
    confiança pega imagens trocadas mesmo se um modelo fraco dá a mesma classe a todas)."""
    (ref, ref_conf), (labels, conf) = reference, got
    if np.shape(ref) != np.shape(labels):
        raise AssertionError(f"{what}: {np.size(labels)} previsões, esperava {np.size(ref)}.")
    wrong = np.flatnonzero((np.asarray(ref) != labels) | ~np.isclose(ref_conf, conf, rtol=1e-4))
    if wrong.size:
        raise AssertionError(
            f"{what}: {wrong.size} de {np.size(ref)} previsões diferem do processo único "
            f"(primeiros índices: {wrong[:5].tolist()})."
        )


def cores_bound(workers: int, threads_per_worker: int, baseline_threads: int = 1) -> float:
    """Maior speedup sobre a linha de base nesta máquina: núcleos físicos ocupáveis / os da linha
    de base (:func:`~labutils.system.usable_cores`: com SMT, as CPUs lógicas a mais não contam)."""
    cores = usable_cores()
    return min(cores, workers * threads_per_worker) / min(cores, baseline_threads)
