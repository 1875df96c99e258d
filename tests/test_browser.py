"""Num navegador de verdade (o Chromium do Debian, pelo Playwright): o JupyterLab lista as lições e
roda a lição 00 inteira; o painel do Ray, com token, mostra os nós do cluster local. Sem o Chromium,
PULADOS com a instrução; ``UPDATE_DOCS_SCREENSHOTS=1`` copia a captura do painel para docs/img/."""

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
CHROMIUM_ARGS = (
    "--headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
    "--disable-background-networking --disable-component-update --disable-sync"
).split()
LESSON_00 = "00_diagnostico_ambiente.ipynb"
RUN_ALL_TIMEOUT_S = 120


@pytest.fixture
def browser() -> Iterator:
    """Chromium do Debian, sem interface; sem ele, pula com o motivo e como instalá-lo."""
    if not CHROMIUM.exists():
        pytest.skip(
            f"Chromium não encontrado em {CHROMIUM}: os testes de navegador precisam dele. "
            "Instale o do sistema: `sudo apt-get install chromium` (o `make test` o instala "
            "quando roda como root; depois, não precisa de root)."
        )
    from playwright.sync_api import sync_playwright

    before = descendants(os.getpid())
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        started = descendants(os.getpid()) - before
        try:
            yield chromium
        finally:
            chromium.close()
    assert_gone(started, "processos do navegador")


#: sem salvamento automático (os notebooks vão sem saídas para o git), kernel iniciado sem
#: perguntar, todas as células desenhadas (com o padrão, as fora da tela saem da página) e sem
#: notícias
LAB_SETTINGS = {
    "docmanager-extension/plugin": {"autosave": False},
    "notebook-extension/tracker": {"autoStartDefaultKernel": True, "windowingMode": "none"},
    "apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
}


@contextlib.contextmanager
def jupyter_lab(tmp_path: Path, root_dir: Path = NOTEBOOKS) -> Iterator[tuple[str, Callable]]:
    """JupyterLab sem navegador numa porta livre de 127.0.0.1 com token: a URL (com o token) e
    uma função que anota os processos filhos do servidor (kernels), que têm de terminar no fim."""
    token, port = secrets.token_hex(16), system.free_port()
    settings = tmp_path / "lab-settings"
    for plugin, values in LAB_SETTINGS.items():
        path = settings / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(values))
    config = tmp_path / "config"
    config.mkdir()
    # sem rede: nada de notícias, verificação de versão nem gerenciador de extensões do PyPI
    lab = {"news_url": None, "extension_manager": "readonly"}
    lab["check_for_updates_class"] = "jupyterlab.NeverCheckForUpdate"
    (config / "jupyter_lab_config.json").write_text(json.dumps({"LabApp": lab}))
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
    """Menu Run → Run All Cells, como um aluno (de novo, se o clique chegou antes do kernel);
    espera a execução acabar e devolve os prompts das células de código (``[ ]:``: não rodou)."""
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
    """As saídas de erro do notebook aberto (o mesmo tipo MIME do stderr: o traceback distingue)."""
    stderr = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    return [t for t in stderr.all_inner_texts() if "Traceback" in t or "Error" in t]


@pytest.mark.slow
def test_jupyterlab_lists_lessons_in_order_and_runs_lesson_00(browser, tmp_path):
    expected = sorted(p.name for p in NOTEBOOKS.glob("0*.ipynb"))
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
        cells = json.loads(original)["cells"]
        assert len(prompts) == sum(c["cell_type"] == "code" for c in cells)
        table = page.locator(".jp-OutputArea-output table").first
        report = table.inner_text()
        assert "como resolver" in report and "Python" in report and "TensorFlow" in report
        table.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "jupyterlab_licao00.png"))
        page.close()
    # sem salvamento automático: o notebook versionado continua sem saídas
    assert (NOTEBOOKS / LESSON_00).read_bytes() == original


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
