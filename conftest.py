"""Configuração comum do pytest (testes e notebooks via nbval, que recebem este ambiente).

A sessão falha se ficou vivo um processo do Ray iniciado por ela, e só esses são encerrados: o Ray
de outra pessoa na mesma máquina nunca é tocado (``LABUTILS_CHECK_RAY_LEFTOVERS=0`` desliga)."""

import os
import secrets
import sys

import processes
import pytest

os.environ.setdefault("LABUTILS_SCALE", "smoke")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("RAY_AUTH_MODE", "token")
# Sem barra de progresso do tfds/Ray Data nos logs do CI.
os.environ.setdefault("TFDS_DISABLE_PROGRESS_BAR", "1")


#: os arquivos mais longos do ``make test`` (docs/tempos_do_make_test.md), do maior ao menor
LONGEST = (
    "tests/test_grade.py",
    "tests/test_classroom_machines.py",
    "notebooks/06_inferencia_em_lote.ipynb",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Os mais longos primeiro, cada arquivo em bloco: os curtos no fim preenchem as sobras."""
    heavy = {
        item.path
        for item in items
        if item.get_closest_marker("slow") or item.path.suffix == ".ipynb"
    }

    def rank(item) -> int:
        relative = item.path.relative_to(config.rootpath).as_posix()
        if relative in LONGEST:
            return LONGEST.index(relative)
        return len(LONGEST) + (item.path not in heavy)

    items.sort(key=rank)  # estável: a ordem dentro de cada arquivo fica


#: os arquivos cujos testes usam o cluster local dos testes (``tests/conftest.py``): no
#: pytest-xdist, uma unidade só, num processo e em seguida, e o cluster sobe uma vez, não três
SHARED_CLUSTER_FILES = (
    "tests/test_browser.py",
    "tests/test_cluster.py",
    "tests/test_cluster_security.py",
)
#: o mesmo para o Ray local simples dos testes (o fixture ``local_ray``): uma partida, não três
SHARED_RAY_FILES = (
    "tests/test_faults.py",
    "tests/test_inference.py",
    "tests/test_raytools.py",
)
#: cada unidade do pytest-xdist com mais de um arquivo: o nome dela e os arquivos
SHARED_UNITS = {
    "cluster local dos testes": SHARED_CLUSTER_FILES,
    "Ray local dos testes": SHARED_RAY_FILES,
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """O ``--dist loadfile`` do ``make test``, com os arquivos de cada :data:`SHARED_UNITS`
    numa unidade."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    unit_of = {path: name for name, files in SHARED_UNITS.items() for path in files}

    class SharedInOneUnit(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)
            return unit_of.get(path, path)

    return SharedInOneUnit(config, log)


#: quanto esperar que os processos do Ray da sessão saiam sozinhos antes de acusá-los
#: (o Ray leva alguns segundos para encerrar os seus no ``ray.shutdown()``)
LEFTOVER_GRACE_S = 15.0


def _check_enabled() -> bool:
    return os.environ.get("LABUTILS_CHECK_RAY_LEFTOVERS", "1") != "0"


def pytest_configure(config):
    # uma marca nova por sessão (um pytest dentro de outro ganha a sua)
    os.environ[processes.SESSION_MARK] = secrets.token_hex(8)


#: os descendentes vistos ao fim de cada teste (PID → hora de criação): um órfão que o Ray
#: renomeou não mostra mais a marca no ambiente, e só assim é reconhecido
SEEN: dict[int, float] = {}


def pytest_runtest_logfinish(nodeid, location):
    if _check_enabled():
        processes.remember_descendants(SEEN)


#: o que cada processo do pytest-xdist (``make test``: ``-n 2``) achou deixado para trás
WORKER_LEFTOVERS = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session, exitstatus):
    listing = _check_leftovers()
    # num processo do pytest-xdist, o código de saída não conta: vai ao principal em workeroutput
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and listing:
        workeroutput["ray_leftovers"] = listing
    for found in [listing, *session.config.stash.get(WORKER_LEFTOVERS, [])]:
        if found:
            print(f"\nERRO: processos do Ray deixados pelos testes (encerrados):\n{found}")
            session.exitstatus = 1
    session.config.stash[EXIT_STATUS] = int(session.exitstatus)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """No processo principal do pytest-xdist: guarda o que um processo de testes achou."""
    found = getattr(node, "workeroutput", {}).get("ray_leftovers")
    if found:
        node.config.stash.setdefault(WORKER_LEFTOVERS, []).append(f"[{node.gateway.id}]\n{found}")


def _check_leftovers() -> str:
    """Os processos do Ray deixados vivos pela sessão (já encerrados), um por linha."""
    if not _check_enabled():
        return ""
    left = processes.ray_leftovers(os.environ[processes.SESSION_MARK], LEFTOVER_GRACE_S, SEEN)
    from labutils.system import kill_pids

    kill_pids(left)
    return "\n".join(f"  {pid}: {cmd}" for pid, cmd in sorted(left.items()))


#: o código de saída da sessão, guardado no pytest_sessionfinish para o pytest_unconfigure
EXIT_STATUS = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Sai com o código da sessão sem o fim do interpretador (``LABUTILS_HARD_EXIT=0`` desliga):
    em 3/12/2026 o pytest caiu uma vez com "Segmentation fault" ao encerrá-lo (causa não achada;
    para caçá-la, ``LABUTILS_HARD_EXIT=0`` e ``-X faulthandler``)."""
    if EXIT_STATUS in config.stash and os.environ.get("LABUTILS_HARD_EXIT", "1") != "0":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[EXIT_STATUS])
