"""labutils: pacote de apoio do Laboratório – Treinamento de Modelos Paralelos.

Cada módulo cuida de um assunto:

- ``scale``: a escala do laboratório (``full`` em aula, ``smoke`` no CI);
- ``data``: carregamento dos conjuntos de dados (California Housing, CIFAR-100);
- ``timing``: medição de tempo de parede;
- ``raytools``: iniciar ou conectar ao Ray com padrões sensatos;
- ``cluster`` (e ``cluster_cli``): cabeça, workers e cluster local com ``ray start`` (lição 04);
- ``search`` e ``plots``: busca de hiperparâmetros, limite do speedup e gráficos (lição 02);
- ``tfdevices``, ``tfdata``, ``tfmodel``, ``tftiming`` e ``plots_tf``: TensorFlow (lição 05);
- ``multiworker``, ``checks`` e ``exercise``: o exercício multi-worker (lição 07);
- ``doctor``: diagnóstico do ambiente (lição 00);
- ``bench``: o benchmark de todas as abordagens (``make bench``).

Os módulos são importados sob demanda para que ``import labutils`` seja rápido
(TensorFlow e Ray só são carregados quando um notebook precisa deles).
"""

from labutils.scale import Sizes, current_scale, pick, sizes
from labutils.timing import Timer

__all__ = ["Sizes", "Timer", "current_scale", "pick", "sizes"]
