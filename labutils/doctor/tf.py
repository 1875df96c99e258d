"""TensorFlow e tf-keras, vistos por uma sonda num subprocesso (com limite de tempo)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from labutils import config, system
from labutils.doctor.pins import pinned, pip_install
from labutils.doctor.rows import FAIL, INSTALL_HINT, OK, WARN, Row

TF_TIMEOUT_S = 180.0

# Roda num processo separado: dividir a CPU em dispositivos lógicos só funciona antes de o
# TensorFlow iniciar seus dispositivos, e o kernel do notebook não deve ficar "gasto".
_TF_PROBE = r"""
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
out = {}
import tensorflow as tf
out["tf"] = tf.__version__
out["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]
try:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    out["logical_cpus"] = len(tf.config.list_logical_devices("CPU"))
except Exception as err:
    out["split_error"] = f"{type(err).__name__}: {err}"
try:
    import tf_keras
    out["tf_keras"] = tf_keras.__version__
    out["legacy_keras"] = tf.keras.__name__.startswith("tf_keras")
except Exception as err:
    out["tf_keras_error"] = f"{type(err).__name__}: {err}"
print("DOCTOR_JSON=" + json.dumps(out))
"""


def json_probe(cmd: list[str], *, marker: str, timeout: float, late: str, failed: str) -> dict:
    """Roda uma sonda Python num subprocesso e devolve o JSON da linha ``MARKER=...``.

    Nunca trava nem levanta: passou de ``timeout`` s, ``{"error": late}``; saiu sem a linha,
    ``{"error": "<failed> (código N): <última linha do stderr>"}``."""
    env = config.child_env({"TF_CPP_MIN_LOG_LEVEL": "3"})
    try:
        proc = system.run(cmd, timeout=timeout, env=env, check=False)
    except system.CommandError:
        return {"error": late}
    except OSError as err:
        return {"error": f"não consegui rodar {cmd[0]}: {err}"}
    for line in proc.stdout.splitlines():
        if line.startswith(f"{marker}="):
            return json.loads(line.removeprefix(f"{marker}="))
    tail = (proc.stderr.strip().splitlines() or ["(sem mensagem)"])[-1]
    return {"error": f"{failed} (código {proc.returncode}): {tail}"}


def tf_probe(timeout: float = TF_TIMEOUT_S, python: str = sys.executable) -> dict:
    """Importa o TensorFlow num subprocesso e devolve o que ele viu (ou ``{"error": ...}``)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ValueError(f"timeout deve ser um número de segundos > 0, recebi {timeout!r}.")
    return json_probe(
        [python, "-c", _TF_PROBE],
        marker="DOCTOR_JSON",
        timeout=timeout,
        late=f"o TensorFlow não carregou em {timeout:g} s",
        failed="import tensorflow falhou",
    )


def _gpu_on_machine() -> bool:
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()


def check_tensorflow(probe: dict, gpu_on_machine: bool | None = None) -> Row:
    if "error" in probe:
        return Row(FAIL, "TensorFlow", probe["error"], f"{INSTALL_HINT}; depois rode de novo.")
    gpus = probe.get("gpus", [])
    if "split_error" in probe:
        return Row(
            FAIL,
            "TensorFlow",
            f"{probe['tf']}: não consegui dividir a CPU em 2 dispositivos ({probe['split_error']})",
            "A lição 05 precisa disso: reinstale o TensorFlow fixado e rode num processo novo.",
        )
    detail = f"{probe['tf']}; GPUs: {len(gpus)}; CPU dividida em {probe['logical_cpus']} dispositivos lógicos"
    if not gpus and (gpu_on_machine if gpu_on_machine is not None else _gpu_on_machine()):
        return Row(
            WARN,
            "TensorFlow",
            detail + ", mas a máquina tem GPU NVIDIA",
            "O TensorFlow não vê a GPU: instale o suporte CUDA "
            f"(`{pip_install('tensorflow', extras=['and-cuda'])}`) e confira `nvidia-smi`. "
            "As lições rodam na CPU mesmo assim.",
        )
    if not gpus:
        detail += " (sem GPU: as lições usam CPUs lógicas)"
    return Row(OK, "TensorFlow", detail)


def check_tf_keras(probe: dict) -> Row:
    item = "tf-keras (exercício multi-worker)"
    if "error" in probe:
        return Row(
            FAIL, item, "não testado: o TensorFlow não carregou", "Resolva a linha do TensorFlow."
        )
    if "tf_keras_error" in probe:
        return Row(
            FAIL, item, probe["tf_keras_error"], f"{INSTALL_HINT} (ou `{pip_install('tf-keras')}`)."
        )
    if not probe.get("legacy_keras"):
        return Row(
            FAIL,
            item,
            f"tf_keras {probe['tf_keras']} instalado, mas TF_USE_LEGACY_KERAS=1 não o ativou",
            f"Use o tf-keras e o TensorFlow nas versões fixadas ({pinned('tf-keras')}, "
            f"{pinned('tensorflow')}): {INSTALL_HINT}.",
        )
    return Row(OK, item, f"{probe['tf_keras']} (ativado com TF_USE_LEGACY_KERAS=1)")
