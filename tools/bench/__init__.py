"""Benchmark do laboratório: mede, lado a lado e numa só execução, cada abordagem paralela.

Não é um teste de velocidade: nada aqui falha por a máquina ser lenta. Cada medida é repetida, e
o relatório traz mediana e dispersão, o speedup sobre a linha de base e, onde existe, a razão
para o limite que a máquina permite: ``python -m tools.bench --scale full --repeats 3`` (ou
``make bench``).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from labutils import system

#: a raiz do repositório, onde mora o pacote ``tools``
ROOT = Path(__file__).resolve().parents[2]


def run_measure(
    module: str, *args: Any, scale: str, timeout: float, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Roda ``python -m tools.bench.<module> ARGS...`` (um ``dict`` vai como JSON) num processo
    novo e devolve o JSON que ele imprime (:func:`measure_main`); em qualquer falha, ``{"error":
    motivo}``. O grupo de processos inteiro, o Ray da medida incluído, é encerrado no fim."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "LABUTILS_SCALE": scale, **(env or {})}
    # o ``tools`` não é instalado: com a raiz no PYTHONPATH, o processo e os workers do Ray que
    # ele inicia (que herdam o ambiente) o encontram de qualquer pasta
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    argv = [json.dumps(a) if isinstance(a, dict) else str(a) for a in args]
    return system.run_json(
        [sys.executable, "-m", f"tools.bench.{module}", *argv],
        env=env,
        timeout=timeout,
        late=f"passou do limite de {timeout:g} s e foi encerrado (SIGKILL).",
        failed="o processo de medida terminou sem resultado",
    )


def measure_main(measure: Any, arg: str) -> int:
    """O fim de um processo de medida: o JSON de ``measure(arg)``, ou ``{"error": ...}``, na
    última linha (o que :func:`run_measure` lê)."""
    try:
        out = measure(json.loads(arg))
    except Exception as err:  # a linha do relatório diz o que falhou (ex.: os dados faltam)
        out = {"error": f"{type(err).__name__}: {' '.join(str(err).split())[:600]}"}
    print(system.JSON_MARK + json.dumps(out), flush=True)
    return 0
