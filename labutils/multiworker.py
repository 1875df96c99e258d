"""Encanamento do exercício multi-worker (lição 07): Ray Train + MultiWorkerMirroredStrategy.

- :func:`use_legacy_keras` / :func:`runtime_env`: o tf-keras (Keras 2) que o
  ``MultiWorkerMirroredStrategy`` exige no ``model.fit`` (o Keras 3 não o suporta);
- :func:`plan_workers`: confere, ANTES de treinar, se o cluster comporta os workers pedidos
  (falha na hora, em vez de esperar para sempre por recursos que não existem);
- :func:`describe_worker` / :func:`read_workers` / :func:`workers_table`: o ``TF_CONFIG`` e o nó
  de cada worker, gravados no checkpoint e mostrados como tabela;
- :func:`resume` / :func:`checkpoint_epoch`: retomar o treino do último checkpoint após uma falha;
- :func:`run_trainer`: ``trainer.fit()`` com limite de tempo e TODOs do aluno traduzidos;
- :func:`launch_by_hand`: o mesmo treino em N processos locais com ``TF_CONFIG``, sem Ray.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labutils.config import pick

LEGACY_KERAS_ENV = {"TF_USE_LEGACY_KERAS": "1"}
STORAGE_ENV = "LABUTILS_TRAIN_STORAGE"
WORKER_FILE = "worker_{rank}.json"


def fit_timeout_s() -> float:
    """Limite de tempo de um treino multi-worker (a escala ``smoke`` não pode travar o CI)."""
    return pick(full=4 * 3600.0, smoke=420.0)


def use_legacy_keras() -> None:
    """Faz ``tf.keras`` ser o tf-keras (Keras 2) neste processo. Chame antes de importar o TF."""
    import importlib.util

    if importlib.util.find_spec("tf_keras") is None:
        raise RuntimeError(
            "O pacote tf-keras não está instalado: `pip install tf-keras==2.21.0` "
            "(ou `make setup`). Sem ele o MultiWorkerMirroredStrategy não funciona no model.fit."
        )
    os.environ.update(LEGACY_KERAS_ENV)
    tf = sys.modules.get("tensorflow")
    if tf is not None and not getattr(tf.keras, "__name__", "").startswith("tf_keras"):
        raise RuntimeError(
            "O TensorFlow já foi importado neste kernel com o Keras 3, e TF_USE_LEGACY_KERAS só "
            "vale se definida ANTES do import. Reinicie o kernel (Kernel → Restart) e rode as "
            "células a partir do início."
        )


def runtime_env() -> dict[str, Any]:
    """``runtime_env`` do Ray para os workers: a variável chega antes do import do TF."""
    return {"env_vars": dict(LEGACY_KERAS_ENV)}


def storage_path() -> str:
    """Onde o Ray Train guarda checkpoints: ``LABUTILS_TRAIN_STORAGE`` ou ``results/ray_train``.

    Num cluster de várias máquinas, esta pasta precisa ser compartilhada por todos os nós
    (NFS) ou ser um endereço de nuvem (``s3://...``): cada worker grava nela.
    """
    env = os.environ.get(STORAGE_ENV)
    if env:
        return env
    path = Path(__file__).resolve().parents[1] / "results" / "ray_train"
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


# ---------------------------------------------------------------- recursos


@dataclass(frozen=True)
class WorkerPlan:
    """Quantos workers, com quais recursos, e em quais nós eles cabem."""

    num_workers: int
    use_gpu: bool
    resources_per_worker: dict[str, float]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    #: quantos workers desses o cluster comporta ao todo
    capacity: int = 0
    #: se um nó qualquer cair, os ``num_workers`` ainda cabem nos nós que sobram?
    survives_node_loss: bool = False


def _alive_nodes() -> list[dict[str, Any]]:
    import ray

    return [
        {
            "node_id": node["NodeID"],
            "ip": node.get("NodeManagerAddress"),
            "CPU": float(node.get("Resources", {}).get("CPU", 0.0)),
            "GPU": float(node.get("Resources", {}).get("GPU", 0.0)),
        }
        for node in ray.nodes()
        if node.get("Alive")
    ]


def _fits(nodes: list[dict[str, Any]], need: dict[str, float]) -> int:
    """Quantos workers com os recursos ``need`` cabem, somando nó a nó."""
    total = 0
    for node in nodes:
        per_node = [int(node.get(k, 0.0) // v) for k, v in need.items() if v > 0]
        total += min(per_node) if per_node else 0
    return total


def plan_workers(
    num_workers: int,
    *,
    use_gpu: bool | None = None,
    cpus_per_worker: float = 1.0,
    wait_s: float = 15.0,
) -> WorkerPlan:
    """Confere se o cluster Ray conectado comporta ``num_workers`` workers e devolve o plano.

    ``use_gpu=None`` usa GPU quando o cluster tem ao menos uma por worker. Falha na hora
    (``RuntimeError``, em português) quando os workers não cabem no cluster; se cabem mas os
    recursos estão ocupados, espera até ``wait_s`` segundos antes de falhar.
    """
    import ray

    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise ValueError(f"num_workers deve ser um inteiro ≥ 1, recebi {num_workers!r}.")
    if isinstance(cpus_per_worker, bool) or not isinstance(cpus_per_worker, int | float):
        raise ValueError(f"cpus_per_worker deve ser um número, recebi {cpus_per_worker!r}.")
    if not cpus_per_worker > 0:
        raise ValueError(f"cpus_per_worker deve ser positivo, recebi {cpus_per_worker!r}.")
    if not isinstance(wait_s, int | float) or wait_s < 0:
        raise ValueError(f"wait_s deve ser um número de segundos >= 0, recebi {wait_s!r}.")
    if not ray.is_initialized():
        raise RuntimeError("O Ray não está iniciado: rode antes a célula com init_ray(...).")
    nodes = _alive_nodes()
    gpus = sum(n["GPU"] for n in nodes)
    if use_gpu is None:
        use_gpu = gpus >= num_workers
    need = {"CPU": float(cpus_per_worker)}
    if use_gpu:
        need["GPU"] = 1.0
    fits = _fits(nodes, need)
    listing = ", ".join(f"{n['ip']} ({n['CPU']:g} CPU, {n['GPU']:g} GPU)" for n in nodes)
    if fits < num_workers:
        raise RuntimeError(
            f"Pedido: {num_workers} workers com {need} cada, mas o cluster só comporta {fits} "
            f"({len(nodes)} nó(s): {listing}).\nO Ray Train ficaria esperando para sempre. "
            "Diminua num_workers, use menos CPU por worker (cpus_per_worker=0.5), "
            + ("use use_gpu=False, " if use_gpu else "")
            + "ou junte mais nós ao cluster (`ray start --address=...`)."
        )
    deadline = time.monotonic() + wait_s
    while True:  # cabe no cluster; os recursos estão livres agora?
        free = ray.available_resources()
        if all(free.get(k, 0.0) + 1e-9 >= v * num_workers for k, v in need.items()):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"O cluster comporta {num_workers} workers, mas os recursos estão ocupados agora "
                f"(livres: CPU={free.get('CPU', 0):g}, GPU={free.get('GPU', 0):g}). Espere os "
                "outros trabalhos terminarem (veja o dashboard) e tente de novo."
            )
        time.sleep(0.5)
    # para recomeçar depois da queda de um nó, os workers têm de caber sem o nó mais forte
    without_biggest = sorted(nodes, key=lambda n: _fits([n], need))[:-1]
    survives = _fits(without_biggest, need) >= num_workers
    return WorkerPlan(num_workers, bool(use_gpu), need, nodes, fits, survives)


# ---------------------------------------------------------------- o que cada worker viu


def strategy_name(strategy: Any) -> str:
    """Nome público da estratégia (``tf.distribute.X``): a classe da MultiWorkerMirroredStrategy
    chama-se internamente ``CollectiveAllReduceStrategy``."""
    tf = sys.modules.get("tensorflow")
    for public in ("MultiWorkerMirroredStrategy", "MirroredStrategy", "OneDeviceStrategy"):
        cls = getattr(getattr(tf, "distribute", None), public, None)
        if cls is not None and type(strategy) is cls:
            return public
    return type(strategy).__name__


def describe_worker(strategy: Any, global_batch: int) -> dict[str, Any]:
    """O que ESTE worker recebeu: TF_CONFIG, nó, processo e o que a estratégia enxerga."""
    tf_config = json.loads(os.environ.get("TF_CONFIG", "{}") or "{}")
    info: dict[str, Any] = {
        "rank": tf_config.get("task", {}).get("index"),
        "tf_config": tf_config,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "node_id": None,
        "strategy": strategy_name(strategy),
        "replicas": int(strategy.num_replicas_in_sync),
        "global_batch": int(global_batch),
    }
    try:
        import ray

        if ray.is_initialized():
            info["node_id"] = ray.get_runtime_context().get_node_id()
            info["rank"] = ray.train.get_context().get_world_rank()
    except Exception:  # fora do Ray (treino "à mão"): fica o que o TF_CONFIG diz
        pass
    return info


def write_worker(directory: str | os.PathLike, info: dict[str, Any]) -> Path:
    """Grava ``info`` como ``worker_<rank>.json`` em ``directory`` (a pasta do checkpoint)."""
    path = Path(directory) / WORKER_FILE.format(rank=info["rank"])
    path.write_text(json.dumps(info, indent=1), encoding="utf-8")
    return path


def checkpoint_epoch(directory: str | os.PathLike) -> int:
    """A última época completa gravada num checkpoint (o ``epoch`` do ``worker_0.json``).

    Ao retomar depois de uma falha, o treino continua na época seguinte a esta.
    """
    path = Path(directory) / WORKER_FILE.format(rank=0)
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["epoch"])
    except (OSError, KeyError, ValueError, TypeError) as err:
        raise ValueError(
            f"O checkpoint em {directory} não diz a época ({path.name} sem 'epoch'): grave "
            "{**info, 'epoch': ...} com multiworker.write_worker antes do ray.train.report."
        ) from err


def resume(checkpoint: Any, strategy: Any) -> tuple[Any, int]:
    """Retoma o treino de um ``ray.train.Checkpoint`` deste exercício: ``(modelo, próxima época)``.

    Carrega o ``model.keras`` com ``tf.keras.models.load_model`` (pesos **e** estado do
    otimizador; ``load_weights`` perderia o otimizador) dentro de ``strategy.scope()``, para que
    as variáveis nasçam espelhadas, e lê a época gravada (:func:`checkpoint_epoch`).
    """
    import tensorflow as tf

    if not hasattr(checkpoint, "as_directory"):
        raise TypeError(f"checkpoint deve ser um ray.train.Checkpoint, recebi {checkpoint!r}.")
    with checkpoint.as_directory() as directory, strategy.scope():
        path = Path(directory) / "model.keras"
        if not path.exists():
            raise ValueError(
                f"O checkpoint em {directory} não tem model.keras (só o rank 0 o grava)."
            )
        model = tf.keras.models.load_model(path)
        return model, checkpoint_epoch(directory) + 1


def read_workers(checkpoint: Any) -> list[dict[str, Any]]:
    """Lê os ``worker_<rank>.json`` de um ``ray.train.Checkpoint`` (ou de uma pasta)."""
    if hasattr(checkpoint, "as_directory"):
        with checkpoint.as_directory() as directory:
            return read_workers(directory)
    files = sorted(Path(checkpoint).glob(WORKER_FILE.format(rank="*")))
    infos = [json.loads(f.read_text(encoding="utf-8")) for f in files]
    return sorted(infos, key=lambda i: i["rank"])


def workers_table(infos: list[dict[str, Any]]) -> Any:
    """Tabela (pandas): um worker por linha, com o TF_CONFIG que recebeu e o nó onde rodou."""
    import pandas as pd

    rows = []
    for info in infos:
        cfg = info.get("tf_config", {})
        rows.append(
            {
                "rank": info["rank"],
                "nó": (info.get("node_id") or "-")[:12],
                "host/pid": f"{info.get('host')}/{info.get('pid')}",
                "TF_CONFIG task": json.dumps(cfg.get("task")),
                "TF_CONFIG cluster.worker": ", ".join(cfg.get("cluster", {}).get("worker", [])),
                "estratégia": info.get("strategy"),
                "réplicas": info.get("replicas"),
                "lote global": info.get("global_batch"),
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- executar com limite


def _todo_calls(code: Any) -> list[tuple[Any, ...]]:
    """Os argumentos constantes de cada chamada ``todo(...)`` no código (e nos aninhados)."""
    import dis

    calls: list[tuple[Any, ...]] = []
    args: list[Any] | None = None
    for ins in dis.get_instructions(code):
        if ins.argval == "todo" and ins.opname.startswith("LOAD_"):
            args = []
        elif args is not None and ins.opname == "LOAD_CONST":
            args.append(ins.argval)
        elif args is not None and ins.opname.startswith(("PRECALL", "CALL")):
            calls.append(tuple(args))
            args = None
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            calls += _todo_calls(const)
    return calls


def pending_todo(fn: Any) -> str | None:
    """A mensagem do 1º ``checks.todo(...)`` ainda presente em ``fn`` ou nas funções que ela usa.

    Olha o código (sem executá-lo) da função e das funções do mesmo módulo que ela chama, como
    ``train_loop_per_worker`` → ``train_epochs``. Serve para avisar de um TODO por fazer ANTES de
    iniciar os workers: dentro deles, o erro seria repetido a cada nova tentativa do Ray Train.
    """
    seen: set[int] = set()
    stack = [fn]
    while stack:
        f = stack.pop(0)
        code = getattr(f, "__code__", None)
        if code is None or id(f) in seen:
            continue
        seen.add(id(f))
        for args in _todo_calls(code):
            if len(args) >= 2:
                return f"TODO {args[0]} ainda não terminado: {args[1]}."
        module = getattr(f, "__module__", None)
        names = list(code.co_names)  # na ordem em que aparecem no código
        for const in code.co_consts:
            if hasattr(const, "co_names"):
                names += const.co_names
        for name in dict.fromkeys(names):
            other = getattr(f, "__globals__", {}).get(name)
            if callable(other) and getattr(other, "__module__", None) == module:
                stack.append(other)
    return None


def _find_todo(err: BaseException) -> BaseException | None:
    from labutils.checks import TodoNotDone

    seen: set[int] = set()
    stack: list[BaseException] = [err]
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, TodoNotDone):
            return e
        stack.extend(getattr(e, "worker_failures", {}).values())
        for attr in ("__cause__", "__context__", "cause", "controller_failure"):
            inner = getattr(e, attr, None)
            if isinstance(inner, BaseException):
                stack.append(inner)
    return None


def run_trainer(trainer: Any, timeout_s: float | None = None) -> Any:
    """``trainer.fit()`` com limite de tempo; um TODO não feito num worker vira ``TodoNotDone``.

    Se o treino passar de ``timeout_s`` (padrão: :func:`fit_timeout_s`), levanta
    ``TimeoutError`` em vez de travar o notebook. Nesse caso rode ``ray.shutdown()``.
    """
    from labutils.checks import TodoNotDone

    if timeout_s is not None and not (isinstance(timeout_s, int | float) and timeout_s > 0):
        raise ValueError(f"timeout_s deve ser um número de segundos > 0, recebi {timeout_s!r}.")
    if not callable(getattr(trainer, "fit", None)):
        raise TypeError(
            f"run_trainer espera um trainer do Ray Train (com .fit()), recebi {trainer!r}."
        )
    for name in ("scaling_config", "train_loop_per_worker"):
        if getattr(trainer, name, None) is Ellipsis:
            raise TodoNotDone(f"{name} ainda não terminado: troque o `...` pelo seu código.")
    todo = pending_todo(getattr(trainer, "train_loop_per_worker", None))
    if todo:  # antes de iniciar os workers: lá dentro, o erro se repetiria a cada tentativa
        raise TodoNotDone(todo)
    timeout_s = fit_timeout_s() if timeout_s is None else timeout_s
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = trainer.fit()
        except BaseException as err:  # repassado à thread do notebook
            box["error"] = err

    thread = threading.Thread(target=target, name="trainer.fit", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise TimeoutError(
            f"O treino passou de {timeout_s:g} s sem terminar. Causas comuns: um worker esperando "
            "um par que nunca subiu, ou recursos ocupados. Rode `ray.shutdown()` e confira o "
            "dashboard."
        )
    if "error" in box:
        todo = _find_todo(box["error"])
        if todo is not None:
            raise TodoNotDone(str(todo).splitlines()[-1].split("TodoNotDone: ")[-1]) from None
        raise box["error"]
    return box["result"]


# ---------------------------------------------------------------- treino "à mão", sem Ray


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} deve ser um inteiro >= 1, recebi {value!r}.")


def tf_configs(num_workers: int) -> list[dict[str, Any]]:
    """Um ``TF_CONFIG`` por worker: a mesma lista de endereços, um índice diferente em cada."""
    _check_count("num_workers", num_workers)
    from labutils.system import free_ports

    workers = [f"127.0.0.1:{port}" for port in free_ports(num_workers)]
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
        env = {**os.environ, **LEGACY_KERAS_ENV, "TF_CONFIG": json.dumps(cfg)}
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        log = open(workdir / f"worker_{i}.log", "wb")  # noqa: SIM115 - fechado abaixo
        cmd = [sys.executable, "-m", "labutils.multiworker", str(workdir), str(i)]
        procs.append(
            (
                cfg,
                log,
                subprocess.Popen(cmd, env=env, stdout=log, stderr=log, start_new_session=True),
            )
        )
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
        for _cfg, log, proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
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


def _worker_main(workdir: str, index: str) -> int:
    """Processo de um worker "à mão": lê a função serializada, roda, grava o retorno."""
    from ray import cloudpickle  # o mesmo serializador que o Ray usa

    fn, config = cloudpickle.loads((Path(workdir) / "job.pkl").read_bytes())
    value = fn(config)
    (Path(workdir) / f"result_{index}.pkl").write_bytes(cloudpickle.dumps(value))
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker_main(*sys.argv[1:3]))
