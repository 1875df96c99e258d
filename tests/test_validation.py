"""Entrada ruim na fronteira do ``labutils`` (o ambiente, a linha de comando, o que o aluno passa
numa célula): falha na hora, nomeando o valor.

A tabela ``CASES`` lista cada caso tentado: função, o que há de errado, a chamada, a exceção
esperada e o trecho da mensagem que nomeia o valor ruim. Cada caso tem de falhar em menos de
:data:`FAST_S` segundos (nada de esperar por rede, Ray ou recursos).
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from unittest import mock

import pytest

from labutils import cluster, config, multiworker, raytools
from labutils.cluster.__main__ import main as cluster_main
from tools.bench.__main__ import main as bench_main

FAST_S = 5.0


def _scale(value: str) -> str:
    with mock.patch.dict(os.environ, {"LABUTILS_SCALE": value}):
        return config.current_scale()


def _cli(main, argv):
    """Uma CLI com argparse sai com ``SystemExit(2)``: devolve a mensagem como ``ValueError``."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exit_:
            if exit_.code:
                raise ValueError(err.getvalue()) from None


def _lesson_05():
    """As células ``# @save`` da lição 05 (``setup_devices`` só existe lá)."""
    from tools.lesson_code import load

    return load("05_tensorflow_mirrored")


# (função, o que há de errado, chamada, exceção esperada, trecho que nomeia o valor ruim)
# Só a fronteira: o que um usuário digita (endereços, números na linha de comando ou numa célula)
# e o ambiente. O que o próprio código produz não é validado de novo.
CASES = [
    (
        "config.current_scale",
        "LABUTILS_SCALE ruim",
        lambda: _scale("mediana"),
        ValueError,
        "'mediana'",
    ),
    (
        "raytools.init_ray",
        "num_cpus=0",
        lambda: raytools.init_ray(num_cpus=0),
        ValueError,
        "recebi 0",
    ),
    (
        "raytools.init_ray",
        "num_cpus com cluster",
        lambda: raytools.init_ray(address="10.0.0.1:6379", num_cpus=3),
        ValueError,
        "num_cpus=3",
    ),
    (
        "tf.setup_devices",
        "zero CPUs lógicas",
        lambda: _lesson_05().setup_devices(0),
        ValueError,
        "recebi 0",
    ),
    (
        "multiworker.plan_workers",
        "zero workers",
        lambda: multiworker.plan_workers(0),
        ValueError,
        "recebi 0",
    ),
    (
        "cluster.join",
        "sem porta",
        lambda: cluster.join("10.0.0.1"),
        RuntimeError,
        "'10.0.0.1'",
    ),
    (
        "cluster.start_head",
        "porta fora do intervalo",
        lambda: cluster.start_head(port=70000),
        RuntimeError,
        "70000",
    ),
    (
        "bench.main",
        "--repeats 0",
        lambda: _cli(bench_main, ["--repeats", "0"]),
        ValueError,
        "recebi 0",
    ),
    (
        "bench.main",
        "--only desconhecida",
        lambda: _cli(bench_main, ["--only", "gpu"]),
        ValueError,
        "'gpu'",
    ),
    (
        "python -m labutils.cluster",
        "start-head --num-cpus -1",
        lambda: _cli(cluster_main, ["start-head", "--num-cpus", "-1"]),
        ValueError,
        "recebi '-1'",
    ),
    (
        "python -m labutils.cluster",
        "local --workers 0",
        lambda: _cli(cluster_main, ["local", "--workers", "0"]),
        ValueError,
        "recebi '0'",
    ),
    ("cluster.join", "endereço ruim", lambda: cluster.join("servidor"), RuntimeError, "'servidor'"),
]


@pytest.mark.parametrize(
    ("function", "problem", "call", "error", "fragment"),
    CASES,
    ids=[f"{c[0]}: {c[1]}" for c in CASES],
)
def test_bad_input_fails_fast_with_a_portuguese_message_naming_it(
    function, problem, call, error, fragment
):
    start = time.monotonic()
    with pytest.raises(error) as info:
        call()
    elapsed = time.monotonic() - start
    message = str(info.value)
    assert fragment in message, f"{function} ({problem}): a mensagem não nomeia {fragment!r}"
    if not function.startswith("tf."):  # esses pagam o import do TensorFlow
        assert elapsed < FAST_S, f"{function} levou {elapsed:.1f} s para recusar"
