"""The torchlib source, read statically below the evidence (the evidence, the torchlib writer and the
audits share it): ``scan`` reads each module (libcst, never importing it) into ``facts``, ``resolve``
resolves their annotations (the TypeVar resolver, the overload index) into per-overload variables."""
