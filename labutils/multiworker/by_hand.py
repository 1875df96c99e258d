"""O mesmo treino sem Ray: N processos locais, cada um com o seu ``TF_CONFIG``.

É o que o Ray Train automatiza: serializar a função (cloudpickle), abrir um processo por worker,
dar a cada um o seu ``TF_CONFIG`` e recolher os resultados. Processos e portas vêm de
:mod:`labutils.system` (um grupo de processos por worker, encerrado inteiro no fim).

Cada processo roda ``python -m labutils.multiworker.worker_process PASTA ÍNDICE``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from labutils import config as lab_config
from labutils import system
from labutils.multiworker.launch import fit_timeout_s
from labutils.multiworker.legacy_keras import LEGACY_KERAS_ENV


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} deve ser um inteiro >= 1, recebi {value!r}.")


def tf_configs(num_workers: int) -> list[dict[str, Any]]:
    """Um ``TF_CONFIG`` por worker: a mesma lista de endereços, um índice diferente em cada."""
    _check_count("num_workers", num_workers)
    workers = [f"{system.LOCALHOST}:{port}" for port in system.free_ports(num_workers)]
    return [
        {"cluster": {"worker": workers}, "task": {"type": "worker", "index": i}}
        for i in range(num_workers)
    ]


def launch_by_hand(
    fn: Callable[[dict], Any],
    config: dict[str, Any],
    num_workers: int = 2,
    timeout_s: float | None = None,
    workdir: str | os.PathLike | None = None,
) -> list[dict[str, Any]]:
    """Roda ``fn(config)`` em ``num_workers`` processos Python locais, cada um com seu TF_CONFIG.

    É o que o Ray Train automatiza: serializar a função (cloudpickle), abrir um processo por
    worker, dar a cada um seu ``TF_CONFIG`` e recolher os resultados. Todos os processos são
    mortos (SIGKILL) se passarem de ``timeout_s``: um worker cujo par não sobe trava para sempre.
    Devolve, por worker: ``tf_config``, ``returncode``, ``seconds``, ``value`` (o retorno de fn).
    Os logs de cada processo ficam em ``workdir`` (padrão: uma pasta temporária nova), que é
    apagada quando tudo dá certo.
    """
    from ray import cloudpickle  # o mesmo serializador que o Ray usa

    if not callable(fn):
        raise TypeError(f"fn deve ser a função de treino de cada worker, recebi {fn!r}.")
    _check_count("num_workers", num_workers)
    if timeout_s is not None and not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s deve ser um número de segundos > 0, recebi {timeout_s!r}.")
    timeout_s = fit_timeout_s() if timeout_s is None else timeout_s
    workdir = Path(workdir or tempfile.mkdtemp(prefix="labutils-byhand-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "job.pkl").write_bytes(cloudpickle.dumps((fn, config)))
    procs = []
    start = time.monotonic()
    for i, cfg in enumerate(tf_configs(num_workers)):
        env = lab_config.child_env({**LEGACY_KERAS_ENV, "TF_CONFIG": json.dumps(cfg)})
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        log = open(workdir / f"worker_{i}.log", "wb")  # noqa: SIM115 - fechado abaixo
        cmd = [sys.executable, "-m", "labutils.multiworker.worker_process", str(workdir), str(i)]
        procs.append((cfg, log, system.spawn_group(cmd, env=env, stdout=log, stderr=log)))
    results = []
    try:
        for cfg, _log, proc in procs:
            left = max(0.1, timeout_s - (time.monotonic() - start))
            try:
                proc.wait(timeout=left)
            except subprocess.TimeoutExpired:
                raise TimeoutError(
                    f"Os processos passaram de {timeout_s:g} s e foram encerrados (SIGKILL). "
                    f"Logs em {workdir}."
                ) from None
            out = workdir / f"result_{cfg['task']['index']}.pkl"
            value = cloudpickle.loads(out.read_bytes()) if out.exists() else None
            results.append(
                {
                    "tf_config": cfg,
                    "returncode": proc.returncode,
                    "seconds": round(time.monotonic() - start, 1),
                    "value": value,
                }
            )
    finally:
        for _cfg, log, proc in procs:  # um worker cujo par não sobe ignora o SIGTERM
            system.kill_group(proc, grace=0)
            log.close()
    failed = [r for r in results if r["returncode"] != 0]
    if failed:
        index = failed[0]["tf_config"]["task"]["index"]
        tail = (workdir / f"worker_{index}.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(
            f"O worker {index} terminou com erro (código {failed[0]['returncode']}):\n{tail}"
        )
    shutil.rmtree(workdir, ignore_errors=True)  # deu certo: os logs não são mais necessários
    return results
