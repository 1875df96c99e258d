"""``labutils.multiworker`` (lição 07) e o treino da solução num cluster Ray real de vários nós."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from processes import descendants, run_python

from labutils import multiworker, system
from labutils.multiworker import checks

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"


# ---------------------------------------------------------------- tf-keras


def test_use_legacy_keras_makes_tf_keras_the_keras():
    run = run_python(
        """
        from labutils import multiworker
        multiworker.use_legacy_keras()
        import tensorflow as tf
        print("KERAS", tf.keras.__name__)
        """,
        timeout=120,
        env={"TF_USE_LEGACY_KERAS": ""},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "KERAS tf_keras" in run.stdout


def test_use_legacy_keras_after_tensorflow_asks_to_restart_the_kernel():
    run = run_python(
        """
        import tensorflow as tf
        tf.keras.layers.Dense  # o Keras 3 já foi carregado
        from labutils import multiworker
        multiworker.use_legacy_keras()
        """,
        timeout=120,
        env={"TF_USE_LEGACY_KERAS": ""},
    )
    assert run.returncode != 0
    assert "Reinicie o kernel" in run.stdout + run.stderr


# ---------------------------------------------------------------- recursos (falha rápida)


@pytest.fixture
def fake_cluster(monkeypatch):
    """Um 'cluster' de mentira: lista de nós e recursos livres controlados pelo teste."""
    import ray

    state = {
        "nodes": [
            {
                "NodeID": "a" * 56,
                "Alive": True,
                "NodeManagerAddress": "10.0.0.1",
                "Resources": {"CPU": 1.0},
            },
            {
                "NodeID": "b" * 56,
                "Alive": True,
                "NodeManagerAddress": "10.0.0.2",
                "Resources": {"CPU": 2.0, "GPU": 1.0},
            },
            {
                "NodeID": "c" * 56,
                "Alive": False,
                "NodeManagerAddress": "10.0.0.3",
                "Resources": {"CPU": 8.0},
            },
        ],
        "free": {"CPU": 3.0, "GPU": 1.0},
    }
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "nodes", lambda: state["nodes"])
    monkeypatch.setattr(ray, "available_resources", lambda: dict(state["free"]))
    return state


def test_plan_fits_and_picks_cpu_when_not_one_gpu_per_worker(fake_cluster):
    plan = multiworker.plan_workers(2)
    assert (plan.num_workers, plan.use_gpu, plan.resources_per_worker) == (2, False, {"CPU": 1.0})
    assert len(plan.nodes) == 2  # só os nós vivos
    one = multiworker.plan_workers(1)
    assert one.use_gpu and one.resources_per_worker == {"CPU": 1.0, "GPU": 1.0}


def test_plan_rejects_more_workers_than_the_cluster_holds_at_once(fake_cluster):
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="só comporta 3") as info:
        multiworker.plan_workers(4)
    assert "esperando para sempre" in str(info.value)
    with pytest.raises(RuntimeError, match="só comporta 1"):
        multiworker.plan_workers(2, use_gpu=True)
    assert time.monotonic() - start < 2


def test_plan_counts_whole_workers_per_node(fake_cluster):
    # 1.5 CPU por worker: nenhum cabe no nó de 1 CPU, um no de 2 CPUs (total 3 CPUs não basta)
    with pytest.raises(RuntimeError, match="só comporta 1"):
        multiworker.plan_workers(2, cpus_per_worker=1.5)
    # 0.5 CPU por worker: 2 no nó de 1 CPU + 4 no de 2 CPUs
    plan = multiworker.plan_workers(4, cpus_per_worker=0.5)
    assert not plan.use_gpu and plan.resources_per_worker == {"CPU": 0.5}


def test_plan_waits_briefly_then_fails_when_resources_are_busy(fake_cluster):
    fake_cluster["free"] = {"CPU": 0.0}
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="ocupados"):
        multiworker.plan_workers(2, wait_s=0.5)
    assert 0.4 < time.monotonic() - start < 3


def test_plan_says_whether_the_workers_still_fit_after_losing_a_node(fake_cluster):
    # nós vivos: a (1 CPU) e b (2 CPUs): 3 workers de 1 CPU cabem; sem b, só 1
    one, two = multiworker.plan_workers(1, use_gpu=False), multiworker.plan_workers(2)
    assert (one.capacity, one.survives_node_loss) == (3, True)
    assert (two.capacity, two.survives_node_loss) == (3, False)
    fake_cluster["nodes"] = fake_cluster["nodes"][:1]  # um nó só: perdê-lo é perder tudo
    assert not multiworker.plan_workers(1).survives_node_loss


# ---------------------------------------------------------------- TF_CONFIG e tabela


def test_describe_write_read_and_table(tmp_path, monkeypatch):
    tf_config = {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 1},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(tf_config))
    model = SimpleNamespace(distribute_strategy=SimpleNamespace(num_replicas_in_sync=2))
    info = multiworker.describe_worker(model, 128)
    assert info["rank"] == 1 and info["tf_config"] == tf_config and info["replicas"] == 2
    assert info["strategy"] == "SimpleNamespace" and info["pid"] == os.getpid()
    multiworker.write_worker(tmp_path, info)
    multiworker.write_worker(tmp_path, {**info, "rank": 0})
    infos = multiworker.read_workers(tmp_path)
    assert [i["rank"] for i in infos] == [0, 1]
    table = multiworker.workers_table(infos)
    assert list(table["rank"]) == [0, 1]
    assert table["TF_CONFIG cluster.worker"].iloc[0] == "127.0.0.1:1, 127.0.0.1:2"


def test_checkpoint_epoch_reads_the_epoch_written_with_the_worker(tmp_path):
    multiworker.write_worker(tmp_path, {"rank": 0, "epoch": 3})
    assert multiworker.checkpoint_epoch(tmp_path) == 3
    multiworker.write_worker(tmp_path, {"rank": 0})  # um checkpoint antigo, sem a época
    with pytest.raises(ValueError, match="não diz a época"):
        multiworker.checkpoint_epoch(tmp_path)


# ---------------------------------------------------------------- um TODO pendente


def _source_of(notebook: Path, name: str) -> str:
    """O código da célula do notebook que define a função ``name``."""
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    return next(c.source for c in cells if f"def {name}(" in c.source)


def _loop_from(notebook: Path) -> dict:
    """Define (sem executar) as funções do laço dos workers das células do notebook."""
    import nbformat

    ns = {"__name__": "__main__", "checks": checks, "multiworker": multiworker}
    names = ("worker_datasets", "build_model", "resume", "train_loop_per_worker")
    for cell in nbformat.read(notebook, as_version=4).cells:
        if any(f"def {name}(" in cell.source for name in names):
            exec(compile(cell.source, str(notebook), "exec"), ns)
    return ns


def test_pending_todo_finds_the_first_todo_of_the_loop_before_starting_workers():
    student = _loop_from(SOLUTION.with_name("07_exercicio_multiworker_aluno.ipynb"))
    todo3 = "TODO 3 ainda não terminado: escreva a função de treino de cada worker."
    assert checks.pending_todo(student["train_loop_per_worker"]) == todo3
    start = time.monotonic()
    # o TODO 1 ainda por fazer vem antes: a verificação do TODO 3 o nomeia
    with pytest.raises(checks.TodoNotDone, match="^Termine o TODO 1 primeiro"):
        checks.check_training_function(student["train_loop_per_worker"], {"batch_per_worker": 8})
    assert time.monotonic() - start < 20  # nenhum processo iniciado (só o import do TensorFlow)
    # TODO 3 feito: sobram os TODOs 1 e 2, nas funções que a função de treino chama
    exec(compile(_source_of(SOLUTION, "train_loop_per_worker"), str(SOLUTION), "exec"), student)
    assert checks.pending_todo(student["train_loop_per_worker"]).startswith("TODO 1 ")
    solution = _loop_from(SOLUTION)
    assert checks.pending_todo(solution["train_loop_per_worker"]) is None


# ---------------------------------------------------------------- os processos da verificação


@pytest.fixture
def by_value():
    """As funções deste módulo de teste viajam por valor (como as de um notebook, ``__main__``)."""
    from ray import cloudpickle

    module = sys.modules[__name__]
    cloudpickle.register_pickle_by_value(module)
    yield
    cloudpickle.unregister_pickle_by_value(module)


def _env_of_worker(config):
    return {
        "tf_config": json.loads(os.environ["TF_CONFIG"]),
        "legacy": os.environ.get("TF_USE_LEGACY_KERAS"),
        "gpus": os.environ.get("CUDA_VISIBLE_DEVICES"),
        **config,
    }


def test_the_check_processes_share_the_cluster_differ_in_index_and_see_no_gpu(by_value):
    tmp_dirs = lambda: set(Path(tempfile.gettempdir()).glob("labutils-todo3-*"))  # noqa: E731
    before = tmp_dirs()
    runs = checks._launch(_env_of_worker, {"x": 1}, num_workers=3, timeout_s=60)
    assert tmp_dirs() <= before  # a pasta de trabalho é apagada
    workers = runs[0]["tf_config"]["cluster"]["worker"]
    assert len(set(workers)) == 3
    for index, run in enumerate(runs):
        assert run["error"] is None and run["value"]["tf_config"] == run["tf_config"]
        assert run["tf_config"]["cluster"]["worker"] == workers
        assert run["tf_config"]["task"] == {"type": "worker", "index": index}
        assert run["value"]["legacy"] == "1" and run["value"]["x"] == 1
        assert run["value"]["gpus"] == ""  # dois TF não disputam a mesma GPU


def _hang(config):
    time.sleep(120)


def test_the_check_kills_processes_that_hang(by_value):
    before = descendants(os.getpid())
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="passaram de 3 s"):
        checks._launch(_hang, {}, num_workers=2, timeout_s=3)
    assert time.monotonic() - start < 15
    time.sleep(0.2)
    assert system.alive(descendants(os.getpid())) <= before


def test_the_check_stops_the_workers_it_started_when_another_does_not_start(by_value, monkeypatch):
    started, real = [], system.spawn_group

    def spawn_once(*args, **kwargs):
        if started:
            raise OSError("sem processos livres")
        started.append(real(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(system, "spawn_group", spawn_once)
    with pytest.raises(OSError, match="sem processos livres"):
        checks._launch(_hang, {}, num_workers=2, timeout_s=60)
    assert started[0].wait(timeout=10) < 0  # o 1º, que esperaria o par, foi encerrado (um sinal)


def _boom(config):
    if json.loads(os.environ["TF_CONFIG"])["task"]["index"] == 1:
        raise ValueError("quebrou de propósito")
    time.sleep(120)  # o par espera o que caiu


def _exit_without_traceback(config):
    os._exit(3)


def test_the_check_reports_the_worker_that_failed_and_stops_its_peer(by_value):
    start = time.monotonic()
    waiting, failed = checks._launch(_boom, {}, num_workers=2, timeout_s=60)
    assert time.monotonic() - start < 30
    assert waiting["error"] is None and waiting["value"] is None  # encerrado, não falhou
    assert "ValueError: quebrou de propósito" in failed["error"]
    (gone,) = checks._launch(_exit_without_traceback, {}, num_workers=1, timeout_s=60)
    assert "terminou com código 3" in gone["error"]


# O treino da solução num cluster de várias máquinas, com uma delas perdendo a rede no meio do
# treino, está em tests/test_classroom_machines.py (máquinas separadas, firewall, cabo puxado).
