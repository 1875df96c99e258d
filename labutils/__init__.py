"""labutils: pacote de apoio do Laboratório – Treinamento de Modelos Paralelos.

Cada módulo cuida de um assunto:

- ``config``: o único leitor de variáveis de ambiente: escala (``full`` em aula, ``smoke`` no
  CI) e a tabela de tamanhos, pastas de dados e resultados, padrões do Ray;
- ``system``: subprocessos com prazo, grupos de processos, portas e rede;
- ``data``: carregamento dos conjuntos de dados (California Housing, CIFAR-100);
- ``timing``: medição de tempo de parede;
- ``raytools``: iniciar ou conectar ao Ray com padrões sensatos;
- ``cluster`` (pacote; ``python -m labutils.cluster``): nó principal, workers, cluster local e
  autoscaler com ``ray start`` (lição 04);
- ``search``: busca de hiperparâmetros (a grade, o treino, a fila de tarefas, a floresta em
  blocos, os resultados gravados) (lição 02);
- ``plots``: os gráficos das lições 02 e 05;
- ``tuning``: a mesma busca com Ray Tune e com ``GridSearchCV`` no Ray (lição 03);
- ``tf``: TensorFlow das lições 05 a 07 (dispositivos, pipeline ``tf.data``, a CNN, medidas do
  treino);
- ``inference``: a inferência em lote (lição 06);
- ``multiworker`` (tf-keras, planejar os workers, o checkpoint, o treino à mão) e
  ``multiworker.checks`` (as autoverificações): o exercício multi-worker (lição 07). O gerador
  do notebook do aluno fica fora do pacote, em ``tools/make_student_notebook.py``;
- ``doctor``: diagnóstico do ambiente e minutos de cada lição nesta máquina (lição 00).

Os módulos são importados sob demanda para que ``import labutils`` seja rápido
(TensorFlow e Ray só são carregados quando um notebook precisa deles).
"""

from labutils.config import Sizes, current_scale, pick, set_default_env, sizes
from labutils.timing import Timer

set_default_env()  # antes de qualquer `import ray`: o mesmo modo de autenticação em todos

__all__ = ["Sizes", "Timer", "current_scale", "pick", "sizes"]
