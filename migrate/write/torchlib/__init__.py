"""The torchlib writer: a plan applied to a torchlib tree (``rewrite``), in stages: the tree
(``tree``), each function's decisions (``decide``), TypeVar names (``naming``), the
transformers run per module (``apply``)."""
