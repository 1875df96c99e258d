"""A CNN do laboratório para o CIFAR-100, com um par saída/perda coerente.

Escrito com ``tf.keras`` (não ``import keras``): o mesmo código dá um modelo Keras 3 normalmente
e um modelo ``tf_keras`` quando ``TF_USE_LEGACY_KERAS=1`` (lição 07, ``MultiWorkerMirrored``).

O par escolhido: a última camada tem ``softmax`` (o modelo devolve probabilidades) e a perda é
``SparseCategoricalCrossentropy(from_logits=False)`` (espera probabilidades). O roteiro original
usava ``from_logits=True`` depois da softmax, o que diz à perda que recebe valores crus (logits)
quando recebe probabilidades.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

#: tamanho das imagens do CIFAR-100 (altura, largura, canais)
INPUT_SHAPE = (32, 32, 3)


def create_model(
    num_classes: int = 100, *, learning_rate: float = 1e-3, compile: bool = True
) -> tf.keras.Model:
    """Cria e compila a CNN: Conv2D 32/64/64 com pooling, Dense 64 e Dense ``num_classes``.

    Chame dentro de ``strategy.scope()`` para o treino distribuído: as variáveis do modelo e do
    otimizador precisam nascer dentro do escopo para serem espelhadas nas réplicas.
    ``compile=False`` devolve a rede sem compilar (o exercício da lição 07 compila à parte).
    """
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes deve ser um inteiro >= 2, recebi {num_classes!r}.")
    if (
        isinstance(learning_rate, bool)
        or not isinstance(learning_rate, int | float)
        or not (0 < learning_rate < 1)
    ):
        raise ValueError(f"learning_rate deve ser um número entre 0 e 1, recebi {learning_rate!r}.")
    layers = tf.keras.layers
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=INPUT_SHAPE),
            layers.Conv2D(32, (3, 3), activation="relu"),
            layers.MaxPooling2D((2, 2)),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.MaxPooling2D((2, 2)),
            layers.Conv2D(64, (3, 3), activation="relu"),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(num_classes, activation="softmax"),  # 100 classes no CIFAR-100
        ]
    )
    if compile:
        compile_model(model, learning_rate=learning_rate)
    return model


def compile_model(model: tf.keras.Model, *, learning_rate: float = 1e-3) -> tf.keras.Model:
    """Compila com Adam, ``SparseCategoricalCrossentropy(from_logits=False)`` e acurácia."""
    model.compile(
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=False),
        optimizer=tf.keras.optimizers.Adam(learning_rate=learning_rate),
        metrics=["accuracy"],
    )
    return model


#: nome do arquivo do modelo treinado na lição 05 (lido pela inferência em lote, lição 06)
LESSON_MODEL_NAME = "cifar100_cnn.keras"


def lesson_model_path() -> Path:
    """Onde a lição 05 grava o modelo treinado: ``results_dir()/modelos/cifar100_cnn.keras``."""
    from labutils.config import results_dir

    return results_dir() / "modelos" / LESSON_MODEL_NAME


def save_lesson_model(model: tf.keras.Model) -> Path:
    """Grava o modelo treinado da lição 05 em :func:`lesson_model_path` e devolve o caminho."""
    if not callable(getattr(model, "save", None)):
        raise TypeError(f"save_lesson_model espera um modelo Keras, recebi {type(model).__name__}.")
    path = lesson_model_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    model.save(path)
    return path


def check_loss_activation(model: tf.keras.Model) -> str:
    """Confere se a ativação da última camada combina com o ``from_logits`` da perda.

    ``softmax`` pede ``from_logits=False``; saída linear (logits) pede ``from_logits=True``.
    Devolve uma frase de confirmação; levanta ``ValueError`` (em português) se não combinam.
    """
    activation = getattr(model.layers[-1], "activation", None)
    act_name = getattr(activation, "__name__", str(activation))
    from_logits = getattr(model.loss, "from_logits", None)
    if from_logits is None:
        config = model.loss.get_config() if hasattr(model.loss, "get_config") else {}
        from_logits = config.get("from_logits")
    if from_logits is None:
        raise ValueError(
            "Não consegui ler o from_logits da perda: compile o modelo com um objeto de perda."
        )
    if act_name == "softmax" and from_logits:
        raise ValueError(
            "Incoerência: a última camada tem softmax (devolve probabilidades), mas a perda usa "
            "from_logits=True (espera logits). Use from_logits=False ou tire a softmax."
        )
    if act_name == "linear" and not from_logits:
        raise ValueError(
            "Incoerência: a última camada é linear (devolve logits), mas a perda usa "
            "from_logits=False (espera probabilidades). Use from_logits=True ou ponha a softmax."
        )
    return f"ok: última camada '{act_name}' com from_logits={from_logits}"
