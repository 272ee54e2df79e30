# -*- coding: utf-8 -*-
# Copyright: (c) 2026, accelops.gpu contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node_file_paths filter, documented in its own node_file_paths.yml: the destinations of accelops.gpu.node_files
entries, for the node_probe read that node_files then decides from."""

from __future__ import annotations

from ansible_collections.accelops.gpu.plugins.plugin_utils._errors import NodeFilesError
from ansible_collections.accelops.gpu.plugins.plugin_utils._filters import filter_errors


@filter_errors("node_file_paths", NodeFilesError)
def node_file_paths(files, directory_mode=None):
    """Every destination the node_files entries stand for, in order, module_utils trees and programs' libs expanded."""
    from ansible_collections.accelops.gpu.plugins.plugin_utils import _node_files

    return _node_files.paths(files, directory_mode)


class FilterModule:
    def filters(self):
        return {"node_file_paths": node_file_paths}
