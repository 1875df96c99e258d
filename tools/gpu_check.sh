#!/usr/bin/env bash
# Conferência numa máquina com GPU (fora do CI): roda as lições 05–07 na escala smoke e imprime o
# que o TensorFlow e o Ray viram (dispositivos, réplicas, imagens/s). Guarde a saída em docs/.
#   bash tools/gpu_check.sh 2>&1 | tee docs/gpu_check_$(date +%Y%m%d).txt
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export LABUTILS_SCALE=${LABUTILS_SCALE:-smoke} TF_CPP_MIN_LOG_LEVEL=2
echo "== máquina"; date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
echo "== TensorFlow"
$PY - <<'PY'
import tensorflow as tf
from tools.lesson_code import load  # setup_devices está nas células da lição 05
devices = load("05_tensorflow_mirrored").setup_devices(2)
print(devices.describe())
strategy = tf.distribute.MirroredStrategy()
print("réplicas:", strategy.num_replicas_in_sync, strategy.extended.worker_devices)
PY
echo "== sonda (a rede da lição 05)"
$PY -c "from labutils import doctor; print(doctor.speed_probe(5.0))"
echo "== Ray: quem vê a GPU (sem num_gpus: nenhuma, \"\"; com num_gpus=1: só a sua)"
$PY - <<'PY'
import labutils  # antes do ray: o padrão que esconde a GPU de quem não a pede
import ray
from labutils.raytools import init_ray

init_ray(dashboard=False)
def seen():
    import os
    return os.environ.get("CUDA_VISIBLE_DEVICES")
print("sem num_gpus:", repr(ray.get(ray.remote(num_cpus=1)(seen).remote())))
if ray.cluster_resources().get("GPU"):
    print("num_gpus=1:  ", repr(ray.get(ray.remote(num_cpus=1, num_gpus=1)(seen).remote())))
ray.shutdown()
PY
echo "== lições 05, 06 e 07 (solução), escala $LABUTILS_SCALE"
out=$(mktemp -d)
for nb in notebooks/05_*.ipynb notebooks/06_*.ipynb notebooks/07_*_solucao.ipynb; do
  $PY tools/run_notebooks.py --timeout 1800 --out "$out" "$nb" | grep -v "^cópias"
  $PY - "$out/$(basename "$nb")" <<'PY'
import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=4) if __import__("os").path.exists(sys.argv[1]) else None
for cell in (nb.cells if nb else []):
    for out in cell.get("outputs", []):
        text = out.get("text", "") or out.get("data", {}).get("text/plain", "")
        for line in str(text).splitlines():
            if any(k in line for k in ("GPU", "réplica", "imagens/s", "speedup")):
                print("   ", line[:160])
PY
done
