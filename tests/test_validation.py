"""Entrada ruim nas funções públicas do ``labutils``: falha na hora, em português, nomeando o valor.

A tabela ``CASES`` lista cada caso tentado: função, o que há de errado, a chamada, a exceção
esperada e o trecho da mensagem que nomeia o valor ruim. Cada caso tem de falhar em menos de
:data:`FAST_S` segundos (nada de esperar por rede, Ray ou recursos).
"""

from __future__ import annotations

import contextlib
import io
import os
import time

import pytest

#: uma mensagem em português tem ao menos uma destas palavras
PT_WORDS = (
    "recebi",
    "deve",
    "inválid",
    "desconhecid",
    "não",
    "use ",
    "espera",
    "precisa",
    " sem ",
    " só ",
)
FAST_S = 5.0


def _env(name: str, value: str, fn):
    """Chama ``fn()`` com ``name=value`` no ambiente (restaurado depois)."""
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def _cli(main, argv):
    """Uma CLI com argparse sai com ``SystemExit(2)``: devolve a mensagem como ``ValueError``."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as exit_:
            if exit_.code:
                raise ValueError(err.getvalue()) from None


def _tiny_datasets():
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(([[0]] * 4, [0] * 4))
    return ds, ds


def _plan():
    from labutils.multiworker import WorkerPlan

    return WorkerPlan(2, False, {"CPU": 1.0})


def _lesson_05():
    """As células ``# @save`` da lição 05 (``setup_devices`` só existe lá)."""
    from tools.lesson_code import load

    return load("05_tensorflow_mirrored")


def m(name: str, package: str = "labutils"):
    """Atalho: ``m("config").sizes`` importa ``labutils.config`` só quando o caso roda."""
    import importlib

    class _Lazy:
        def __getattr__(self, attr):
            return getattr(importlib.import_module(f"{package}.{name}"), attr)

    return _Lazy()


config, system, timing, data, raytools = (
    m("config"),
    m("system"),
    m("timing"),
    m("data"),
    m("raytools"),
)
lab_tf = m("tf")  # o labutils.tf (o nome tf fica para o TensorFlow)
multiworker, checks = m("multiworker"), m("multiworker.checks")
exercise = m("make_student_notebook", package="tools")
cluster, doctor, search, plots = m("cluster"), m("doctor"), m("search"), m("plots")

# (função, o que há de errado, chamada, exceção esperada, trecho que nomeia o valor ruim)
CASES = [
    # timing e system
    (
        "timing.Timer",
        "lido antes de iniciar",
        lambda: timing.Timer().seconds,
        RuntimeError,
        "with Timer()",
    ),
    ("system.free_ports", "contagem zero", lambda: system.free_ports(0), ValueError, "recebi 0"),
    ("system.check_port", "porta 70000", lambda: system.check_port(70000), ValueError, "70000"),
    (
        "system.run",
        "prazo zero",
        lambda: system.run(["true"], timeout=0),
        ValueError,
        "recebi 0",
    ),
    # config
    ("config.sizes", "escala inexistente", lambda: config.sizes("grande"), ValueError, "'grande'"),
    (
        "config.pick",
        "escala inexistente",
        lambda: config.pick(full=1, smoke=2, scale="enorme"),
        ValueError,
        "'enorme'",
    ),
    (
        "config.current_scale",
        "LABUTILS_SCALE ruim",
        lambda: _env("LABUTILS_SCALE", "mediana", config.current_scale),
        ValueError,
        "'mediana'",
    ),
    # timing
    (
        "timing.Timer.seconds",
        "antes de iniciar",
        lambda: timing.Timer().seconds,
        RuntimeError,
        "with Timer()",
    ),
    # data
    (
        "data.load_cifar100",
        "escala inexistente",
        lambda: data.load_cifar100(scale="xx"),
        ValueError,
        "'xx'",
    ),
    (
        "data.load_california_housing",
        "escala inexistente",
        lambda: data.load_california_housing(scale="xx"),
        ValueError,
        "'xx'",
    ),
    # raytools
    (
        "raytools.init_ray",
        "num_cpus=0",
        lambda: raytools.init_ray(num_cpus=0),
        ValueError,
        "recebi 0",
    ),
    (
        "raytools.init_ray",
        "endereço onde ninguém atende",
        lambda: raytools.init_ray(address=f"127.0.0.1:{system.free_port()}"),
        ConnectionError,
        "Ninguém atende",
    ),
    (
        "raytools.init_ray",
        "num_cpus com cluster",
        lambda: raytools.init_ray(address="10.0.0.1:6379", num_cpus=3),
        ValueError,
        "num_cpus=3",
    ),
    (
        "raytools.init_ray",
        "object store minúsculo",
        lambda: raytools.init_ray(object_store_mb=1),
        ValueError,
        "recebi 1",
    ),
    (
        "config.forwarded_env",
        "extra não é dict",
        lambda: config.forwarded_env("A=1"),
        TypeError,
        "'A=1'",
    ),
    # tf (o TensorFlow das lições 05–07)
    (
        "tf.global_batch_size",
        "lote zero",
        lambda: lab_tf.global_batch_size(0),
        ValueError,
        "recebi 0",
    ),
    (
        "tf.global_batch_size",
        "réplicas negativas",
        lambda: lab_tf.global_batch_size(64, num_replicas=-2),
        ValueError,
        "recebi -2",
    ),
    (
        "tf.get_data",
        "lote não divisível",
        lambda: lab_tf.get_data(*_tiny_datasets(), global_batch=7, num_replicas=2),
        ValueError,
        "(7)",
    ),
    (
        "tf.get_data",
        "buffer zero",
        lambda: lab_tf.get_data(*_tiny_datasets(), global_batch=4, shuffle_buffer=0),
        ValueError,
        "recebi 0",
    ),
    ("tf.create_model", "1 classe", lambda: lab_tf.create_model(1), ValueError, "recebi 1"),
    (
        "tf.create_model",
        "taxa negativa",
        lambda: lab_tf.create_model(learning_rate=-0.1),
        ValueError,
        "recebi -0.1",
    ),
    (
        "tf.split_validation",
        "fração 1.5",
        lambda: lab_tf.split_validation(_tiny_datasets()[0], 4, fraction=1.5),
        ValueError,
        "recebi 1.5",
    ),
    (
        "tf.save_lesson_model",
        "não é modelo",
        lambda: lab_tf.save_lesson_model("modelo.keras"),
        TypeError,
        "str",
    ),
    (
        "tf.setup_devices",
        "zero CPUs lógicas",
        lambda: _lesson_05().setup_devices(0),
        ValueError,
        "recebi 0",
    ),
    (
        "tf.setup_devices",
        "booleano",
        lambda: _lesson_05().setup_devices(True),
        ValueError,
        "recebi True",
    ),
    # multiworker
    (
        "multiworker.plan_workers",
        "zero workers",
        lambda: multiworker.plan_workers(0),
        ValueError,
        "recebi 0",
    ),
    (
        "multiworker.plan_workers",
        "CPU por worker zero",
        lambda: multiworker.plan_workers(2, cpus_per_worker=0),
        ValueError,
        "recebi 0",
    ),
    (
        "multiworker.plan_workers",
        "CPU por worker texto",
        lambda: multiworker.plan_workers(2, cpus_per_worker="1"),
        ValueError,
        "'1'",
    ),
    (
        "multiworker.plan_workers",
        "espera negativa",
        lambda: multiworker.plan_workers(2, wait_s=-1),
        ValueError,
        "recebi -1",
    ),
    (
        "multiworker/checks.check_training_function",
        "zero workers",
        lambda: checks.check_training_function(print, {"batch_per_worker": 2}, num_workers=0),
        ValueError,
        "recebi 0",
    ),
    (
        "multiworker.checkpoint_epoch",
        "pasta sem época",
        lambda: multiworker.checkpoint_epoch("/nao/existe"),
        ValueError,
        "/nao/existe",
    ),
    # checks
    (
        "multiworker/checks.check_scaling_config",
        "não é ScalingConfig",
        lambda: checks.check_scaling_config({"num_workers": 2}, _plan()),
        AssertionError,
        "dict",
    ),
    (
        "multiworker/checks.check_accuracy",
        "texto",
        lambda: checks.check_accuracy("alta"),
        AssertionError,
        "'alta'",
    ),
    (
        "multiworker/checks.check_accuracy",
        "perda no lugar",
        lambda: checks.check_accuracy(4.6),
        AssertionError,
        "recebi 4.6",
    ),
    (
        "multiworker/checks.check_accuracy",
        "1 classe",
        lambda: checks.check_accuracy(0.5, num_classes=1),
        ValueError,
        "recebi 1",
    ),
    (
        "multiworker/checks.check_worker_datasets",
        "não é função",
        lambda: checks.check_worker_datasets(128),
        AssertionError,
        "recebi 128",
    ),
    (
        "multiworker.describe_worker",
        "estratégia no lugar do modelo",
        lambda: multiworker.describe_worker(object(), 128),
        TypeError,
        "recebi object",
    ),
    # tools/make_student_notebook
    (
        "tools/make_student_notebook.student_path",
        "nome sem _solucao",
        lambda: exercise.student_path(__import__("pathlib").Path("aula.ipynb")),
        ValueError,
        "aula.ipynb",
    ),
    (
        "tools/make_student_notebook.strip_solutions",
        "região sem fim",
        lambda: exercise.strip_solutions("# BEGIN SOLUTION\nx = 1\n", "célula 7"),
        ValueError,
        "célula 7",
    ),
    # cluster
    (
        "cluster.split_address",
        "sem porta",
        lambda: cluster.split_address("10.0.0.1"),
        RuntimeError,
        "'10.0.0.1'",
    ),
    ("cluster.join", "endereço ruim", lambda: cluster.join("servidor"), RuntimeError, "'servidor'"),
    (
        "cluster.head_command",
        "porta fora do intervalo",
        lambda: cluster.head_command(port=70000),
        RuntimeError,
        "70000",
    ),
    (
        "cluster.head_command",
        "CPUs negativas",
        lambda: cluster.head_command(num_cpus=-1),
        RuntimeError,
        "recebi -1",
    ),
    (
        "cluster.LocalCluster",
        "CPUs negativas no nó principal",
        lambda: cluster.LocalCluster(head_cpus=-1),
        ValueError,
        "recebi -1",
    ),
    (
        "cluster.wait_for_nodes",
        "zero nós",
        lambda: cluster.wait_for_nodes(0),
        ValueError,
        "recebi 0",
    ),
    (
        "cluster.LocalCluster",
        "workers negativos",
        lambda: cluster.LocalCluster(num_workers=-1),
        ValueError,
        "recebi -1",
    ),
    (
        "cluster.LocalCluster",
        "zero CPUs",
        lambda: cluster.LocalCluster(cpus_per_node=0),
        ValueError,
        "recebi 0",
    ),
    # doctor
    (
        "doctor.check_ports",
        "porta fora do intervalo",
        lambda: doctor.check_ports({"cabeça": 70000}),
        ValueError,
        "70000",
    ),
    ("doctor.check_cpus", "zero núcleos", lambda: doctor.check_cpus(0), ValueError, "recebi 0"),
    ("doctor.tf_probe", "limite zero", lambda: doctor.tf_probe(timeout=0), ValueError, "recebi 0"),
    # busca (lição 02)
    (
        "search.validate_grid",
        "árvores zero",
        lambda: search.validate_grid([(0, 3)]),
        ValueError,
        "recebi 0",
    ),
    (
        "search.validate_grid",
        "não é lista de pares",
        lambda: search.validate_grid("abc"),
        ValueError,
        "'abc'",
    ),
    (
        "search.speedup_bound",
        "zero núcleos",
        lambda: search.speedup_bound([1, 2], 0),
        ValueError,
        "recebi 0",
    ),
    (
        "search.makespan_lower_bound",
        "tempo negativo",
        lambda: search.makespan_lower_bound([1, -2], 2),
        ValueError,
        "-2.0",
    ),
    (
        "search.estimated_cost",
        "árvores negativas",
        lambda: search.estimated_cost(-1, 3),
        ValueError,
        "recebi -1",
    ),
    (
        "search.results_path",
        "nome com caminho",
        lambda: search.results_path("../fora"),
        ValueError,
        "'../fora'",
    ),
    (
        "search.transfer_sizes",
        "escala inexistente",
        lambda: search.transfer_sizes("xx"),
        ValueError,
        "'xx'",
    ),
    # plots (lição 02)
    (
        "plots.config_labels",
        "item que não é par",
        lambda: plots.config_labels([(10,)]),
        ValueError,
        "(10,)",
    ),
    (
        "plots.plot_speedups",
        "tamanhos diferentes",
        lambda: plots.plot_speedups(["a"], [1.0, 2.0], [2.0], 2),
        ValueError,
        "1, 2 e 1",
    ),
    (
        "plots.plot_speedups",
        "zero núcleos",
        lambda: plots.plot_speedups(["a"], [1.0], [2.0], 0),
        ValueError,
        "recebi 0",
    ),
    (
        "plots.plot_comparison",
        "resultado sem segundos",
        lambda: plots.plot_comparison([(10, 4, 0.5)], 1.0, [(10, 4, 0.5, 1.0)], 1.0),
        ValueError,
        "(10, 4, 0.5)",
    ),
    # bench (linha de comando e escalas)
    (
        "bench.main",
        "--repeats 0",
        lambda: _cli(m("bench.__main__", package="tools").main, ["--repeats", "0"]),
        ValueError,
        "recebi 0",
    ),
    (
        "bench.main",
        "--only desconhecida",
        lambda: _cli(m("bench.__main__", package="tools").main, ["--only", "gpu"]),
        ValueError,
        "'gpu'",
    ),
    (
        "bench.search_bench.chunks_per_core",
        "escala inexistente",
        lambda: m("bench.search_bench", package="tools").chunks_per_core("xx"),
        ValueError,
        "'xx'",
    ),
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
    assert any(word in message.lower() for word in PT_WORDS), f"não parece pt-BR: {message!r}"
    if not function.startswith("tf."):  # esses pagam o import do TensorFlow
        assert elapsed < FAST_S, f"{function} levou {elapsed:.1f} s para recusar"


def test_the_table_covers_every_module_of_the_issue():
    covered = {c[0].split(".")[0] for c in CASES}
    wanted = {
        "config",
        "system",
        "timing",
        "data",
        "raytools",
        "search",
        "tf",
    }
    wanted |= {"multiworker", "multiworker/checks", "tools/make_student_notebook"}
    wanted |= {"cluster", "doctor", "bench", "plots"}
    assert wanted <= covered, wanted - covered
