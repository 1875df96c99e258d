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
    raise_on_error: bool = True,
) -> list[dict[str, Any]]:
    """Roda ``fn(config)`` em ``num_workers`` processos Python locais, cada um com seu TF_CONFIG.

    É o que o Ray Train automatiza: serializar a função (cloudpickle), abrir um processo por
    worker, dar a cada um seu ``TF_CONFIG`` e recolher os resultados. Todos os processos são
    mortos (SIGKILL) se passarem de ``timeout_s``: um worker cujo par não sobe trava para sempre.
    Devolve, por worker: ``tf_config``, ``returncode``, ``seconds``, ``value`` (o retorno de fn).
    Se um worker termina com erro, os outros são encerrados na hora (o par dele esperaria para
    sempre) e sobe ``RuntimeError`` com o fim do log dele; com ``raise_on_error=False``, devolve
    as linhas mesmo assim (``error``: o traceback de quem falhou, ``None`` nos outros). Os logs de cada processo ficam em
    ``workdir`` (padrão: uma pasta temporária nova), que é apagada quando tudo dá certo.
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
    results: dict[int, dict[str, Any]] = {}
    try:
        while len(results) < len(procs):  # de olho em todos: um que falha encerra os outros
            for i, (cfg, _log, proc) in enumerate(procs):
                if i in results or proc.poll() is None:
                    continue
                out = workdir / f"result_{i}.pkl"
                value = cloudpickle.loads(out.read_bytes()) if out.exists() else None
                error = workdir / f"error_{i}.txt"
                results[i] = {
                    "error": error.read_text(errors="replace") if error.exists() else None,
                    "tf_config": cfg,
                    "returncode": proc.returncode,
                    "seconds": round(time.monotonic() - start, 1),
                    "value": value,
                }
            if any(r["returncode"] != 0 for r in results.values()):
                break  # o par de um worker que caiu esperaria para sempre
            if len(results) < len(procs):
                if time.monotonic() - start > timeout_s:
                    raise TimeoutError(
                        f"Os processos passaram de {timeout_s:g} s e foram encerrados (SIGKILL). "
                        f"Logs em {workdir}."
                    )
                time.sleep(0.05)
    finally:
        for _cfg, log, proc in procs:  # um worker cujo par não sobe ignora o SIGTERM
            system.kill_group(proc, grace=0)
            log.close()
    failed = [r for _, r in sorted(results.items()) if r["returncode"] != 0]
    if failed and raise_on_error:
        index = failed[0]["tf_config"]["task"]["index"]
        log = (workdir / f"worker_{index}.log").read_text(errors="replace")
        tail = (log + (failed[0]["error"] or ""))[-2000:]
        raise RuntimeError(
            f"O worker {index} terminou com erro (código {failed[0]['returncode']}):\n{tail}"
        )
    shutil.rmtree(workdir, ignore_errors=True)  # terminou: os logs não são mais necessários
    empty = {"error": None, "returncode": None, "seconds": None, "value": None}
    return [results.get(i, {**empty, "tf_config": procs[i][0]}) for i in range(len(procs))]
