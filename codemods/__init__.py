"""libcst codemods that rewrite onnxscript's torchlib to the dtype constraints of native_functions.yaml.

One transformer per concern, in the style of libcst's ``codemod`` package; each is
told exactly what to change (``migrate.write.torchlib`` decides) and changes no
other byte:

- ``annotations.AnnotationRewriter``: tensor parameter and return annotations;
- ``layout.SignatureLayout``: rewritten headers split as torchlib's formatter splits them;
- ``docstrings.DocstringRewriter``: the schema line of docstrings;
- ``parameters.ParameterRenamer``: parameters renamed with their uses in the body (scope metadata);
- ``typevars.TypeVarBlock``: the marked block of TypeVar definitions in ``tensor_typing.py``;
- ``imports.update_imports``: ``AddImportsVisitor``/``RemoveImportsVisitor`` on a module's head.

``toplevel`` holds the walk they share (never into a function body; ``ParameterRenamer``
resolves the scopes of the few functions it renames). Like libcst's
codemods they are plain transformers: this package imports nothing of ``migrate``.
"""
