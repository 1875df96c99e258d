"""Diagnóstico do ambiente (``python -m labutils.doctor --help``): "por que não funciona na minha
máquina?" antes da aula, e os minutos de cada lição aqui. As versões vêm de ``pyproject.toml``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tomllib
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from labutils import colab, config, data, system
from labutils.config import (
    DATA_DIR_ENV,
    REPO_ROOT,
    RESULTS_DIR_ENV,
    SCALE_ENV,
    SYNTHETIC_ENV,
    data_dir,
    results_dir,
)

OK, WARN, FAIL = "✅", "⚠️", "❌"
INSTALL_HINT = 'rode `make setup` (ou `pip install -e ".[test]"`) na raiz do repositório'


@dataclass(frozen=True)
class Row:
    """Uma linha do relatório: situação (✅/⚠️/❌), item, detalhe e, se algo falta, como resolver."""

    status: str
    item: str
    detail: str
    remedy: str = ""


def guard(item: str, check: Callable[[], Row | list[Row]]) -> list[Row]:
    """Roda uma verificação; um erro inesperado vira uma linha ❌, não derruba o relatório."""
    try:
        out = check()
    except Exception as err:  # o diagnóstico deve sempre terminar
        return [Row(FAIL, item, f"a verificação falhou: {type(err).__name__}: {err}", INSTALL_HINT)]
    return out if isinstance(out, list) else [out]


# ---------------------------------------------------------------- versões fixadas


def project_spec() -> tuple[SpecifierSet, list[Requirement]]:
    """``requires-python`` e os pinos (com o extra ``test``)."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = project["dependencies"] + project["optional-dependencies"]["test"]
    return SpecifierSet(project["requires-python"]), [Requirement(x) for x in lines]


def checked_requirements(on_colab: bool | None = None) -> list[Requirement]:
    """Os pinos que o relatório confere: todos; no Colab, só os das lições (os extras de teste
    não rodam lá) e sem o que o Colab dispensa (o JupyterLab)."""
    reqs = project_spec()[1]
    if not (colab.on_colab() if on_colab is None else on_colab):
        return reqs
    lessons = {colab.canonical(Requirement(x).name) for x in colab.project_requirements()}
    return [r for r in reqs if colab.canonical(r.name) in lessons - colab.NOT_NEEDED]


def pinned(name: str) -> Requirement:
    """O requisito fixado de ``name`` (ex.: ``pinned("ray")`` → ``ray[...]==2.60.0``)."""
    for req in project_spec()[1]:
        if req.name.lower() == name.lower():
            return req
    raise ValueError(f"{name!r} não está fixado em pyproject.toml.")


def pip_install(req: Requirement | str, extras: Iterable[str] | None = None) -> str:
    """O ``pip install`` de ``req`` (um nome: o seu pino); ``extras`` troca os extras dele."""
    req = pinned(req) if isinstance(req, str) else req
    chosen = sorted(req.extras if extras is None else extras)
    extra = f"[{','.join(chosen)}]" if chosen else ""
    return f"pip install '{req.name}{extra}{req.specifier}'"


def check_python(
    spec: SpecifierSet | None = None, version: tuple[int, int, int] | None = None
) -> Row:
    spec = spec if spec is not None else project_spec()[0]
    found = ".".join(map(str, version or sys.version_info[:3]))
    if Version(found) in spec:
        return Row(OK, "Python", f"{found} ({sys.executable})")
    wanted = min((s.version for s in spec if s.operator == ">="), default=str(spec))
    return Row(
        FAIL,
        "Python",
        f"{found}, mas o projeto pede {spec}",
        f"Crie o ambiente com Python {wanted}: `make setup PYTHON=python{wanted}` "
        "ou `conda env create -f environment.yml`.",
    )


def missing_extras(req: Requirement) -> list[str]:
    """As distribuições dos extras de ``req`` não instaladas (ex.: ``ray[default]``, o painel)."""
    missing = set()
    for line in metadata.requires(req.name) or []:
        dep = Requirement(line)
        if dep.marker and any(dep.marker.evaluate({"extra": e}) for e in req.extras):
            try:
                metadata.distribution(dep.name)
            except metadata.PackageNotFoundError:
                missing.add(dep.name)
    return sorted(missing)


def check_package(req: Requirement, colab_versions: dict[str, str] | None = None) -> Row:
    """Versão instalada de um pacote contra o pino de ``pyproject.toml``; no Colab
    (``colab_versions``), a versão dele também vale (as lições rodam com ela: docs/colab.md)."""
    try:
        found = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        return Row(FAIL, req.name, "não instalado", f"{INSTALL_HINT}.")
    if colab_versions and colab_versions.get(colab.canonical(req.name)) == found:
        if not req.specifier.contains(found, prereleases=True):
            return Row(
                OK, req.name, f"{found}, a do Colab (fora dele, o curso fixa {req.specifier})"
            )
    if not req.specifier.contains(found, prereleases=True):
        return Row(
            WARN,
            req.name,
            f"instalado {found}, o curso foi testado com {req.specifier}",
            f"Versões diferentes podem mudar APIs e mensagens: {INSTALL_HINT}.",
        )
    if missing := missing_extras(req):
        return Row(
            FAIL,
            req.name,
            f"{found}, mas faltam dependências de [{','.join(sorted(req.extras))}]: "
            + ", ".join(missing),
            f"Instale com os extras do curso: `{pip_install(req)}` (ou {INSTALL_HINT}).",
        )
    return Row(OK, req.name, found)


# ---------------------------------------------------------------- TensorFlow e tf-keras

TF_TIMEOUT_S = 180.0

# Num processo à parte: dividir a CPU só funciona antes de o TF iniciar os dispositivos, e o
# kernel do notebook não fica "gasto". Sem o labutils: se algo falta, o erro é o do TensorFlow.
_TF_PROBE = r"""
import json, os
os.environ["TF_USE_LEGACY_KERAS"] = "1"
out = {}
import tensorflow as tf
out["tf"] = tf.__version__
out["gpus"] = [d.name for d in tf.config.list_physical_devices("GPU")]
try:
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    out["logical_cpus"] = len(tf.config.list_logical_devices("CPU"))
except Exception as err:
    out["split_error"] = f"{type(err).__name__}: {err}"
try:
    import tf_keras
    out["tf_keras"] = tf_keras.__version__
    out["legacy_keras"] = tf.keras.__name__.startswith("tf_keras")
except Exception as err:
    out["tf_keras_error"] = f"{type(err).__name__}: {err}"
print(JSON_MARK + json.dumps(out))
"""


def _run_probe(code: str, *args: str, timeout: float, late: str, failed: str) -> dict:
    """O JSON que ``code`` imprime num Python novo, ou ``{"error": ...}`` (nunca trava)."""
    cmd = [sys.executable, "-c", f"JSON_MARK = {system.JSON_MARK!r}\n{code}", *args]
    env = config.child_env({"TF_CPP_MIN_LOG_LEVEL": "3"})
    return system.run_json(cmd, env=env, timeout=timeout, late=late, failed=failed)


def tf_probe(timeout: float = TF_TIMEOUT_S) -> dict:
    """O que o TensorFlow vê, importado num subprocesso."""
    late = f"o TensorFlow não carregou em {timeout:g} s"
    return _run_probe(_TF_PROBE, timeout=timeout, late=late, failed="import tensorflow falhou")


def check_tensorflow(probe: dict, gpu_on_machine: bool | None = None) -> Row:
    if "error" in probe:
        return Row(FAIL, "TensorFlow", probe["error"], f"{INSTALL_HINT}; depois rode de novo.")
    gpus = probe.get("gpus", [])
    if "split_error" in probe:
        return Row(
            FAIL,
            "TensorFlow",
            f"{probe['tf']}: não consegui dividir a CPU em 2 dispositivos ({probe['split_error']})",
            "A lição 05 precisa disso: reinstale o TensorFlow fixado e rode num processo novo.",
        )
    detail = f"{probe['tf']}; GPUs: {len(gpus)}; CPU dividida em {probe['logical_cpus']} dispositivos lógicos"
    if gpu_on_machine is None:
        gpu_on_machine = shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()
    if not gpus and gpu_on_machine:
        return Row(
            WARN,
            "TensorFlow",
            detail + ", mas a máquina tem GPU NVIDIA",
            "O TensorFlow não vê a GPU: instale o suporte CUDA "
            f"(`{pip_install('tensorflow', extras=['and-cuda'])}`) e confira `nvidia-smi`. "
            "As lições rodam na CPU mesmo assim.",
        )
    if not gpus:
        detail += " (sem GPU: as lições usam CPUs lógicas)"
    return Row(OK, "TensorFlow", detail)


def check_tf_keras(probe: dict) -> Row:
    item = "tf-keras (exercício multi-worker)"
    if "error" in probe:
        return Row(FAIL, item, "não testado: o TensorFlow não carregou", "Veja o TensorFlow.")
    if "tf_keras_error" in probe:
        return Row(
            FAIL, item, probe["tf_keras_error"], f"{INSTALL_HINT} (ou `{pip_install('tf-keras')}`)."
        )
    if not probe.get("legacy_keras"):
        return Row(
            FAIL,
            item,
            f"tf_keras {probe['tf_keras']} instalado, mas TF_USE_LEGACY_KERAS=1 não o ativou",
            f"Use o tf-keras e o TensorFlow nas versões fixadas ({pinned('tf-keras')}, "
            f"{pinned('tensorflow')}): {INSTALL_HINT}.",
        )
    return Row(OK, item, f"{probe['tf_keras']} (ativado com TF_USE_LEGACY_KERAS=1)")


# ---------------------------------------------------------------- Ray (os extras: check_package)

RAY_PORTS = {"nó principal do Ray": 6379, "painel do Ray": 8265}


def check_ray() -> Row:
    try:
        import ray
    except ImportError as err:
        return Row(FAIL, "Ray", f"não importa: {err}", f"{INSTALL_HINT}.")
    return Row(OK, "Ray", f"{ray.__version__}: `import ray` funciona")


def check_auth() -> Row:
    if warning := config.auth_disabled_warning():
        return Row(WARN, "Ray: autenticação", "DESLIGADA (RAY_AUTH_MODE=disabled)", warning)
    mode = config.env("RAY_AUTH_MODE") or config.RAY_AUTH_MODE_DEFAULT
    return Row(OK, "Ray: autenticação", f"por token (RAY_AUTH_MODE={mode})")


def check_cluster(address: str | None = None) -> list[Row]:
    """Com ``RAY_ADDRESS``: as versões do nó principal ao lado das daqui (o que ``join`` e
    ``init_ray`` exigem iguais)."""
    from labutils import raytools

    address = address or config.env("RAY_ADDRESS")
    if not address:
        return []
    here = raytools.local_versions()
    here_text = f"aqui Python {here['python_version']}, Ray {here['ray_version']}"
    try:
        head = raytools.check_cluster(address)
    except ConnectionError as err:
        return [Row(FAIL, "cluster (RAY_ADDRESS)", f"{address}: {here_text}", str(err))]
    if head is None:
        return [Row(WARN, "cluster (RAY_ADDRESS)", f"{address}: não li as versões", "`ray status`")]
    detail = f"nó principal Python {head['python_version']}, Ray {head['ray_version']}; {here_text}"
    return [Row(OK, "cluster (RAY_ADDRESS)", f"{address}: {detail}")]


def check_ports(ports: dict[str, int] | None = None) -> list[Row]:
    rows = []
    for what, port in (ports or RAY_PORTS).items():
        remedy = (
            f"Veja quem usa: `ss -ltnp | grep :{port}`; se for um Ray seu, `ray stop`, senão use "
            "outra porta (`ray start --head --port=6380 --dashboard-port=8266`)."
        )
        item, busy = f"porta {port}: {what}", "ocupada (talvez um Ray que ficou rodando)"
        ok = not system.port_in_use(port)
        rows.append(Row(OK, item, "livre") if ok else Row(WARN, item, busy, remedy))
    return rows


# ---------------------------------------------------------------- a máquina e os dados

HOST_TIMEOUT_S = 2.0


def check_cpus(count: int | None = None) -> list[Row]:
    count = system.usable_cpus() if count is None else count
    rows = []
    if shape := config.machine_shape():
        simulated = [f"{shape['cpus']} CPUs ({config.CPUS_ENV})"] if "cpus" in shape else []
        if "object_store_mb" in shape:
            simulated.append(
                f"armazém de {shape['object_store_mb']} MB ({config.OBJECT_STORE_ENV})"
            )
        rows.append(
            Row(
                WARN,
                "formato simulado",
                f"simulando {' e '.join(simulated)}: o Ray declara isso, não o que a máquina tem",
                "Vale para conferir escalonamento, paradas, tamanhos e recusas; as velocidades "
                "medidas são as desta máquina, não as do formato.",
            )
        )
    if count < 2:
        rows.append(Row(
            WARN,
            "CPUs",
            f"{count} núcleo: as comparações com 2 workers não terão ganho",
            "Use uma máquina com 2 ou mais núcleos (ou junte outro nó ao cluster Ray).",
        ))  # fmt: skip
        return rows
    return [
        *rows,
        Row(OK, "CPUs", system.describe_machine({**system.machine(), "logical_cpus": count})),
    ]


def check_scale() -> Row:
    try:
        scale = config.current_scale()
    except ValueError as err:
        return Row(FAIL, "escala", str(err), f"Use {SCALE_ENV}=full (aula) ou smoke (teste).")
    if scale == "smoke":
        return Row(OK, "escala", "smoke: tamanhos mínimos e dados locais (testar, não medir)")
    return Row(OK, "escala", f"full: tamanhos da aula (mude com {SCALE_ENV}=full|smoke)")


def check_datasets(reachable: dict[str, bool] | None = None) -> list[Row]:
    """Dados em ``data/``; ``reachable``: nome → servidor acessível (``None``: não testado)."""
    try:
        smoke = config.current_scale() == "smoke"
    except ValueError:  # a escala inválida tem a sua própria linha (check_scale)
        smoke = False
    missing = f"ausente em {data_dir()}"
    rows = []
    for name, present in data.datasets_present().items():
        detail = f"{missing}: será baixado na primeira lição que o usar"
        row = Row(WARN, f"dados: {name}", detail, "Baixe antes da aula: `make data`.")
        if present:
            row = Row(OK, row.item, f"presente em {data_dir()}")
        elif smoke:
            row = Row(OK, row.item, "ausente, mas a escala smoke usa dados locais")
        elif config.synthetic_data():
            detail = f"ausente; {SYNTHETIC_ENV}=1: o ensaio usa dados SINTÉTICOS do tamanho real"
            row = Row(WARN, row.item, detail, "para a aula, baixe os reais: `make data`")
        elif reachable is not None and not reachable.get(name, False):
            remedy = (
                "Numa máquina com internet rode `make data` e copie a pasta data/ para cá "
                f"(ou aponte {DATA_DIR_ENV} para ela); para só testar: {SCALE_ENV}=smoke."
            )
            row = Row(FAIL, row.item, f"{missing} e o servidor está inacessível", remedy)
        rows.append(row)
    return rows


def check_hosts(
    hosts: dict[str, tuple[str, int]] | None = None, timeout: float = HOST_TIMEOUT_S
) -> tuple[list[Row], dict[str, bool]]:
    """Testa em paralelo se cada servidor abre conexão em até ``timeout`` segundos."""
    hosts = hosts or {name: (host, 443) for name, host in data.HOSTS.items()}
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        futures = {k: pool.submit(system.reachable, *hp, timeout) for k, hp in hosts.items()}
        reachable = {k: f.result() is None for k, f in futures.items()}
    offline = (
        "Sem internet só funcionam os dados já em data/ e a escala smoke; "
        "confira proxy/firewall ou rode `make data` onde houver rede."
    )
    rows = [
        Row(OK, f"rede: {host}", f"acessível ({name})")
        if reachable[name]
        else Row(WARN, f"rede: {host}", f"sem resposta em {timeout:g} s ({name})", offline)
        for name, (host, _) in hosts.items()
    ]
    return rows, reachable


# ---------------------------------------------------------------- o Colab

SHM = Path("/dev/shm")


def colab_runtime(gpu: bool | None = None, tpu: bool | None = None) -> str:
    """O tipo de runtime do Colab: ``"CPU"``, ``"GPU"`` ou ``"TPU"``."""
    if gpu is None:
        gpu = shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()
    if tpu is None:
        tpu = Path("/dev/accel0").exists() or config.env("COLAB_TPU_ADDR") is not None
    return "GPU" if gpu else "TPU" if tpu else "CPU"


def check_colab(
    runtime: str | None = None, here: dict | None = None, shm_bytes: int | None = None
) -> list[Row]:
    """O que muda no Colab: o runtime, as vCPUs, o /dev/shm, os pacotes do Colab, o que não
    funciona lá (a sala) e como guardar data/ e results/ entre runtimes."""
    runtime = runtime or colab_runtime()
    here = here or system.machine()
    if shm_bytes is None:
        shm_bytes = shutil.disk_usage(SHM).total if SHM.exists() else 0
    rows = [
        Row(OK, "Colab: runtime", "CPU (o recomendado)")
        if runtime == "CPU"
        else Row(
            WARN,
            "Colab: runtime",
            f"{runtime}: o caminho de GPU das lições ainda não foi rodado numa GPU",
            "Prefira o de CPU: Ambiente de execução → Alterar o tipo de ambiente de execução "
            "→ CPU (as lições foram medidas na CPU).",
        )
    ]
    cores, cpus = here.get("physical_cores") or 0, here["logical_cpus"]
    detail = f"{cpus} vCPUs, {cores or '?'} núcleo(s) físico(s)"
    if cores and cores < cpus:
        rows.append(Row(
            WARN,
            "Colab: CPUs",
            detail + f": as {cpus} vCPUs dividem {cores} núcleo(s) (SMT)",
            "Dois processos lado a lado ganham menos que 2x: é o núcleo dividido, não o Ray.",
        ))  # fmt: skip
    else:
        rows.append(Row(OK, "Colab: CPUs", detail))
    shm_gb = shm_bytes / 2**30
    if shm_bytes < 2**30:  # o init_ray pede 1 GiB de armazém de objetos
        rows.append(Row(
            WARN,
            "Colab: /dev/shm",
            f"{shm_gb:.1f} GB, menor que o armazém de objetos do Ray (1 GB)",
            "O Ray usa /tmp no lugar (avisa e fica mais lento); as lições rodam mesmo assim.",
        ))  # fmt: skip
    else:
        rows.append(Row(OK, "Colab: /dev/shm", f"{shm_gb:.1f} GB"))
    changed = colab.changed_packages()
    rows.append(
        Row(OK, "Colab: pacotes do Colab", "nenhum trocado (só os que faltavam instalados)")
        if not changed
        else Row(
            WARN,
            "Colab: pacotes do Colab",
            "trocados: " + ", ".join(changed),
            "Trocar pacotes do Colab pode derrubar o runtime: Ambiente de execução → "
            "Desconectar e excluir o ambiente de execução, e rode a 1ª célula de novo.",
        )
    )
    rows.append(
        Row(
            WARN,
            "Colab: cluster da sala",
            "impossível: uma máquina do Colab não aceita conexões de fora (lição 04)",
            "No Colab, a lição 04 roda o LocalCluster (nó principal e nós de trabalho nesta "
            "máquina); a sala, faça com as máquinas do laboratório (README).",
        )
    )
    rows.append(
        Row(
            WARN,
            "Colab: data/ e results/",
            f"em {data_dir()} e {results_dir()}: somem com o runtime, e cada notebook tem o "
            "seu (a lição 06 lê o modelo da 05)",
            "Guarde-os no Drive: `from google.colab import drive; drive.mount('/content/drive')` "
            f"e, antes do `import labutils`, `os.environ['{DATA_DIR_ENV}'] = "
            f"'/content/drive/MyDrive/lab/data'` e `os.environ['{RESULTS_DIR_ENV}'] = "
            "'/content/drive/MyDrive/lab/results'`.",
        )
    )
    return rows


# ---------------------------------------------------------------- o relatório


class EnvironmentNotReady(RuntimeError):
    """Algum item do diagnóstico impede as lições (❌)."""


def require_ready(rows: list[Row]) -> None:
    """Levanta :class:`EnvironmentNotReady` com o que fazer, se alguma linha for ❌."""
    if fails := [r for r in rows if r.status == FAIL]:
        steps = "\n".join(f"  - {r.item}: {r.detail}\n    → {r.remedy}" for r in fails)
        raise EnvironmentNotReady(f"O ambiente ainda não está pronto para as lições:\n{steps}")


def summary(rows: list[Row]) -> str:
    fails = [r.item for r in rows if r.status == FAIL]
    warns = [r.item for r in rows if r.status == WARN]
    if fails:
        return f"{FAIL} {len(fails)} problema(s) impedem as lições: {'; '.join(fails)}"
    if warns:
        return f"{WARN} Pronto para as lições, com {len(warns)} aviso(s): {'; '.join(warns)}"
    return f"{OK} Tudo pronto para as lições."


def format_report(rows: list[Row]) -> str:
    width = max(len(r.item) for r in rows)
    lines = []
    for r in rows:
        lines.append(f"{r.status} {r.item:<{width}}  {r.detail}")
        lines += [f"{'':{width + 3}}→ {r.remedy}"] if r.remedy else []
    return "\n".join(lines + ["", summary(rows)])


def as_table(rows: Iterable[Row]):
    """A tabela do notebook 00 (pandas): sem índice, texto inteiro e alinhado à esquerda."""
    import pandas as pd

    frame = pd.DataFrame(
        [(r.status, r.item, r.detail, r.remedy) for r in rows],
        columns=["", "item", "detalhe", "como resolver"],
    )
    return frame.style.hide(axis="index").set_properties(
        **{"text-align": "left", "white-space": "pre-wrap"}
    )


# ---------------------------------------------------------------- o tempo das lições
# O ensaio (``make rehearsal``) gravou os minutos de cada lição na escala ``full`` e a **sonda**
# (imagens/s da rede da lição 05) numa máquina de referência; a sonda aqui dá a razão entre as
# máquinas (a das CPUs, para lições sem GPU se a sonda usou uma). Uma estimativa grosseira.

REHEARSAL_JSON = REPO_ROOT / "docs" / "ensaio" / "ensaio.json"
SPEED_PROBE_TIMEOUT_S = 180.0

# Num processo novo: o TF usa as threads padrão (todos os núcleos) e a GPU, se houver.
_SPEED_PROBE = r"""
import json, sys, time
import numpy as np
import tensorflow as tf
from labutils.lesson05 import create_model
seconds = float(sys.argv[1])
gpus = tf.config.list_physical_devices("GPU")
model = create_model(100)
rng = np.random.default_rng(0)
x = rng.random((64, 32, 32, 3), dtype=np.float32)
y = rng.integers(0, 100, size=(64,))
for _ in range(3):
    model.train_on_batch(x, y)  # compila o passo de treino
steps, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    model.train_on_batch(x, y)
    steps += 1
elapsed = time.perf_counter() - start
out = {"images_per_s": steps * 64 / elapsed, "device": gpus[0].name if gpus else "nenhuma"}
print(JSON_MARK + json.dumps(out))
"""


def speed_probe(seconds: float = 4.0, timeout: float = SPEED_PROBE_TIMEOUT_S) -> dict:
    """A sonda: ``{"images_per_s": ..., "device": ...}``, ou ``{"error": ...}``."""
    late = f"a sonda não terminou em {timeout:g} s"
    return _run_probe(
        _SPEED_PROBE, str(seconds), timeout=timeout, late=late, failed="a sonda falhou"
    )


def estimate_minutes(reference: dict, probe: dict, cpus: int) -> dict[str, tuple[float, float]]:
    """``{notebook: (minutos do caminho principal, das opcionais)}`` aqui (``probe``, ``cpus``)."""
    tf_ratio = reference["probe"]["images_per_s"] / probe["images_per_s"]
    cpu_ratio = tf_ratio
    if probe.get("device", "nenhuma") != "nenhuma":  # a sonda mediu a GPU, não as CPUs
        cpu_ratio = reference["machine"]["logical_cpus"] / max(1, cpus)
    out = {}
    for row in reference["lessons"]:
        if row.get("error"):
            continue
        ratio = tf_ratio if row.get("gpu", True) else cpu_ratio
        out[row["notebook"]] = (row["core_s"] / 60 * ratio, row["optional_s"] / 60 * ratio)
    return out


def check_lesson_times(
    probe: dict | None = None, reference: dict | None = None, cpus: int | None = None
) -> list[Row]:
    """Uma linha por lição: os minutos esperados aqui, e o que fazer se não cabe no período."""
    if reference is None:
        try:
            reference = json.loads(REHEARSAL_JSON.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            reference = {}
    if not reference or "images_per_s" not in reference.get("probe", {}):
        return [Row(WARN, "tempo das lições", "sem o ensaio de referência (docs/ensaio/)",
                    "rode `make rehearsal` numa máquina da sala para ter os tempos")]  # fmt: skip
    probe = speed_probe() if probe is None else probe
    if "images_per_s" not in probe:
        return [Row(WARN, "tempo das lições", f"sonda de velocidade: {probe.get('error')}")]
    period = float(reference.get("class_period_min", 15.0))
    ratio = reference["probe"]["images_per_s"] / probe["images_per_s"]
    where = (
        f"sonda: {probe['images_per_s']:,.0f} imagens/s aqui (GPU: {probe['device']}) contra "
        f"{reference['probe']['images_per_s']:,.0f} na referência ({reference['date']}): "
        f"{1 / ratio:.2f}x"
    )
    rows = [Row(OK, "tempo das lições", where)]
    cpus = system.usable_cpus() if cpus is None else cpus
    gpu = {row["notebook"]: row.get("gpu", True) for row in reference["lessons"]}
    for name, (core, optional) in estimate_minutes(reference, probe, cpus).items():
        detail = f"~{core:.0f} min no caminho principal (+{optional:.0f} min nas opcionais)"
        if core <= period:
            rows.append(Row(OK, name, detail))
        else:
            faster = "com GPU" if gpu[name] else "com mais núcleos (esta lição não usa GPU)"
            remedy = f"rode-a antes da aula (`make notebooks`) ou numa máquina {faster}"
            rows.append(Row(WARN, name, f"{detail}: passa dos {period:g} min de uma aula", remedy))
    return rows


# ---------------------------------------------------------------- run_checks e a linha de comando


def run_checks(*, offline: bool = False) -> list[Row]:
    """Todas as verificações, na ordem do relatório."""
    on_colab = colab.on_colab()
    versions = colab.colab_versions() if on_colab else None
    rows = guard("Python", check_python)
    rows += guard("pacotes", lambda: [check_package(r, versions) for r in checked_requirements()])
    rows += guard("Colab", check_colab) if on_colab else []
    rows += guard("CPUs", check_cpus)
    probe = tf_probe()
    rows += guard("TensorFlow", lambda: check_tensorflow(probe))
    rows += guard("tf-keras", lambda: check_tf_keras(probe))
    rows += guard("Ray", check_ray)
    rows += guard("Ray: autenticação", check_auth)
    rows += guard("cluster (RAY_ADDRESS)", check_cluster)
    rows += guard("portas", check_ports)
    rows += guard("escala", check_scale)
    reachable: dict[str, bool] | None = None

    def hosts() -> list[Row]:
        nonlocal reachable
        host_rows, reachable = check_hosts()
        return host_rows

    host_rows = [] if offline else guard("rede", hosts)
    return rows + guard("dados", lambda: check_datasets(reachable)) + host_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m labutils.doctor", description="Diagnóstico do ambiente do laboratório."
    )
    parser.add_argument("--strict", action="store_true", help="avisos (⚠️) também dão código 1")
    parser.add_argument("--offline", action="store_true", help="não testa os servidores de dados")
    parser.add_argument(
        "--no-times", action="store_true", help="não estima os minutos de cada lição aqui"
    )
    args = parser.parse_args(argv)
    rows = run_checks(offline=args.offline)
    # os tempos informam; não decidem se a máquina está pronta (nem com --strict)
    times = [] if args.no_times else guard("tempo das lições", check_lesson_times)
    print(format_report(rows + times))
    bad = {FAIL, WARN} if args.strict else {FAIL}
    return int(any(r.status in bad for r in rows))


if __name__ == "__main__":
    raise SystemExit(main())
