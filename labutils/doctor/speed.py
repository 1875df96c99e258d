"""Quanto esta máquina demora em cada lição: uma sonda de poucos segundos e o ensaio de referência.

O ensaio (``make rehearsal``, ``tools/rehearsal.py``) rodou cada lição na escala ``full`` numa
máquina de referência e gravou ``docs/ensaio/ensaio.json``: os minutos de cada lição e a
**sonda** medida lá (imagens/s da rede da lição 05 no treino centralizado, as threads padrão do
TensorFlow, CPU ou GPU). Aqui a mesma sonda mede esta máquina, e cada lição é estimada pela
razão entre as duas sondas: uma máquina duas vezes mais rápida na sonda leva metade do tempo.

As lições sem TensorFlow (scikit-learn e Ray) não ganham nada com uma GPU: numa máquina em que
a sonda rodou na GPU, elas são estimadas pela razão entre as CPUs lógicas das duas máquinas.
É uma estimativa grosseira, que serve para a decisão que importa antes da aula: a lição cabe no
período, ou é melhor rodá-la antes (``make notebooks``) ou numa máquina com GPU?
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from labutils import config
from labutils.doctor.rows import OK, WARN, Row
from labutils.doctor.tf import json_probe

REFERENCE = config.REPO_ROOT / "docs" / "ensaio" / "ensaio.json"
PROBE_TIMEOUT_S = 180.0

# Num processo novo: o TF usa as threads padrão (todos os núcleos) e a GPU, se houver.
_PROBE = r"""
import json, os, sys, time
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf
from labutils.tf.model import create_model
seconds = float(sys.argv[1])
gpus = tf.config.list_physical_devices("GPU")
model = create_model(100)
rng = np.random.default_rng(0)
x = rng.random((64, 32, 32, 3), dtype=np.float32)
y = rng.integers(0, 100, size=(64,))
for _ in range(3):
    model.train_on_batch(x, y)  # compila o passo de treino
steps, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    model.train_on_batch(x, y)
    steps += 1
elapsed = time.perf_counter() - start
out = {"images_per_s": steps * 64 / elapsed, "device": gpus[0].name if gpus else "nenhuma"}
print("SPEED_JSON=" + json.dumps(out))
"""


def measure(seconds: float = 4.0, timeout: float = PROBE_TIMEOUT_S) -> dict:
    """A sonda: ``{"images_per_s": ..., "device": ...}``, ou ``{"error": ...}`` (nunca trava)."""
    return json_probe(
        [sys.executable, "-c", _PROBE, str(seconds)],
        marker="SPEED_JSON",
        timeout=timeout,
        late=f"a sonda não terminou em {timeout:g} s",
        failed="a sonda falhou",
    )


def load_reference(path: Path = REFERENCE) -> dict | None:
    """O ensaio de referência (``ensaio.json``), ou ``None`` se não existe ou não se lê."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def estimate_minutes(reference: dict, probe: dict, cpus: int) -> dict[str, tuple[float, float]]:
    """``{notebook: (minutos do caminho principal, minutos das opcionais)}`` nesta máquina,
    com a sonda ``probe`` e ``cpus`` CPUs lógicas aqui."""
    tf_ratio = reference["probe"]["images_per_s"] / probe["images_per_s"]
    cpu_ratio = tf_ratio
    if probe.get("device", "nenhuma") != "nenhuma":  # a sonda mediu a GPU, não as CPUs
        cpu_ratio = reference["machine"]["logical_cpus"] / max(1, cpus)
    out = {}
    for row in reference["lessons"]:
        if row.get("error"):
            continue
        ratio = tf_ratio if row.get("tensorflow", True) else cpu_ratio
        out[row["notebook"]] = (row["core_s"] / 60 * ratio, row["optional_s"] / 60 * ratio)
    return out


def check_lesson_times(
    probe: dict | None = None, reference: dict | None = None, cpus: int | None = None
) -> list[Row]:
    """Uma linha por lição: os minutos esperados aqui, e o que fazer se não cabe no período."""
    reference = load_reference() if reference is None else reference
    if not reference or "images_per_s" not in reference.get("probe", {}):
        return [Row(WARN, "tempo das lições", "sem o ensaio de referência (docs/ensaio/)",
                    "rode `make rehearsal` numa máquina da sala para ter os tempos")]  # fmt: skip
    probe = measure() if probe is None else probe
    if "images_per_s" not in probe:
        return [Row(WARN, "tempo das lições", f"sonda de velocidade: {probe.get('error')}")]
    period = float(reference.get("class_period_min", 15.0))
    ratio = reference["probe"]["images_per_s"] / probe["images_per_s"]
    where = (
        f"sonda: {probe['images_per_s']:,.0f} imagens/s aqui (GPU: {probe['device']}) contra "
        f"{reference['probe']['images_per_s']:,.0f} na referência ({reference['date']}): "
        f"{1 / ratio:.2f}x"
    )
    rows = [Row(OK, "tempo das lições", where)]
    cpus = len(os.sched_getaffinity(0)) if cpus is None else cpus
    for name, (core, optional) in estimate_minutes(reference, probe, cpus).items():
        detail = f"~{core:.0f} min no caminho principal (+{optional:.0f} min nas opcionais)"
        if core <= period:
            rows.append(Row(OK, name, detail))
        else:
            rows.append(Row(WARN, name, f"{detail}: passa dos {period:g} min de uma aula",
                            "rode-a antes da aula (`make notebooks`) ou numa máquina com GPU"))  # fmt: skip
    return rows
