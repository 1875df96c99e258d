"""Pipeline ``tf.data`` do CIFAR-100: normalização, lotes e a validação separada do treino.

Usado pela lição 05 (``MirroredStrategy``) e pelos workers da lição 07 (``MultiWorkerMirrored``):
por isso :func:`get_data` recebe o número de réplicas (ou o lote global) explicitamente, sem
depender de um objeto de estratégia.

A regra central: numa estratégia síncrona, o lote que o ``fit`` recebe é o lote **global**, que a
estratégia divide entre as réplicas. Para cada réplica continuar vendo ``batch_per_replica``
exemplos por passo, o lote global é ``batch_per_replica × num_replicas``.
"""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

#: tamanho do buffer de embaralhamento (o do roteiro original)
SHUFFLE_BUFFER = 10_000


def normalize_images(image, label):
    """Converte a imagem ``uint8`` (0–255) em ``float32`` no intervalo [0, 1]; o rótulo não muda.

    (No roteiro original esta função se chamava ``scale``; o nome mudou para não confundir com a
    escala das lições, ``LABUTILS_SCALE``.)
    """
    image = tf.cast(image, tf.float32)
    image /= 255.0
    return image, label


def _check_positive_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} deve ser um inteiro >= 1, recebi {value!r}.")


def global_batch_size(batch_per_replica: int, num_replicas: int = 1) -> int:
    """Lote global = lote por réplica × número de réplicas (com mensagens claras se inválidos)."""
    _check_positive_int("batch_per_replica", batch_per_replica)
    _check_positive_int("num_replicas", num_replicas)
    return batch_per_replica * num_replicas


def get_data(
    train: tf.data.Dataset,
    test: tf.data.Dataset,
    *,
    num_replicas: int = 1,
    batch_per_replica: int | None = None,
    global_batch: int | None = None,
    shuffle_buffer: int = SHUFFLE_BUFFER,
    seed: int | None = None,
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """Monta os datasets de treino e de avaliação a partir de pares ``(imagem uint8, rótulo)``.

    Lote: ``global_batch`` se for dado (ex.: calculado por quem coordena vários workers); senão
    ``batch_per_replica × num_replicas``, com ``batch_per_replica`` vindo de
    ``labutils.sizes().batch_per_replica`` quando omitido. ``num_replicas=1`` é o treino
    centralizado; ``strategy.num_replicas_in_sync`` é o distribuído.

    Treino: ``map(normalize_images)`` → ``cache()`` → ``shuffle()`` → ``batch()`` → ``prefetch()``.
    Avaliação: o mesmo, sem embaralhar.
    """
    if global_batch is None:
        if batch_per_replica is None:
            from labutils.config import sizes

            batch_per_replica = sizes().batch_per_replica
        global_batch = global_batch_size(batch_per_replica, num_replicas)
    _check_positive_int("global_batch", global_batch)
    if global_batch % num_replicas:
        raise ValueError(
            f"O lote global ({global_batch}) deve ser múltiplo do número de réplicas "
            f"({num_replicas}), para que cada réplica receba a mesma quantidade de exemplos."
        )
    _check_positive_int("shuffle_buffer", shuffle_buffer)

    autotune = tf.data.AUTOTUNE
    train_dataset = (
        train.map(normalize_images, num_parallel_calls=autotune)
        .cache()  # normaliza uma vez só; as épocas seguintes leem da memória
        .shuffle(shuffle_buffer, seed=seed)  # nova ordem a cada época
        .batch(global_batch)
        .prefetch(autotune)  # prepara o próximo lote enquanto o modelo treina
    )
    eval_dataset = (
        test.map(normalize_images, num_parallel_calls=autotune)
        .cache()
        .batch(global_batch)
        .prefetch(autotune)
    )
    return train_dataset, eval_dataset


def split_validation(
    train: tf.data.Dataset, num_examples: int, fraction: float = 0.1
) -> tuple[tf.data.Dataset, tf.data.Dataset]:
    """Separa do TREINO um conjunto de validação: ``(treino sem a validação, validação)``.

    A validação são os primeiros ``fraction × num_examples`` exemplos (a ordem do ``tfds.load``
    é fixa, então todo worker separa os mesmos). Escolhas feitas durante o treino (épocas,
    hiperparâmetros) olham a validação; o teste fica para medir o modelo final uma vez só.
    """
    _check_positive_int("num_examples", num_examples)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 < fraction < 1:
        raise ValueError(f"fraction deve ser um número entre 0 e 1, recebi {fraction!r}.")
    num_val = max(1, int(num_examples * fraction))
    if num_val >= num_examples:
        raise ValueError(
            f"Com {num_examples} exemplos não sobra treino depois de separar {num_val} para a "
            "validação: use mais exemplos ou uma fração menor."
        )
    return train.skip(num_val), train.take(num_val)
