# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CUDA, driver, GPU architecture, PyTorch, TensorFlow and Horovod compatibility filters, each documented in its own
<name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors


def _filter(function):
    """Expose a pure function of _cuda_compat as a filter whose errors are AnsibleFilterError."""
    return filter_errors(function.__name__, _cuda_compat.CompatError)(function)


cuda_min_driver = _filter(_cuda_compat.cuda_min_driver)
cuda_max_for_driver = _filter(_cuda_compat.cuda_max_for_driver)
torch_cuda_channel = _filter(_cuda_compat.torch_cuda_channel)
tensorflow_build = _filter(_cuda_compat.tensorflow_build)
horovod_limit = _filter(_cuda_compat.horovod_limit)
cuda_too_new = _filter(_cuda_compat.cuda_too_new)
tensorflow_for_cuda = _filter(_cuda_compat.tensorflow_for_cuda)
gpu_architecture = _filter(_cuda_compat.gpu_architecture)
gpu_support_problems = _filter(_cuda_compat.gpu_support_problems)


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
