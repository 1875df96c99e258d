"""Configuração comum do pytest (testes e notebooks via nbval, que recebem este ambiente).

A sessão falha se ficou vivo algum processo do Ray **iniciado por ela** (descendente deste pytest
com a marca :data:`processes.SESSION_MARK` no ambiente, ou visto descendente ao fim de um teste),
e só esses são encerrados: o Ray de outra pessoa na mesma máquina nunca é tocado
(``LABUTILS_CHECK_RAY_LEFTOVERS=0`` desliga).
"""

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


# ---------------------------------------------------------------- os longos primeiro


#: os arquivos mais longos do ``make test`` (docs/tempos_do_make_test.md), do maior ao menor
LONGEST = (
    "tests/test_grade.py",
    "tests/test_classroom_machines.py",
    "notebooks/06_inferencia_em_lote.ipynb",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Os mais longos primeiro (:data:`LONGEST`, os arquivos ``slow`` e os notebooks), cada
    arquivo em bloco: no ``make test`` (``--dist loadfile --no-loadscope-reorder``), os curtos no
    fim preenchem as sobras dos dois processos."""
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


# ---------------------------------------------------------------- nenhum Ray deixado para trás

#: quanto esperar que os processos do Ray da sessão saiam sozinhos antes de acusá-los
#: (o Ray leva alguns segundos para encerrar os seus no ``ray.shutdown()``)
LEFTOVER_GRACE_S = 15.0


def _check_enabled() -> bool:
    return os.environ.get("LABUTILS_CHECK_RAY_LEFTOVERS", "1") != "0"


def pytest_configure(config):
    # uma marca nova por sessão; um pytest dentro de outro (teste do próprio conftest) ganha
    # a sua, para não confundir os processos das duas
    os.environ[processes.SESSION_MARK] = secrets.token_hex(8)


#: os descendentes desta sessão vistos ao fim de cada teste (PID → hora de criação): um órfão que
#: o Ray renomeou (setproctitle) não mostra mais a marca no ambiente, e só assim é reconhecido
#: (visto: um ``ray-dashboard-NodeHead-0`` sobreviveu 1 h 28 min a uma sessão)
SEEN: dict[int, float] = {}


def pytest_runtest_logfinish(nodeid, location):
    if _check_enabled():
        processes.remember_descendants(SEEN)


#: o que cada processo do pytest-xdist (``make test``: ``-n 2``) achou deixado para trás
WORKER_LEFTOVERS = pytest.StashKey[list[str]]()


def pytest_sessionfinish(session, exitstatus):
    listing = _check_leftovers()
    # Num processo do pytest-xdist, o código de saída dele não conta: o resultado vai ao
    # processo principal em workeroutput (enviado depois deste hook), que falha a sessão.
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
    """Os processos do Ray que os testes desta sessão deixaram vivos (já encerrados), um por
    linha; vazio se nenhum."""
    if not _check_enabled():
        return ""
    left = processes.ray_leftovers(os.environ[processes.SESSION_MARK], LEFTOVER_GRACE_S, SEEN)
    from labutils.system import kill_pids

    kill_pids(left)
    return "\n".join(f"  {pid}: {cmd}" for pid, cmd in sorted(left.items()))


# ---------------------------------------------------------------- saída sem o teardown nativo

#: o código de saída da sessão, guardado no pytest_sessionfinish para o pytest_unconfigure
EXIT_STATUS = pytest.StashKey[int]()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Sai com o código da sessão sem o fim do interpretador (``atexit``, os destrutores do TF,
    gRPC e Ray), depois do resumo e dos outros plugins (``trylast``); ``LABUTILS_HARD_EXIT=0``
    desliga. Por quê: em 3/12/2026, numa de quatro execuções completas, o pytest caiu com
    "Segmentation fault" ao encerrar o interpretador (o make falhou, 139), e 12 sessões parciais
    não o repetiram: a causa não foi achada. Para caçá-la, rode a suíte inteira com
    ``LABUTILS_HARD_EXIT=0`` e ``-X faulthandler``."""
    if EXIT_STATUS in config.stash and os.environ.get("LABUTILS_HARD_EXIT", "1") != "0":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(config.stash[EXIT_STATUS])
