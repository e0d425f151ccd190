"""Placeholder for ``sgl_kernel`` on CPU-only machines (installed by scripts/setup_sglang.sh).

No CPU build of sgl_kernel is published. SGLang imports names from it at module level, but on
its plain-torch CPU path (SGLANG_USE_CPU_ENGINE=1, --attention-backend torch_native,
--sampling-backend pytorch) none of them is called. Every attribute resolves to a stub that
raises if it is ever called, so a code path that really needs a kernel fails loudly.
"""

__version__ = "0.0.0+draftgen.placeholder"
DRAFTGEN_PLACEHOLDER = True


class _Missing:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(
            f"sgl_kernel.{self._name} called, but sgl_kernel is a CPU placeholder (draftgen)"
        )

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Missing(f"{self._name}.{attr}")

    def __repr__(self):
        return f"<sgl_kernel placeholder {self._name}>"


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Missing(name)
