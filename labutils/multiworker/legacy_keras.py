"""O tf-keras (Keras 2) que o ``MultiWorkerMirroredStrategy`` exige no ``model.fit``.

O Keras 3 falha no ``model.fit`` sob essa estratégia (keras-team/keras#20585). O TensorFlow usa o
tf-keras em ``tf.keras`` quando ``TF_USE_LEGACY_KERAS=1`` está no ambiente ANTES do import.
"""

from __future__ import annotations

import os
import sys
from typing import Any

LEGACY_KERAS_ENV = {"TF_USE_LEGACY_KERAS": "1"}


def use_legacy_keras() -> None:
    """Faz ``tf.keras`` ser o tf-keras (Keras 2) neste processo. Chame antes de importar o TF."""
    import importlib.util

    if importlib.util.find_spec("tf_keras") is None:
        raise RuntimeError(
            "O pacote tf-keras não está instalado: `pip install tf-keras==2.21.0` "
            "(ou `make setup`). Sem ele o MultiWorkerMirroredStrategy não funciona no model.fit."
        )
    os.environ.update(LEGACY_KERAS_ENV)
    tf = sys.modules.get("tensorflow")
    if tf is not None and not getattr(tf.keras, "__name__", "").startswith("tf_keras"):
        raise RuntimeError(
            "O TensorFlow já foi importado neste kernel com o Keras 3, e TF_USE_LEGACY_KERAS só "
            "vale se definida ANTES do import. Reinicie o kernel (Kernel → Restart) e rode as "
            "células a partir do início."
        )


def runtime_env() -> dict[str, Any]:
    """``runtime_env`` do Ray para os workers: a variável chega antes do import do TF."""
    return {"env_vars": dict(LEGACY_KERAS_ENV)}
