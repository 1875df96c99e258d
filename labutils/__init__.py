"""labutils: pacote de apoio do Laboratório – Treinamento de Modelos Paralelos.

Cada módulo cuida de um assunto:

- ``labutils.scale``: a escala do laboratório (``full`` em aula, ``smoke`` no CI);
- ``labutils.data``: carregamento dos conjuntos de dados (California Housing, CIFAR-100);
- ``labutils.timing``: medição de tempo de parede;
- ``labutils.raytools``: iniciar ou conectar ao Ray com padrões sensatos.

Os módulos são importados sob demanda para que ``import labutils`` seja rápido
(TensorFlow e Ray só são carregados quando um notebook precisa deles).
"""

from labutils.scale import Sizes, current_scale, pick, sizes
from labutils.timing import Timer

__all__ = ["Sizes", "Timer", "current_scale", "pick", "sizes"]
