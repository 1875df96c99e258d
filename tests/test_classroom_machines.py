"""A sala de aula em máquinas separadas (*network namespaces* com IP, ``HOME`` e ``TMPDIR``
próprios; instrutor e aluno atrás de um firewall com só as portas da sala), com os comandos do
README e da lição 04: o que uma turma encontra, do ``join`` ao cabo puxado no meio do treino.
Precisa de root (``ip netns``) e do ``iptables``; sem eles, é pulado com o motivo."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from netns import PORT, ROOT, WHY_NOT, ip, machines

SOLUTION = ROOT / "notebooks" / "07_exercicio_multiworker_solucao.ipynb"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or ""),
    pytest.mark.timeout(480),
]


@pytest.fixture(scope="module")
def classroom():
    """Três máquinas; o instrutor e o aluno que entra, com firewall."""
    with machines(3, firewalled=2) as made:
        yield made


DRIVER = textwrap.dedent(
    """
    import json, ray
    from labutils.data import load_california_housing
    from labutils.search import split_train_validation_test
    from labutils.lesson02 import fit_and_score

    ray.init(log_to_driver=False)  # RAY_ADDRESS: o endereço do nó principal
    housing = load_california_housing()
    dados = split_train_validation_test(housing.data, housing.target).fit_eval
    ref = ray.put(dados)

    @ray.remote(num_cpus=1)
    def treino(n, d, dados):
        import time
        time.sleep(1.0)  # segura a CPU: as tarefas simultâneas vão para os dois nós
        return fit_and_score(n, d, *dados), ray.util.get_node_ip_address()

    # a porta que o Ray Train sorteia para o gRPC do TensorFlow (a faixa efêmera da tabela)
    @ray.remote(num_cpus=0)
    class Escuta:
        def __init__(self):
            import socket
            self.sock = socket.socket()
            self.sock.bind(("", 0))  # como find_free_port do Ray Train
            self.sock.listen()

        def endereco(self):
            return ray.util.get_node_ip_address(), self.sock.getsockname()[1]

    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    outro = [n["NodeID"] for n in ray.nodes() if n["Alive"] and
             n["NodeManagerAddress"] != ray.util.get_node_ip_address()][0]
    escuta = Escuta.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(outro, soft=False)).remote()
    ip_porta = ray.get(escuta.endereco.remote(), timeout=60)
    import socket
    socket.create_connection(ip_porta, timeout=5).close()

    grade = [(10, 4), (20, 6), (10, 6), (20, 4)]
    saida = ray.get([treino.remote(n, d, ref) for n, d in grade], timeout=180)
    local = [fit_and_score(n, d, *dados)[2] for n, d in grade]
    remoto = [r[0][2] for r in saida]
    print(json.dumps({"ips": sorted({ip for _, ip in saida}), "local": local, "remoto": remoto,
                      "porta_sorteada": ip_porta}))
    ray.shutdown()
    """
)


# As células "multinode" da solução da lição 07, pelo RAY_ADDRESS, com menos épocas e cada worker
# anotando, a cada report, a época, o PID (um novo = nova tentativa), o nó e o IP; no fim, a
# função do aluno (com o TODO) e a sua mensagem.
EXERCISE_DRIVER = """
import json, os, sys
import nbformat
from tools import make_student_notebook as exercise
nb = nbformat.read(sys.argv[1], as_version=4)
log_dir, epochs = sys.argv[2], int(sys.argv[3])
cells = [c for c in nb.cells if "multinode" in c.metadata.get("tags", [])]
ns = {"__name__": "__main__"}


def logged(config, _loop=None):
    import ray
    import ray.train

    real = ray.train.report

    def report(metrics, checkpoint=None, **kwargs):
        real(metrics, checkpoint=checkpoint, **kwargs)
        rank = ray.train.get_context().get_world_rank()
        line = {"epoch": metrics["epoch"], "pid": os.getpid(),
                "node_id": ray.get_runtime_context().get_node_id(),
                "ip": ray.util.get_node_ip_address()}
        with open(os.path.join(log_dir, f"rank{rank}.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\\n")

    ray.train.report = report
    _loop(config)


for cell in cells:
    if "trainer = TensorflowTrainer(" in cell.source and "train_loop_per_worker," in cell.source:
        logged.__defaults__ = (ns["train_loop_per_worker"],)
        ns["train_loop_per_worker"] = logged
    exercise.run_cell(cell.source, ns, "solucao")
    if cell.source.startswith("config = "):
        ns["config"]["epochs"] = epochs
result, workers = ns["result"], ns["workers"]
with result.checkpoint.as_directory() as d:
    files = sorted(os.listdir(d))
report = {"metrics": result.metrics, "workers": workers, "files": files}
loop = next(c for c in cells if "def train_loop_per_worker" in c.source)
exercise.run_cell(exercise.strip_solutions(loop.source), ns, "aluno")
try:
    ns["checks"].check_training_function(ns["train_loop_per_worker"], ns["config"])
    report["todo"] = None
except ns["checks"].TodoNotDone as err:
    report["todo"] = str(err)
ns["ray"].shutdown()
print("REPORT" + json.dumps(report))
"""

# Uma tarefa em cada máquina de aluno (afinidade "soft"), até o arquivo "cabo_puxado" (o disco é um
# só): a resposta da máquina sem rede não chega, e o Ray a roda de novo quando o keepalive do gRPC
# vence (~20 s com CLASSROOM_SYSTEM_CONFIG; ~430 s com os padrões do Ray).
TASKS_DRIVER = textwrap.dedent(
    """
    import json, os, sys, time, ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init(log_to_driver=False)  # RAY_ADDRESS: o endereço do nó principal
    marks, ips = sys.argv[1], sys.argv[2:]

    @ray.remote(num_cpus=0, max_retries=3)
    def espera_o_cabo(i):
        ip = ray.util.get_node_ip_address()
        open(os.path.join(marks, f"{i}_{ip}_{os.getpid()}"), "w").close()
        while not os.path.exists(os.path.join(marks, "cabo_puxado")):
            time.sleep(0.2)
        return i, ip

    nodes = {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}
    refs = [
        espera_o_cabo.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(nodes[ip], soft=True)
        ).remote(i)
        for i, ip in enumerate(ips)
    ]
    print(json.dumps({"saida": ray.get(refs, timeout=600)}))
    ray.shutdown()
    """
)

#: o limite da volta das tarefas depois do cabo puxado: ~20 s de keepalive mais a nova tentativa
TASKS_RECOVERY_LIMIT_S = 90

#: épocas do treino do teste: com folga, o cabo cai logo depois do 1º checkpoint
EXERCISE_EPOCHS = 5

#: o limite da volta do treino depois do cabo puxado: ~20 s de keepalive, o Ray Train recomeçando
#: os workers nas máquinas que ficaram e as épocas que faltam
CABLE_RECOVERY_LIMIT_S = 150


def _read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _attempts(entries: list[dict]) -> list[list[int]]:
    """Épocas reportadas por tentativa (na ordem), separadas pela troca de PID."""
    attempts: list[list[int]] = []
    pid = None
    for entry in entries:
        if entry["pid"] != pid:
            attempts.append([])
            pid = entry["pid"]
        attempts[-1].append(entry["epoch"])
    return attempts


HEAD_GONE_DRIVER = textwrap.dedent(
    """
    import ray, time

    ray.init(log_to_driver=False)

    @ray.remote(num_cpus=0)
    def longa():
        time.sleep(600)

    print("CONECTADO", flush=True)
    ray.get(longa.remote())
    """
)

#: o limite para um driver conectado desistir quando o nó principal some: os 20 s de
#: ``gcs_rpc_server_reconnect_timeout_s`` da sala e a saída do processo; com o padrão do Ray, ~61 s
HEAD_GONE_LIMIT_S = 40


CONNECT = "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=2)"


def test_the_classroom_on_separate_machines(classroom):
    head, student, late = classroom
    timings = {}

    # o firewall fecha mesmo o que não está na tabela: uma porta qualquer escutando no instrutor
    listener = head.start_python(
        "import socket, time; s = socket.socket(); s.bind(('0.0.0.0', 7777)); s.listen(); "
        "time.sleep(60)",
        stdout=subprocess.DEVNULL,
    )
    try:
        time.sleep(1.0)
        out, _, code = late.run([sys.executable, "-c", CONNECT, head.ip, "7777"], timeout=30)
        assert code != 0 and "timed out" in out, f"a porta 7777 deveria estar fechada:\n{out}"
    finally:
        listener.kill()
        listener.wait(timeout=10)

    out, timings["nó principal no ar"], code = head.cluster(
        "start-head", "--node-ip-address", head.ip, "--num-cpus", "1", "--no-dashboard"
    )
    assert code == 0, out
    token = (head.home / ".ray" / "auth_token").read_text().strip()
    assert token and token not in out, "o start-head mostrou o token"
    assert f"join {head.ip}:{PORT}" in out, f"o start-head não disse o que o aluno faz:\n{out}"
    address = f"{head.ip}:{PORT}"

    # o aluno que não copiou o token: recusado na hora, e nenhum token criado ali
    out, timings["join sem token"], code = late.cluster("join", address)
    assert code == 2 and "ainda não tem o token" in out, out
    assert not (late.home / ".ray").exists(), "o join criou um token na máquina do aluno"

    # o aluno com o token errado: o nó principal recusa, em segundos, sem traceback
    wrong = late.home / "token_errado"
    wrong.write_text("0" * len(token))
    out, timings["join com token errado"], code = late.cluster(
        "join", address, RAY_AUTH_TOKEN_PATH=str(wrong)
    )
    assert code == 2 and "recusou o token" in out and "Traceback" not in out, out
    assert timings["join com token errado"] < 20

    # o aluno que copiou o token do instrutor, como a lição 04 manda
    (student.home / ".ray").mkdir()
    shutil.copy(head.home / ".ray" / "auth_token", student.home / ".ray" / "auth_token")
    out, timings["join com o token"], code = student.cluster("join", address, "--num-cpus", "1")
    assert code == 0, out

    # a busca da lição 02, de um driver na máquina do instrutor, pelo RAY_ADDRESS
    out, timings["busca no cluster"], code = head.run(
        [sys.executable, "-c", DRIVER], timeout=240, RAY_ADDRESS=address
    )
    assert code == 0, out[-3000:]
    result = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])
    assert result["ips"] == sorted([head.ip, student.ip]), f"as tarefas rodaram em {result['ips']}"
    assert result["remoto"] == pytest.approx(result["local"], abs=1e-9), "MSE diferente no cluster"

    # a 3ª máquina entra também (com o token): o treino tem para onde ir quando uma cair
    (late.home / ".ray").mkdir()
    shutil.copy(head.home / ".ray" / "auth_token", late.home / ".ray" / "auth_token")
    out, _, code = late.cluster("join", address, "--num-cpus", "1")
    assert code == 0, out

    # tarefas esperando em cada máquina de aluno, de outro driver (veja TASKS_DRIVER)
    marks = head.home / "marcas"
    marks.mkdir()
    tasks_log = head.home / "tarefas.log"  # arquivos, não pipes: ninguém lê enquanto esperamos
    tasks = head.start_python(
        TASKS_DRIVER, str(marks), student.ip, late.ip,
        stdout=tasks_log.open("w"), RAY_ADDRESS=address,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(marks.iterdir())) < 2:
        assert tasks.poll() is None and time.monotonic() < deadline, "as tarefas não começaram"
        time.sleep(0.2)

    # o exercício (lição 07) no cluster da sala; depois do 1º checkpoint, o cabo de uma máquina de
    # aluno com um worker de treino é puxado: o treino volta do último checkpoint nas que ficaram
    storage, logs = head.home / "ray_train", head.home / "logs"
    logs.mkdir()
    driver_log = head.home / "treino.log"
    driver = head.start_python(
        EXERCISE_DRIVER, str(SOLUTION), str(logs), str(EXERCISE_EPOCHS),
        stdout=driver_log.open("w"), RAY_ADDRESS=address, LABUTILS_TRAIN_STORAGE=str(storage),
    )  # fmt: skip
    victim = None
    try:
        deadline = time.monotonic() + 180
        while victim is None and driver.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            if not list(storage.glob("licao07-*/checkpoint_manager_snapshot.json")):
                continue  # ainda sem checkpoint registrado pelo Ray Train
            ips = {
                e["ip"] for e in _read_log(logs / "rank0.jsonl") + _read_log(logs / "rank1.jsonl")
            }
            victim = next((m for m in (student, late) if m.ip in ips), None)
        assert victim is not None, "nenhum worker de treino rodou numa máquina de aluno"
        ip("-n", victim.ns, "link", "set", victim.link, "down")
        pulled = time.monotonic()
        (marks / "cabo_puxado").touch()
        waiting = {
            "treino de volta depois do cabo": driver,
            "tarefas de volta depois do cabo": tasks,
        }
        deadline = pulled + CABLE_RECOVERY_LIMIT_S + 60
        while waiting and time.monotonic() < deadline:
            for what, proc in list(waiting.items()):
                if proc.poll() is not None:
                    timings[what] = time.monotonic() - pulled
                    del waiting[what]
            time.sleep(0.2)
    finally:
        for proc in (driver, tasks):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    out, tasks_out = driver_log.read_text(), tasks_log.read_text()
    assert not waiting, (
        f"ainda esperando {sorted(waiting)} {time.monotonic() - pulled:.0f} s depois do cabo: {timings}"
    )
    assert tasks.returncode == 0, tasks_out[-3000:]
    done = json.loads([line for line in tasks_out.splitlines() if line.startswith("{")][-1])
    assert sorted(i for i, _ in done["saida"]) == [0, 1], done
    assert victim.ip not in {ip for _, ip in done["saida"]}, (
        f"resultado da máquina sem rede: {done}"
    )
    assert timings["tarefas de volta depois do cabo"] < TASKS_RECOVERY_LIMIT_S, timings

    assert driver.returncode == 0, out[-4000:]
    assert timings["treino de volta depois do cabo"] < CABLE_RECOVERY_LIMIT_S, timings
    report = json.loads(out.split("REPORT", 1)[1].splitlines()[0])
    assert report["metrics"]["epoch"] == EXERCISE_EPOCHS, report["metrics"]
    log = _read_log(logs / "rank0.jsonl")
    attempts = _attempts(log)
    assert len(attempts) == 2, f"esperava 2 tentativas (antes e depois do cabo): {attempts}"
    first, second = attempts
    assert first == list(range(1, len(first) + 1)) and first, first
    assert second == list(range(second[0], EXERCISE_EPOCHS + 1)), second
    assert second[0] > 1, "a 2ª tentativa recomeçou do zero: não retomou do checkpoint"
    # o Ray Train registra o checkpoint depois do report, sem esperar: se o cabo cai nesse
    # intervalo, a retomada parte do anterior e a última época terminada é refeita (uma, no máximo)
    assert len(set(first) & set(second)) <= 1, f"épocas refeitas demais: {attempts}"
    workers = report["workers"]  # os do fim: 2 workers MWMS em 2 máquinas com rede, distintas
    assert [w["rank"] for w in workers] == [0, 1]
    assert all(
        w["strategy"] == "MultiWorkerMirroredStrategy" and w["replicas"] == 2 for w in workers
    ), workers
    assert {w["tf_config"]["task"]["index"] for w in workers} == {0, 1}
    addresses = workers[0]["tf_config"]["cluster"]["worker"]
    assert not [a for a in addresses if a.startswith(f"{victim.ip}:")], addresses
    assert "model.keras" in report["files"] and "worker_1.json" in report["files"]
    assert (report["todo"] or "").startswith("TODO 3 ainda não terminado: escreva a função")

    # o nó principal some com um driver conectado: o driver sai em segundos, não fica pendurado
    driver = head.start_python(HEAD_GONE_DRIVER, stdout=subprocess.PIPE, RAY_ADDRESS=address)
    try:
        seen = ""  # as linhas de log do ray.init vêm antes
        while "CONECTADO" not in seen:
            line = driver.stdout.readline()
            assert line, f"o driver não conectou:\n{seen[-2000:]}"
            seen += line
        time.sleep(2.0)
        gcs = [p for p in map(psutil.Process, head.pids()) if p.name() == "gcs_server"]
        assert gcs, "não achei o gcs_server do nó principal"
        gcs[0].kill()
        gone = time.monotonic()
        out, _ = driver.communicate(timeout=HEAD_GONE_LIMIT_S + 60)
        timings["driver sai sem o nó principal"] = time.monotonic() - gone
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
    assert driver.returncode != 0, out[-3000:]
    assert timings["driver sai sem o nó principal"] < HEAD_GONE_LIMIT_S, (timings, out[-2000:])
    print("tempos (s): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
