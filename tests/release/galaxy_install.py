"""Install the collection tarball the way users install it: `ansible-galaxy collection install accelops.gpu` from a
Galaxy server, here a stand-in that serves Galaxy's v3 API for this one tarball on 127.0.0.1 (the API root with its
available versions, the collection, its versions and the version's metadata with the artifact's SHA256 and download
URL), as Galaxy and Automation Hub answer them.

Usage: python3 tests/release/galaxy_install.py TARBALL COLLECTIONS_PATH
ansible-galaxy must be on PATH; the installed collection lands in COLLECTIONS_PATH/ansible_collections/accelops/gpu.
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading


def galaxy_tree(root, tarball, server):
    """The static files of the API for TARBALL under ROOT, served at SERVER (http://host:port); returns (namespace,
    name, version)."""
    found = re.match(r"\A([a-z0-9_]+)-([a-z0-9_]+)-([0-9][0-9A-Za-z.+-]*)\.tar\.gz\Z", os.path.basename(tarball))
    if not found:
        raise SystemExit("galaxy_install: %s is not named as ansible-galaxy collection build names it" % tarball)
    namespace, name, version = found.groups()
    with open(tarball, "rb") as handle:
        data = handle.read()
    base = "/api/v3/collections/%s/%s/" % (namespace, name)
    download = "/download/%s" % os.path.basename(tarball)
    # Absolute, as Galaxy gives it: ansible-core up to 2.18 does not resolve a relative one.
    pages = {
        "/api/": {"available_versions": {"v3": "v3/"}},
        base: {"href": base, "namespace": namespace, "name": name, "created_at": "2026-01-01T00:00:00Z",
               "updated_at": "2026-01-01T00:00:00Z", "highest_version": {"href": base + "versions/%s/" % version,
                                                                         "version": version}},
        base + "versions/": {
            "meta": {"count": 1}, "links": {"first": None, "previous": None, "next": None, "last": None},
            "data": [{"version": version, "href": base + "versions/%s/" % version}]},
        base + "versions/%s/" % version: {
            "href": base + "versions/%s/" % version, "namespace": {"name": namespace}, "collection": {"name": name},
            "version": version, "download_url": server + download, "signatures": [],
            "artifact": {"filename": os.path.basename(tarball), "sha256": hashlib.sha256(data).hexdigest(),
                         "size": len(data)},
            "metadata": {"dependencies": {}}},
    }
    for path, page in pages.items():
        os.makedirs(root + path, exist_ok=True)
        with open(root + path + "index.html", "w", encoding="utf-8") as handle:
            json.dump(page, handle)
    os.makedirs(root + "/download", exist_ok=True)
    with open(root + download, "wb") as handle:
        handle.write(data)
    return namespace, name, version


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    tarball, collections = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    with tempfile.TemporaryDirectory() as root:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=root))
        address = "http://127.0.0.1:%d" % server.server_address[1]
        namespace, name, version = galaxy_tree(root, tarball, address)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        url = address + "/api/"
        try:
            # No other server, no cache: what is installed came through this API.
            done = subprocess.run(["ansible-galaxy", "collection", "install", "--no-cache", "--force", "-s", url,
                                   "-p", collections, "%s.%s:==%s" % (namespace, name, version)],
                                  capture_output=True, text=True, check=False,
                                  env=dict(os.environ, ANSIBLE_GALAXY_SERVER_LIST=""))
        finally:
            server.shutdown()
    if done.returncode != 0 or "was installed successfully" not in done.stdout:
        sys.stderr.write("galaxy_install: ansible-galaxy did not install %s.%s %s from the Galaxy API:\n%s%s"
                         % (namespace, name, version, done.stdout, done.stderr))
        return 1
    print("ansible-galaxy collection install %s.%s:==%s from a Galaxy v3 API: installed" % (namespace, name, version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
