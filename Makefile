# Laboratório – Treinamento de Modelos Paralelos
#   make lab    prepara o ambiente (.venv) e abre o JupyterLab em notebooks/
#   make test   prepara o ambiente e roda todos os testes (incluindo os notebooks, escala smoke)
# O Python mais novo entre os suportados (3.13, 3.12, 3.11) que roda neste PATH; ou PYTHON=...
SUPPORTED_PYTHONS := 3.13 3.12 3.11
ifeq ($(origin PYTHON),undefined)
PYTHON := $(firstword $(foreach v,$(SUPPORTED_PYTHONS),$(shell python$(v) -c "" >/dev/null 2>&1 && echo python$(v))))
endif
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUTDIR ?= build/notebooks
SCALE  ?= full

.PHONY: setup lab test test-fast lint lesson-code browser firewall classroom-check matrix notebooks data data-status bench grade rehearsal colab-links colab-check clean help

help:
	@echo "make lab | make test | make test-fast | make notebooks [SCALE=smoke] | make data | make bench [SCALE=smoke] | make grade DIR=pasta [GRADE_SCALE=full] | make rehearsal | make classroom-check | make matrix | make colab-links REPO=dono/nome [BRANCH=main] | make colab-check | make lint | make clean"

# O ambiente é refeito quando pyproject.toml muda (versões fixadas lá). Quem instala é o uv (do
# PyPI, versão fixada abaixo): baixa e instala em paralelo, com as mesmas versões que o pip, em
# bem menos tempo (docs/tempos_do_make_test.md). Sem cache, para não deixar GBs na sua pasta.
# O uv não lê a configuração do pip: com um índice próprio configurado (um espelho da escola:
# index-url no pip.conf ou PIP_INDEX_URL), ou se o uv falhar, instala o pip, como antes.
# O pip e o uv instalam sem compilar; o compileall compila usando todos os núcleos. Um arquivo que
# não compile não impede nada: o Python o compila ao importar. As pastas test/ e tests/ dos
# pacotes (1/7 dos arquivos; ninguém aqui as importa) ficam de fora.
UV_PIN := uv==0.13.10
$(STAMP): pyproject.toml
	@test -n "$(PYTHON)" && command -v $(PYTHON) >/dev/null || { \
	  echo "Não achei Python 3.11, 3.12 ou 3.13 no PATH (python3.13, python3.12 ou python3.11)."; \
	  echo "  Ubuntu/Debian: sudo apt install python3.12 python3.12-venv"; \
	  echo "  macOS: brew install python@3.13    (ou o instalador de python.org)"; \
	  echo "  Já tem um? make lab PYTHON=/caminho/do/python3"; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' || { \
	  echo "$(PYTHON) é o Python $$($(PYTHON) -V 2>&1); o laboratório precisa do 3.11, 3.12 ou 3.13."; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "O $(PYTHON) não criou o ambiente virtual. No Ubuntu/Debian: sudo apt install python3-venv"; exit 1; }
	{ ! $(PY) -m pip config list 2>/dev/null | grep -q '\.index-url=' && \
	  $(PY) -m pip install --quiet $(UV_PIN) && \
	  $(VENV)/bin/uv pip install --quiet --no-cache --python $(PY) -e ".[test]"; } || { \
	  $(PY) -m pip install --quiet --upgrade pip && \
	  $(PY) -m pip install --quiet --no-compile -e ".[test]"; }
	$(PY) -m compileall -q -j 0 -x "/tests?/" $(VENV)/lib || echo "Aviso: o compileall não compilou algum arquivo (o Python o compila ao importar)."
	touch $(STAMP)

setup: $(STAMP)

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

lint: setup
	$(VENV)/bin/ruff check labutils tests notebooks tools
	$(VENV)/bin/ruff format --check labutils tests notebooks tools
	$(PY) tools/lint_terms.py

# O que as lições seguintes importam das células # @save das lições 02 e 05 (como no d2l):
# labutils/lesson02.py e lesson05.py, gerados; rode depois de mudar uma célula # @save.
lesson-code: setup
	$(PY) tools/lesson_code.py

# Os testes de navegador (tests/test_browser.py) usam o Chromium do Debian, nunca um baixado
# (a fonte de emoji é só para as capturas de tela mostrarem ✅/❌).
browser:
	@test -x /usr/bin/chromium || tools/apt_install.sh "os testes de navegador serão PULADOS" chromium fonts-noto-color-emoji

# O teste da sala em máquinas separadas (tests/test_classroom_machines.py) monta um firewall em cada
# máquina (network namespace) com o iptables do Debian.
firewall:
	@command -v iptables >/dev/null || tools/apt_install.sh "o teste da sala em máquinas separadas será PULADO (ele também precisa de root)" iptables

# A sala com Pythons diferentes (tests/test_classroom_skew.py; precisa de root): o nó principal
# com o Python do .venv, um aluno com outro patch do mesmo X.Y (entra e roda tarefas) e um com
# outro X.Y (recusado em segundos). Os venvs dos alunos ficam em build/skew (feitos uma vez).
# Candidatos: o 3.11 do Debian, python3.11–3.13 do PATH e os do pyenv (o teste usa o 1º que serve
# a cada caso); ex.: make classroom-check SKEW_PYTHONS=/a/python3:/b/python3
SKEW_PYTHONS ?= $(subst $(eval) ,:,$(strip /usr/bin/python3.11 $(foreach v,$(SUPPORTED_PYTHONS),python$(v)) $(wildcard $(HOME)/.pyenv/versions/3.1[123]*/bin/python3)))
classroom-check: setup firewall
	LABUTILS_SKEW_PYTHONS="$(SKEW_PYTHONS)" $(PY) -m pytest tests/test_classroom_skew.py -s -p no:xdist

# As lições nos formatos de máquina dos alunos, simulados aqui (CPUs 1/4/8/16 em smoke; o armazém
# do macOS e um laptop de 8 GB em full, nas lições 01, 05 e 06): grava docs/matriz.md. Longo
# (~1 h em 2 núcleos); o cgroup de memória precisa de root. Ex.: make matrix MATRIX_ARGS="--only '1 CPU'"
MATRIX_ARGS ?=
matrix: setup
	$(PY) tools/matrix.py $(MATRIX_ARGS)

# Três processos do pytest lado a lado (pytest-xdist), um arquivo ou notebook inteiro por vez em
# cada um (--dist loadfile: as células de um notebook ficam num kernel só, em ordem). Boa parte da
# suíte espera (o Ray subir, subprocessos, os prazos de rede da sala): com 2 núcleos, 3 processos
# terminaram 13% antes que 2, no mesmo commit (docs/tempos_do_make_test.md).
# --no-loadscope-reorder: os arquivos saem na ordem do conftest.py (os mais longos primeiro); sem
# ele, o pytest-xdist os reordena pelo número de testes e os mais longos, com poucos testes,
# ficavam para o fim, com o outro processo parado.
TEST_WORKERS ?= 3
# O ambiente (o uv: rede e disco) e os pacotes do Debian (o apt) ao mesmo tempo: num clone novo,
# o apt roda enquanto o uv instala (os dois apt, o do navegador e o do firewall, se revezam).
test:
	@$(MAKE) --no-print-directory -j3 lint browser firewall
	LABUTILS_SCALE=smoke LABUTILS_CHECK_RAY_LEFTOVERS=1 $(PY) -m pytest \
		-n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=20

# O laço rápido de quem contribui: lint e testes de unidade, sem notebooks nem os testes marcados
# slow (clusters reais, o benchmark, treinos multi-worker). Tempos: docs/tempos_do_make_test.md.
test-fast: setup lint
	LABUTILS_SCALE=smoke $(PY) -m pytest tests -m "not slow" -q -n $(TEST_WORKERS) --dist loadfile \
		--durations=10

# Executa as lições e a solução da 07 (a cópia do aluno para no TODO 1, de propósito), cada uma
# num kernel novo; uma linha por notebook com o tempo, cópias executadas em $(OUTDIR).
# É o que o instrutor roda antes da aula. Ex.: make notebooks SCALE=smoke
notebooks: setup
	$(PY) tools/run_notebooks.py --scale $(SCALE) --out $(OUTDIR)

data: setup
	$(PY) -m labutils.data download

data-status: setup
	$(PY) -m labutils.data status

# Benchmark de todas as abordagens paralelas: mede e relata, nunca falha por a máquina ser lenta.
# Grava results/bench/relatorio.md, resultados.csv e resultados.png e imprime a tabela.
# Ex.: make bench SCALE=smoke | make bench BENCH_ARGS="--repeats 5 --only search --synthetic-data"
BENCH_ARGS ?= --repeats 3
bench: setup
	$(PY) -m tools.bench --scale $(SCALE) $(BENCH_ARGS) --out results/bench

# Corrige as entregas da lição 07: cada notebook de DIR roda num kernel e num Ray novos, com
# limite de tempo (GRADE_TIMEOUT s), e as notas vão para DIR/grades.csv e DIR/grades.md.
# Escala smoke por padrão (confere o código em minutos); GRADE_SCALE=full treina no CIFAR-100 real.
# Ex.: make grade DIR=entregas/ | make grade DIR=entregas/ GRADE_SCALE=full GRADE_TIMEOUT=3600
GRADE_SCALE ?= smoke
GRADE_TIMEOUT ?= 900
grade: setup
	@test -n "$(DIR)" || { echo "Diga a pasta das entregas: make grade DIR=pasta"; exit 2; }
	$(PY) tools/grade.py "$(DIR)" --scale $(GRADE_SCALE) --timeout $(GRADE_TIMEOUT)

# O ensaio: cada lição na escala full com dados SINTÉTICOS do tamanho real, cronometrada célula a
# célula; grava docs/ensaio/ensaio.md e ensaio.json (que o doctor usa para estimar os tempos).
# Ex.: make rehearsal | make rehearsal REHEARSAL_ARGS="--only 05 06 --out /tmp/ensaio"
REHEARSAL_ARGS ?=
rehearsal: setup
	$(PY) tools/run_notebooks.py --rehearsal $(REHEARSAL_ARGS)

# O Google Colab. colab-links escreve, em todas as lições, o selo "Abrir no Colab" e a 1ª célula
# (que clona REPO no Colab e instala só o que falta nele), trocando os que já estiverem lá.
# Ex.: make colab-links REPO=prof/lab-paralelo BRANCH=main
BRANCH ?= main
colab-links: setup
	@test -n "$(REPO)" || { echo "Diga o repositório publicado: make colab-links REPO=dono/nome [BRANCH=main]"; exit 2; }
	$(PY) tools/colab_links.py --repo "$(REPO)" --branch "$(BRANCH)"

# As lições (00–06 e a solução da 07, smoke) com as versões do Colab, sem o Colab: um ambiente em
# build/colab/venv feito uma vez das restrições tools/colab_constraints.txt (o Python 3.13 do
# Colab), a 1ª célula agindo como no Colab (com um google.colab de mentira) e o resultado em
# docs/colab.md. Fora do make test. Ex.: make colab-check COLAB_ARGS="--only 00 05"
COLAB_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.13*/bin/python3.13) python3.13)
COLAB_VENV   := build/colab/venv
COLAB_STAMP  := $(COLAB_VENV)/.installed
COLAB_ARGS   ?=
# só o que o Colab traz e as lições usam, nas versões dele (o Ray e o Optuna, a 1ª célula instala)
COLAB_BASE   := tensorflow tf-keras tensorflow-datasets scikit-learn joblib absl-py numpy pandas \
	pyarrow matplotlib seaborn tqdm psutil packaging ipython ipywidgets ipykernel nbclient nbformat
$(COLAB_STAMP): tools/colab_constraints.txt
	rm -rf $(COLAB_VENV)
	$(COLAB_PYTHON) -m venv $(COLAB_VENV)
	$(COLAB_VENV)/bin/python -m pip install --quiet -c tools/colab_constraints.txt pip
	$(COLAB_VENV)/bin/python -m pip install --quiet -c tools/colab_constraints.txt $(COLAB_BASE)
	touch $(COLAB_STAMP)

colab-check: $(COLAB_STAMP)
	$(COLAB_VENV)/bin/python tools/colab_check.py $(COLAB_ARGS)

clean:
	rm -rf build .pytest_cache .ruff_cache
