"""The torchlib writer: a plan applied to a torchlib tree (``rewrite``), in stages: the tree
(``tree``) and each parsed module's index (``module_index``), each function's decisions
(``decide``), TypeVar names (``naming``), the transformers of ``codemods`` run per module
(``apply``)."""
