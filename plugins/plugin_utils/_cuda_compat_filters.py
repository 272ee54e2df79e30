# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""CUDA, driver, GPU architecture, PyTorch, TensorFlow and Horovod compatibility filters, each documented in its own
<name>.yml."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import CompatError
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors

# Each filter imports _cuda_compat inside the function, not with the file: Ansible's Jinja plugin loader imports every
# filter file of the collection in every worker process at the first lookup of any filter, and a task that asks none
# of these filters should not pay for the compatibility tables (docs/performance.md). Each filter is the pure
# function of the same name in _cuda_compat, with its arguments as they are.


def _filter(name):
    """Make a function a filter whose errors are AnsibleFilterError naming the filter."""
    return filter_errors(name, CompatError)


@_filter("cuda_min_driver")
def cuda_min_driver(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.cuda_min_driver(*args, **kwargs)


@_filter("cuda_max_for_driver")
def cuda_max_for_driver(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.cuda_max_for_driver(*args, **kwargs)


@_filter("torch_cuda_channel")
def torch_cuda_channel(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.torch_cuda_channel(*args, **kwargs)


@_filter("tensorflow_build")
def tensorflow_build(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.tensorflow_build(*args, **kwargs)


@_filter("horovod_limit")
def horovod_limit(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.horovod_limit(*args, **kwargs)


@_filter("cuda_too_new")
def cuda_too_new(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.cuda_too_new(*args, **kwargs)


@_filter("tensorflow_for_cuda")
def tensorflow_for_cuda(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.tensorflow_for_cuda(*args, **kwargs)


@_filter("gpu_support_problems")
def gpu_support_problems(*args, **kwargs):
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _cuda_compat

    return _cuda_compat.gpu_support_problems(*args, **kwargs)


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
            "gpu_support_problems": gpu_support_problems,
        }
