"""Dispositivos do TensorFlow para a ``MirroredStrategy``: GPUs reais ou a CPU dividida em duas.

A ``MirroredStrategy`` cria uma réplica do modelo por dispositivo visível. Numa máquina com
várias GPUs, cada GPU é uma réplica. Numa máquina com **uma** GPU, :func:`setup_devices` a divide
em ``logical_cpus`` GPUs lógicas (cada uma com :data:`LOGICAL_GPU_MEMORY_MB` de memória); numa
máquina só com CPU, divide a CPU física em ``logical_cpus`` dispositivos lógicos. Assim a
estratégia roda de verdade com duas réplicas em qualquer máquina. Isso mostra o *mecanismo* (lote dividido, gradientes somados entre réplicas), não dá
ganho de velocidade: as duas réplicas dividem os mesmos núcleos.

Essa configuração só pode ser feita **antes** de o TensorFlow inicializar seus dispositivos (a
primeira operação, como criar um tensor ou um modelo, os inicializa). Depois disso o TensorFlow
recusa a mudança; aqui isso vira :class:`DevicesAlreadyInitializedError`, com o que fazer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

#: memória de cada GPU lógica quando uma GPU só é dividida (a rede da lição 05 usa bem menos)
LOGICAL_GPU_MEMORY_MB = 1024

#: mensagem quando os dispositivos já foram inicializados com outra configuração
_ALREADY_INITIALIZED = (
    "O TensorFlow já inicializou os dispositivos deste processo ({current} CPU(s) lógica(s)), "
    "então não dá mais para dividir a CPU em {wanted}.\n"
    "Como resolver: reinicie o kernel (Kernel > Restart) e chame setup_devices() logo no início, "
    "antes de qualquer outra operação do TensorFlow (criar tensores, modelos ou datasets)."
)


class DevicesAlreadyInitializedError(RuntimeError):
    """Os dispositivos do TensorFlow já foram inicializados com outra configuração."""


@dataclass(frozen=True)
class Devices:
    """O que :func:`setup_devices` encontrou e configurou."""

    #: ``"gpu"`` (uma réplica por GPU) ou ``"cpu"`` (CPU dividida em dispositivos lógicos)
    kind: str
    #: nomes dos dispositivos físicos relevantes (as GPUs, ou a CPU)
    physical: tuple[str, ...]
    #: nomes dos dispositivos lógicos que a ``MirroredStrategy()`` vai usar
    logical: tuple[str, ...]

    @property
    def num_replicas(self) -> int:
        """Quantas réplicas a ``MirroredStrategy()`` terá nesta máquina."""
        return len(self.logical)

    def describe(self) -> str:
        """Resumo em português, para imprimir no notebook."""
        if self.kind == "gpu" and len(self.physical) == 1 and len(self.logical) > 1:
            head = (
                f"1 GPU física dividida em {len(self.logical)} GPUs lógicas (mostra o mecanismo "
                "da estratégia; as réplicas dividem a mesma GPU)."
            )
        elif self.kind == "gpu":
            head = f"{len(self.physical)} GPU(s) física(s): uma réplica por GPU."
        else:
            head = (
                f"Sem GPU: a CPU física foi dividida em {len(self.logical)} dispositivos lógicos "
                "(mostra o mecanismo da estratégia, não acelera nada)."
            )
        lines = [head, "Dispositivos lógicos usados pela estratégia:"]
        lines += [f"  - {name}" for name in self.logical]
        return "\n".join(lines)


def setup_devices(logical_cpus: int = 2) -> Devices:
    """Prepara os dispositivos para a ``MirroredStrategy`` e devolve um :class:`Devices`.

    - Com várias GPUs: liga o crescimento de memória sob demanda e usa uma réplica por GPU.
    - Com uma GPU: divide-a em ``logical_cpus`` GPUs lógicas (o mesmo papel da CPU dividida).
    - Sem GPU: divide a CPU em ``logical_cpus`` dispositivos lógicos.

    Pode ser chamada de novo no mesmo processo (rodar o notebook duas vezes): se a configuração
    pedida já estiver em vigor, nada muda. Se os dispositivos já tiverem sido inicializados de
    outro jeito, levanta :class:`DevicesAlreadyInitializedError` com as instruções.
    """
    if isinstance(logical_cpus, bool) or not isinstance(logical_cpus, int) or logical_cpus < 1:
        raise ValueError(f"logical_cpus deve ser um inteiro >= 1, recebi {logical_cpus!r}.")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # só vale se o TF ainda não foi importado
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if len(gpus) == 1 and logical_cpus > 1:
        split = [tf.config.LogicalDeviceConfiguration(memory_limit=LOGICAL_GPU_MEMORY_MB)]
        try:
            tf.config.set_logical_device_configuration(gpus[0], split * logical_cpus)
        except RuntimeError as err:
            current = len(tf.config.list_logical_devices("GPU"))
            if current != logical_cpus:
                raise DevicesAlreadyInitializedError(
                    _ALREADY_INITIALIZED.format(current=current, wanted=logical_cpus)
                    .replace("CPU(s) lógica(s)", "GPU(s) lógica(s)")
                    .replace("dividir a CPU", "dividir a GPU")
                ) from err
        logical = tf.config.list_logical_devices("GPU")
        return Devices("gpu", (gpus[0].name,), tuple(d.name for d in logical))
    if gpus:
        for gpu in gpus:
            try:
                tf.config.experimental.set_memory_growth(gpu, True)
            except RuntimeError:  # já inicializado: mantém a configuração em vigor
                pass
        logical = tf.config.list_logical_devices("GPU")
        return Devices("gpu", tuple(g.name for g in gpus), tuple(d.name for d in logical))

    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus
        )
    except RuntimeError as err:
        current = len(tf.config.list_logical_devices("CPU"))
        if current != logical_cpus:
            raise DevicesAlreadyInitializedError(
                _ALREADY_INITIALIZED.format(current=current, wanted=logical_cpus)
            ) from err
    logical = tf.config.list_logical_devices("CPU")
    return Devices("cpu", (cpu.name,), tuple(d.name for d in logical))
