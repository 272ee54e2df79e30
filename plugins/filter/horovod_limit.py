# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter accelops.gpu.horovod_limit; its code is in plugin_utils/_cuda_compat_filters.py.

One file per filter, named after it, with its documentation inside: Galaxy lists a collection's filters by
file name (every .py, and every documentation file that ansible-doc reads), so that a file of several
filters, or a filter with a separate documentation file, gives blank or duplicate entries."""

from __future__ import annotations

DOCUMENTATION = r"""
name: horovod_limit
short_description: The first PyTorch or TensorFlow release a Horovod release does not build against
version_added: 0.1.0
description:
  - Gives the first release of a framework that a Horovod release cannot be built against with pip, and why, from
    Horovod's issue tracker and builds made on Debian 12 (see docs/compatibility.md).
  - A row of the table holds for its Horovod C(major.minor) and every older release (an older release may not
    build against an older framework either; the table does not say). Horovod 0.28.1, its newest release, builds
    against torch older than 2.1 and TensorFlow older than 2.16.
  - Gives an empty dict for a Horovod release newer than the table, whose limit is not known.
  - Fails for a framework other than C(torch) or C(tensorflow), or a Horovod version that is not one.
options:
  _input:
    description: The Horovod version, such as C(0.28.1).
    type: str
    required: true
  framework:
    description: The framework Horovod is built for.
    type: str
    choices: [torch, tensorflow]
    required: true
seealso:
  - plugin: accelops.gpu.torch_cuda_channel
    plugin_type: filter
  - plugin: accelops.gpu.tensorflow_build
    plugin_type: filter
author:
  - accelops.gpu maintainers (@accelops)
"""

EXAMPLES = r"""
# {"below": "2.1", "why": "torch 2.1 and newer need a C++17 build, which no Horovod release makes"}
- name: Show which torch Horovod 0.28.1 builds against
  ansible.builtin.debug:
    msg: "{{ '0.28.1' | accelops.gpu.horovod_limit('torch') }}"

- name: Check that Horovod 0.28.1 builds against TensorFlow 2.15.1
  ansible.builtin.assert:
    that: "'2.15.1' is version(('0.28.1' | accelops.gpu.horovod_limit('tensorflow')).below, '<')"
"""

RETURN = r"""
_value:
  description: The limit, or an empty dict where none is known.
  type: dict
  contains:
    below:
      description: The first framework release (C(major.minor)) the Horovod release does not build against.
      type: str
    why:
      description: One sentence saying why.
      type: str
"""


def horovod_limit(*args, **kwargs):
    # Imported at the call, not with the file: Ansible imports every filter file of the collection in each worker
    # process at the first lookup of any filter (docs/performance.md).
    from ansible_collections.accelops.gpu.plugins.plugin_utils._cuda_compat_filters import (
        horovod_limit as implementation,
    )

    return implementation(*args, **kwargs)


class FilterModule:
    def filters(self):
        return {"horovod_limit": horovod_limit}
