"""Testes num navegador de verdade: as duas páginas que os alunos usam.

1. JupyterLab: a lista de notebooks mostra as lições na ordem, e a lição 00 roda inteira
   ("Run All Cells") sem erro.
2. Painel (dashboard) do Ray: com um cluster local (cabeça + 1 worker) e autenticação por
   token, a página *Cluster* mostra os nós do cluster.

O navegador é o Chromium do Debian (``/usr/bin/chromium``), guiado pelo Playwright; nada é
baixado durante o teste, e não é preciso ser root para rodá-los. Sem o Chromium, os testes são
PULADOS com o motivo e a instrução de instalação (``sudo apt-get install chromium``) no resumo
do pytest. O ``make test`` instala o Chromium via apt-get quando roda como root.

As capturas de tela vão para ``tests/artifacts/`` (gerado, fora do git). Com
``UPDATE_DOCS_SCREENSHOTS=1``, a do painel também é copiada para ``docs/img/`` (a figura
"o que você deve ver" da lição 04).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from processes import assert_gone, descendants

from labutils import system
from labutils.cluster import auth_token
from labutils.system import kill_pids

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
ARTIFACTS = ROOT / "tests" / "artifacts"
DOCS_IMG = ROOT / "docs" / "img"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LESSON_00 = "00_diagnostico_ambiente.ipynb"
RUN_ALL_TIMEOUT_S = 120


# ---------------------------------------------------------------- utilidades


INSTALL_CHROMIUM = (
    "Instale o Chromium do sistema: `sudo apt-get install chromium` (Debian/Ubuntu; o "
    "`make test` faz isso sozinho quando roda como root). Não precisa de root para rodar os "
    "testes depois de instalado."
)


def require_chromium(path: Path = CHROMIUM) -> None:
    """Sem o Chromium, os testes de navegador são PULADOS com o motivo e a instrução de
    instalação (aparecem no resumo do pytest, ``-rs``)."""
    if not path.exists():
        message = f"Chromium não encontrado em {path}: os testes de navegador precisam dele. "
        pytest.skip(message + INSTALL_CHROMIUM)


@pytest.fixture
def browser() -> Iterator:
    """Chromium do Debian, sem interface; sem ele, pula com o motivo (veja require_chromium)."""
    require_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail('Falta o Playwright para Python: rode `pip install -e ".[test]"` (make setup).')
    before = descendants(os.getpid())
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        started = descendants(os.getpid()) - before
        try:
            yield chromium
        finally:
            chromium.close()
    assert_gone(started, "processos do navegador")


def code_cells(path: Path) -> int:
    return sum(c["cell_type"] == "code" for c in json.loads(path.read_text())["cells"])


def lessons_on_disk() -> list[str]:
    return sorted(p.name for p in NOTEBOOKS.glob("0*.ipynb"))


# ---------------------------------------------------------------- JupyterLab


def _write_lab_settings(settings_dir: Path) -> None:
    """Sem salvamento automático (os notebooks são versionados sem saídas), kernel padrão
    iniciado sem perguntar, todas as células desenhadas (``windowingMode: none``: sem isso, o
    JupyterLab tira da página as células fora da tela, e um notebook com saídas longas perde
    os prompts do alto), e sem notícias."""
    docmanager = settings_dir / "@jupyterlab" / "docmanager-extension"
    docmanager.mkdir(parents=True)
    (docmanager / "plugin.jupyterlab-settings").write_text('{"autosave": false}')
    notebook = settings_dir / "@jupyterlab" / "notebook-extension"
    notebook.mkdir(parents=True)
    (notebook / "tracker.jupyterlab-settings").write_text(
        '{"autoStartDefaultKernel": true, "windowingMode": "none"}'
    )
    apputils = settings_dir / "@jupyterlab" / "apputils-extension"
    apputils.mkdir(parents=True)
    (apputils / "notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )


@contextlib.contextmanager
def jupyter_lab(tmp_path: Path, root_dir: Path = NOTEBOOKS) -> Iterator[tuple[str, Callable]]:
    """JupyterLab sem navegador numa porta livre de 127.0.0.1 com token.

    Devolve a URL (com o token) e uma função que anota os processos filhos do servidor
    (kernels), para conferir no fim que todos terminaram.
    """
    token, port = secrets.token_hex(16), system.free_port()
    settings = tmp_path / "lab-settings"
    _write_lab_settings(settings)
    config = tmp_path / "config"
    config.mkdir()
    # sem rede: nada de notícias, verificação de versão nem gerenciador de extensões do PyPI
    (config / "jupyter_lab_config.json").write_text(
        json.dumps(
            {
                "LabApp": {
                    "news_url": None,
                    "extension_manager": "readonly",
                    "check_for_updates_class": "jupyterlab.NeverCheckForUpdate",
                }
            }
        )
    )
    env = {
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(config),
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    cmd = [
        str(Path(sys.executable).with_name("jupyter")),
        "lab",
        "--no-browser",
        f"--IdentityProvider.token={token}",
        "--ServerApp.ip=127.0.0.1",
        f"--port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root_dir}",
    ]
    if os.geteuid() == 0:  # CI roda como root
        cmd.append("--allow-root")
    log = (tmp_path / "jupyter.log").open("w")
    server = system.spawn_group(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, (
                f"o JupyterLab terminou (código {server.returncode}):\n"
                + (tmp_path / "jupyter.log").read_text()[-2000:]
            )
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2).close()
                break
            assert time.monotonic() < deadline, "o JupyterLab não respondeu em 60 s"
            time.sleep(0.5)
        yield f"{base}/lab?token={token}", lambda: seen.update(descendants(server.pid))
    finally:
        seen |= descendants(server.pid) | {server.pid}
        system.kill_group(server, grace=15)  # SIGTERM: o servidor encerra os kernels
        kill_pids(seen)  # o que sobrou (os kernels ficam em grupos próprios)
        log.close()
        assert_gone(seen, "processos do JupyterLab")


def listed_notebooks(page) -> list[str]:
    items = page.locator(".jp-DirListing-content .jp-DirListing-itemText")
    items.first.wait_for(timeout=30_000)
    return [name for name in items.all_inner_texts() if re.fullmatch(r"0.*\.ipynb", name.strip())]


def run_all_cells(page, timeout_s: float = RUN_ALL_TIMEOUT_S) -> list[str]:
    """Menu Run → Run All Cells, como um aluno; espera a execução acabar.

    Devolve os prompts das células de código (``[1]:``…; ``[ ]:`` = não rodou). Se o clique
    chegar antes de o kernel estar conectado, nada entra na fila: então clica de novo.
    """
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=30_000)
    # a barra de status diz "Python 3 (ipykernel) | Idle" quando o kernel está conectado
    kernel_idle = re.compile(r"^(?!No Kernel).+ \| Idle$")
    page.locator(".jp-StatusBar-TextItem", has_text=kernel_idle).wait_for(timeout=60_000)
    prompts = page.locator(".jp-Notebook .jp-CodeCell .jp-InputArea-prompt")

    def texts() -> list[str]:
        return [t.strip() for t in prompts.all_inner_texts()]

    deadline = time.monotonic() + timeout_s
    for _attempt in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        queued = time.monotonic() + 10
        while time.monotonic() < queued and all(t == "[ ]:" for t in texts()):
            time.sleep(0.3)
        if any(t != "[ ]:" for t in texts()):
            break
    settled = 0
    while settled < 3:  # sem "[*]" por três leituras seguidas
        now = texts()
        busy = any("*" in t for t in now) or all(t == "[ ]:" for t in now)
        settled = 0 if busy else settled + 1
        assert time.monotonic() < deadline, f"as células não terminaram em {timeout_s:g} s: {now}"
        time.sleep(0.5)
    return texts()


def error_outputs(page) -> list[str]:
    """Textos das saídas de erro (exceções com traceback) do notebook aberto.

    O JupyterLab mostra erros e stderr com o mesmo tipo MIME; o traceback os distingue.
    """
    stderr = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [t for t in stderr.all_inner_texts() if "Traceback" in t or "Error" in t]


@pytest.mark.slow
def test_jupyterlab_lists_lessons_in_order_and_runs_lesson_00(browser, tmp_path):
    expected = lessons_on_disk()
    assert LESSON_00 in expected, f"{LESSON_00} não existe em {NOTEBOOKS}"
    original = (NOTEBOOKS / LESSON_00).read_bytes()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with jupyter_lab(tmp_path) as (url, remember_processes):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(url)
        assert listed_notebooks(page) == expected
        page.locator(".jp-DirListing-item", has_text=LESSON_00).dblclick()
        prompts = run_all_cells(page)
        remember_processes()  # o kernel é filho do servidor: vigiar o encerramento dele
        assert error_outputs(page) == []
        assert all(re.fullmatch(r"\[\d+\]:", p) for p in prompts), prompts
        assert len(prompts) == code_cells(NOTEBOOKS / LESSON_00)
        table = page.locator(".jp-OutputArea-output table").first
        report = table.inner_text()
        assert "como resolver" in report and "Python" in report and "TensorFlow" in report
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_licao00.png"))
        page.close()
    # sem salvamento automático: o notebook versionado continua sem saídas
    assert (NOTEBOOKS / LESSON_00).read_bytes() == original


# ---------------------------------------------------------------- painel do Ray


@pytest.mark.slow
def test_ray_dashboard_shows_the_cluster_nodes(browser, local_cluster):
    """O painel do cluster local da sessão (``tests/conftest.py``: nó principal + 2 workers)."""
    cluster = local_cluster
    expected = 1 + cluster.num_workers
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 800})
    page.goto(cluster.dashboard_url)
    # o aluno cola o token (saída de `ray get-auth-token`) na janela do painel
    page.get_by_placeholder("Enter your authentication token").fill(auth_token())
    page.get_by_role("button", name="Submit").click()
    page.get_by_role("dialog").wait_for(state="hidden", timeout=15_000)
    page.goto(f"{cluster.dashboard_url}/#/cluster")
    rows = page.locator("table tbody tr", has_text="ALIVE")
    deadline = time.monotonic() + 45
    while rows.count() < expected:
        assert time.monotonic() < deadline, (
            f"o painel mostrou {rows.count()} nó(s) vivo(s) em 45 s; esperava {expected}"
        )
        time.sleep(0.5)
    texts = rows.all_inner_texts()
    node_ids = {m.group(0) for t in texts for m in re.finditer(r"\b[0-9a-f]{56}\b", t)}
    assert len(texts) == expected and len(node_ids) == expected
    assert sum("(Head)" in t for t in texts) == 1
    # os mesmos nós que a API do painel relata (com o token no cabeçalho)
    request = urllib.request.Request(
        f"{cluster.dashboard_url}/nodes?view=summary",
        headers={"Authorization": f"Bearer {auth_token()}"},
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        summary = json.load(resp)["data"]["summary"]
    assert node_ids == {n["raylet"]["nodeId"] for n in summary if n["raylet"]["state"] == "ALIVE"}
    page.screenshot(path=str(ARTIFACTS / "ray_dashboard.png"))
    page.close()
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS") == "1":
        DOCS_IMG.mkdir(parents=True, exist_ok=True)
        shutil.copy(ARTIFACTS / "ray_dashboard.png", DOCS_IMG / "ray_dashboard.png")
