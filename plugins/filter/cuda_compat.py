# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CUDA, driver, GPU architecture, PyTorch, TensorFlow and Horovod compatibility filters, each documented in its own
<name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import LazyModule, filter_errors

# Imported at the first call of one of these filters, not with the file (see LazyModule).
_cuda_compat = LazyModule("_cuda_compat")


def _filter(name):
    """Expose the pure function ``name`` of _cuda_compat as a filter whose errors are AnsibleFilterError."""

    @filter_errors(name, _cuda_compat, "CompatError")
    def call(*args, **kwargs):
        return getattr(_cuda_compat, name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    return call


cuda_min_driver = _filter("cuda_min_driver")
cuda_max_for_driver = _filter("cuda_max_for_driver")
torch_cuda_channel = _filter("torch_cuda_channel")
tensorflow_build = _filter("tensorflow_build")
horovod_limit = _filter("horovod_limit")
cuda_too_new = _filter("cuda_too_new")
tensorflow_for_cuda = _filter("tensorflow_for_cuda")
gpu_architecture = _filter("gpu_architecture")
gpu_support_problems = _filter("gpu_support_problems")


class FilterModule:
    def filters(self):
        return {
            "cuda_min_driver": cuda_min_driver,
            "cuda_max_for_driver": cuda_max_for_driver,
            "torch_cuda_channel": torch_cuda_channel,
            "tensorflow_build": tensorflow_build,
            "horovod_limit": horovod_limit,
            "cuda_too_new": cuda_too_new,
            "tensorflow_for_cuda": tensorflow_for_cuda,
            "gpu_architecture": gpu_architecture,
            "gpu_support_problems": gpu_support_problems,
        }
