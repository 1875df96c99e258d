"""Entrada ruim na fronteira do ``labutils`` (ambiente, linha de comando, célula): falha em menos
de :data:`FAST_S` s, nomeando o valor."""

from __future__ import annotations

import contextlib
import io
import os
import re
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


# Só a fronteira: o que um usuário digita (endereços, números na linha de comando ou numa célula)
# e o ambiente; (chamada, exceção, trecho que nomeia o valor ruim), com o id "função: o problema".
CASES = {
    "LABUTILS_SCALE ruim": (lambda: _scale("mediana"), ValueError, "'mediana'"),
    "init_ray: 0 CPUs": (lambda: raytools.init_ray(num_cpus=0), ValueError, "recebi 0"),
    "init_ray: num_cpus com cluster": (
        lambda: raytools.init_ray(address="10.0.0.1:6379", num_cpus=3),
        ValueError,
        "num_cpus=3",
    ),
    "tf.setup_devices: 0 CPUs": (lambda: _lesson_05().setup_devices(0), ValueError, "recebi 0"),
    "plan_workers: 0 workers": (lambda: multiworker.plan_workers(0), ValueError, "recebi 0"),
    "join: sem porta": (lambda: cluster.join("10.0.0.1"), RuntimeError, "'10.0.0.1'"),
    "join: endereço": (lambda: cluster.join("servidor"), RuntimeError, "'servidor'"),
    "start_head: porta 70000": (lambda: cluster.start_head(port=70000), RuntimeError, "70000"),
    "bench: --repeats 0": (lambda: _cli(bench_main, ["--repeats", "0"]), ValueError, "recebi 0"),
    "bench: --only gpu": (lambda: _cli(bench_main, ["--only", "gpu"]), ValueError, "'gpu'"),
    "cluster start-head --num-cpus -1": (
        lambda: _cli(cluster_main, ["start-head", "--num-cpus", "-1"]),
        ValueError,
        "recebi '-1'",
    ),
    "cluster local --workers 0": (
        lambda: _cli(cluster_main, ["local", "--workers", "0"]),
        ValueError,
        "recebi '0'",
    ),
}


@pytest.mark.parametrize(("call", "error", "fragment"), CASES.values(), ids=CASES.keys())
def test_bad_input_fails_fast_with_a_portuguese_message_naming_it(request, call, error, fragment):
    start = time.monotonic()
    with pytest.raises(error, match=re.escape(fragment)):
        call()
    if "tf." not in request.node.callspec.id:  # esses pagam o import do TensorFlow
        assert time.monotonic() - start < FAST_S
