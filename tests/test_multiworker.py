"""``labutils.multiworker`` e os processos da verificação do TODO 3 (lição 07). O treino da solução
num cluster de várias máquinas está em ``test_classroom_machines.py``."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest
from processes import descendants, run_python

from labutils import multiworker, system
from labutils.multiworker import checks
from tools.make_student_notebook import run_cell

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
STUDENT = SOLUTION.with_name("07_exercicio_multiworker_aluno.ipynb")


@pytest.mark.parametrize(
    ("keras_first", "says"),
    [
        ("", "KERAS tf_keras"),
        ("import tensorflow as tf; tf.keras.layers.Dense", "Reinicie o kernel"),
    ],
    ids=["antes do TensorFlow", "depois do Keras 3 (reinicie)"],
)
def test_use_legacy_keras_makes_tf_keras_the_keras_or_asks_to_restart(keras_first, says):
    run = run_python(
        f"""
        {keras_first}
        from labutils import multiworker
        multiworker.use_legacy_keras()
        import tensorflow as tf
        print("KERAS", tf.keras.__name__)
        """,
        timeout=120,
        env={"TF_USE_LEGACY_KERAS": ""},
    )
    assert (run.returncode == 0) == (not keras_first), run.stdout + run.stderr
    assert says in run.stdout + run.stderr


@pytest.fixture
def fake_cluster(monkeypatch):
    """Um 'cluster' de mentira: lista de nós e recursos livres controlados pelo teste."""
    import ray

    nodes = [
        ("a", True, {"CPU": 1.0}),
        ("b", True, {"CPU": 2.0, "GPU": 1.0}),
        ("c", False, {"CPU": 8.0}),
    ]
    state = {
        "nodes": [
            {"NodeID": k * 56, "Alive": alive, "NodeManagerAddress": f"10.0.0.{i}", "Resources": r}
            for i, (k, alive, r) in enumerate(nodes, 1)
        ],
        "free": {"CPU": 3.0, "GPU": 1.0},
    }
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "nodes", lambda: state["nodes"])
    monkeypatch.setattr(ray, "available_resources", lambda: dict(state["free"]))
    return state


@pytest.mark.parametrize(
    ("workers", "kwargs", "expected"),
    [
        (2, {}, (False, {"CPU": 1.0})),  # 1 GPU para 2 workers: não há uma por worker, CPU
        (1, {}, (True, {"CPU": 1.0, "GPU": 1.0})),
        (4, {"cpus_per_worker": 0.5}, (False, {"CPU": 0.5})),  # 2 no nó de 1 CPU + 4 no de 2
        (4, {}, "só comporta 3"),
        (2, {"use_gpu": True}, "só comporta 1"),
        (2, {"cpus_per_worker": 1.5}, "só comporta 1"),  # só cabem workers inteiros num nó
    ],
)
def test_plan_fits_the_live_nodes_or_fails_at_once(fake_cluster, workers, kwargs, expected):
    start = time.monotonic()
    if isinstance(expected, str):
        with pytest.raises(RuntimeError, match=expected):
            multiworker.plan_workers(workers, **kwargs)
        assert time.monotonic() - start < 2
    else:
        plan = multiworker.plan_workers(workers, **kwargs)
        assert (plan.use_gpu, plan.resources_per_worker) == expected and len(plan.nodes) == 2


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


def _cells(notebook: Path, *names: str) -> list[str]:
    """O código das células do notebook que definem as funções ``names``."""
    cells = nbformat.read(notebook, as_version=4).cells
    return [c.source for c in cells if any(f"def {name}(" in c.source for name in names)]


def _loop_from(notebook: Path) -> dict:
    """Define (sem executar) as funções do laço dos workers das células do notebook."""
    ns = {"__name__": "__main__", "checks": checks, "multiworker": multiworker}
    for source in _cells(notebook, "worker_datasets", "build_model", "train_loop_per_worker"):
        run_cell(source, ns, notebook.stem)
    return ns


def test_the_student_loop_is_all_todo_and_the_first_one_is_named_before_starting_workers():
    student = _loop_from(STUDENT)
    for number, name in ((1, "worker_datasets"), (2, "build_model")):
        with pytest.raises(checks.TodoNotDone, match=f"^TODO {number} "):
            getattr(checks, f"check_{name}")(student[name])
    assert checks.pending_todo(student["train_loop_per_worker"]).startswith("TODO 3 ")
    start = time.monotonic()
    with pytest.raises(checks.TodoNotDone, match="^Termine o TODO 1 primeiro"):
        checks.check_training_function(student["train_loop_per_worker"], {"batch_per_worker": 8})
    assert time.monotonic() - start < 20  # nenhum processo iniciado (só o import do TensorFlow)
    # TODO 3 feito: sobram os TODOs 1 e 2, nas funções que a função de treino chama
    run_cell(_cells(SOLUTION, "train_loop_per_worker")[0], student, "solucao")
    assert checks.pending_todo(student["train_loop_per_worker"]).startswith("TODO 1 ")
    assert checks.pending_todo(_loop_from(SOLUTION)["train_loop_per_worker"]) is None


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
    import tensorflow as tf

    tf.constant(1)  # inicia os dispositivos: sem GPU visível, o TF reclama do cuInit no stderr
    os._exit(3)


def test_the_check_reports_the_worker_that_failed_and_stops_its_peer(by_value):
    start = time.monotonic()
    waiting, failed = checks._launch(_boom, {}, num_workers=2, timeout_s=60)
    assert time.monotonic() - start < 30
    assert waiting["error"] is None and waiting["value"] is None  # encerrado, não falhou
    assert "ValueError: quebrou de propósito" in failed["error"]
    (gone,) = checks._launch(_exit_without_traceback, {}, num_workers=1, timeout_s=60)
    assert "terminou com código 3" in gone["error"]
    assert "cuInit" not in gone["error"], gone["error"]  # o fim do log mostrado, sem esse ruído


@pytest.mark.timeout(120)
def test_a_todo_in_a_notebook_cell_is_found_from_its_source(tmp_path):
    """Num kernel de verdade, como o aluno: o IPython guarda cada célula no ``linecache``."""
    from nbformat.v4 import new_code_cell, new_notebook

    from tools.run_notebooks import execute

    nb = new_notebook(cells=[
        new_code_cell("from labutils.multiworker import checks\n\n"
                      "def passo():\n    checks.todo(3, 'escreva o passo')\n\n"
                      "def treino(config):\n    passo()"),
        new_code_cell("assert checks.pending_todo(treino) == "
                      "'TODO 3 ainda não terminado: escreva o passo.', checks.pending_todo(treino)"),
    ])  # fmt: skip
    execute(nb, cwd=tmp_path, timeout=90)


@pytest.mark.parametrize(("cpus", "fits"), [(1, 1), (8, 8), (16, 16)])
def test_worker_plan_at_1_8_and_16_cpus(fake_cluster, cpus, fits):
    """Uma máquina de ``cpus`` CPUs (o LABUTILS_CPUS da matriz): os 2 workers da lição 07 cabem
    a partir de 2 CPUs; com 1, a recusa vem na hora, não uma espera sem fim."""
    fake_cluster["nodes"] = [
        {"NodeID": "a" * 56, "Alive": True, "NodeManagerAddress": "10.0.0.1",
         "Resources": {"CPU": float(cpus)}}
    ]  # fmt: skip
    fake_cluster["free"] = {"CPU": float(cpus)}
    start = time.monotonic()
    if fits < 2:
        with pytest.raises(RuntimeError, match="só comporta 1"):
            multiworker.plan_workers(2)
    else:
        plan = multiworker.plan_workers(2)
        assert (plan.capacity, plan.use_gpu, plan.survives_node_loss) == (fits, False, False)
    assert time.monotonic() - start < 2
