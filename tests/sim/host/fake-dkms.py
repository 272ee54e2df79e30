"""A stand-in for dkms on simulated nodes, which compile nothing: the `dkms` package of the archive stand-in
(tests/sim/mirror/cudamirror) installs it as /usr/sbin/dkms. It keeps DKMS's tree and answers like dkms 3 does:

  dkms add M/V | -m M -v V                  registers a module's source (/var/lib/dkms/M/V/source)
  dkms build|install M/V [-k K]...          "builds" for kernel K (default: the running kernel) when its headers
                                            are there (/lib/modules/K/build); install puts the module under
                                            /lib/modules/K/updates/dkms
  dkms autoinstall [-k K]...                install of every added module for K
  dkms remove M/V (-k K... | --all)         forgets the builds (and the module with --all)
  dkms status [M[/V]] [-m M] [-v V] [-k K]  "M/V, K, x86_64: installed" (or built), "M/V: added"

A kernel listed in /etc/accelops-sim/dkms-fail (one per line) fails to build, as a module whose source does not
compile against that kernel does.
"""

import os
import shutil
import sys

TREE = os.environ.get("ACCELOPS_SIM_DKMS_TREE", "/var/lib/dkms")
MODULES = os.environ.get("ACCELOPS_SIM_MODULES", "/lib/modules")
FAILING = os.environ.get("ACCELOPS_SIM_DKMS_FAIL", "/etc/accelops-sim/dkms-fail")
ARCH = "x86_64"


def fail(message, code=1):
    sys.stderr.write("Error! %s\n" % message)
    sys.exit(code)


def parse(argv):
    if not argv:
        fail("no action given (add, build, install, autoinstall, remove, status)")
    action, rest = argv[0], argv[1:]
    options = {"module": None, "version": None, "kernels": [], "all": False}
    index = 0
    while index < len(rest):
        word = rest[index]
        if word in ("-m", "-v", "-k") and index + 1 < len(rest):
            value = rest[index + 1]
            if word == "-m":
                options["module"], version = [*value.split("/", 1), None][:2]
                options["version"] = version or options["version"]
            elif word == "-v":
                options["version"] = value
            else:
                options["kernels"].append(value.split("/")[0])
            index += 2
            continue
        if word == "--all":
            options["all"] = True
        elif word.startswith("-"):
            pass  # --force, -q and the like change nothing here
        elif options["module"] is None:
            options["module"], options["version"] = [*word.split("/", 1), None][:2]
        index += 1
    return action, options


def version_key(version):
    """550.127.08 after 550.54.15, as dkms sorts versions."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in version.replace("-", ".").split(".")]


def running_kernel():
    return os.uname().release


def added():
    """(module, version) of every added module."""
    found = []
    if os.path.isdir(TREE):
        # The tree also holds files, such as the module signing key (mok.key, mok.pub).
        for module in sorted(name for name in os.listdir(TREE) if os.path.isdir(os.path.join(TREE, name))):
            for version in sorted(os.listdir(os.path.join(TREE, module))):
                if os.path.isdir(os.path.join(TREE, module, version, "source")):
                    found.append((module, version))
    return found


def need_module(options):
    if not options["module"] or not options["version"]:
        fail("Invalid number of arguments passed. Usage: dkms <action> <module>/<module-version>")
    return options["module"], options["version"]


def failing_kernels():
    try:
        with open(FAILING) as handle:
            return {line.strip() for line in handle if line.strip()}
    except FileNotFoundError:
        return set()


def build(module, version, kernel):
    if (module, version) not in added():
        fail("Could not find module source directory. Directory: /usr/src/%s-%s does not exist." % (module, version))
    headers = os.path.join(MODULES, kernel, "build")
    if not os.path.isdir(headers):
        fail("Your kernel headers for kernel %s cannot be found at %s or %s.\n"
             "Please install the linux-headers-%s package or use the --kernelsourcedir option to tell DKMS where "
             "it's located." % (kernel, headers, os.path.join(MODULES, kernel, "source"), kernel), 21)
    if kernel in failing_kernels():
        fail("Bad return status for module build on kernel: %s (%s)\nConsult %s for more information."
             % (kernel, ARCH, os.path.join(TREE, module, version, "build", "make.log")), 10)
    built = os.path.join(TREE, module, version, kernel, ARCH, "module")
    os.makedirs(built, exist_ok=True)
    with open(os.path.join(built, "nvidia.ko"), "w") as handle:
        handle.write("%s %s %s\n" % (module, version, kernel))
    return built


def install(module, version, kernel):
    built = build(module, version, kernel)
    target = os.path.join(MODULES, kernel, "updates", "dkms")
    os.makedirs(target, exist_ok=True)
    shutil.copy(os.path.join(built, "nvidia.ko"), os.path.join(target, "nvidia.ko"))
    print("%s/%s: installed for %s" % (module, version, kernel))


def installed_in(module, version, kernel):
    path = os.path.join(MODULES, kernel, "updates", "dkms", "nvidia.ko")
    try:
        with open(path) as handle:
            return handle.read().split() == [module, version, kernel]
    except FileNotFoundError:
        return False


def remove(module, version, kernels, everything):
    base = os.path.join(TREE, module, version)
    if not os.path.isdir(base):
        fail("There is no instance of %s %s for kernel %s" % (module, version, ",".join(kernels) or running_kernel()),
             3)
    if everything:
        kernels = [name for name in os.listdir(base) if name not in ("source", "build")]
    for kernel in kernels or [running_kernel()]:
        if installed_in(module, version, kernel):
            os.remove(os.path.join(MODULES, kernel, "updates", "dkms", "nvidia.ko"))
        shutil.rmtree(os.path.join(base, kernel), ignore_errors=True)
    if everything:
        shutil.rmtree(base)
        if not os.listdir(os.path.join(TREE, module)):
            os.rmdir(os.path.join(TREE, module))


def status(options):
    for module, version in added():
        if options["module"] not in (None, module) or options["version"] not in (None, version):
            continue
        base = os.path.join(TREE, module, version)
        kernels = sorted(name for name in os.listdir(base) if name not in ("source", "build"))
        if options["kernels"]:
            kernels = [kernel for kernel in kernels if kernel in options["kernels"]]
        if not kernels and not options["kernels"]:
            print("%s/%s: added" % (module, version))
        for kernel in kernels:
            state = "installed" if installed_in(module, version, kernel) else "built"
            print("%s/%s, %s, %s: %s" % (module, version, kernel, ARCH, state))


def main(argv):
    action, options = parse(argv)
    kernels = options["kernels"] or [running_kernel()]
    if action == "add":
        module, version = need_module(options)
        os.makedirs(os.path.join(TREE, module, version, "source"), exist_ok=True)
        print("Creating symlink %s/%s/%s/source -> /usr/src/%s-%s" % (TREE, module, version, module, version))
    elif action in ("build", "install"):
        module, version = need_module(options)
        for kernel in kernels:
            (install if action == "install" else build)(module, version, kernel)
    elif action == "autoinstall":
        newest = {}
        for module, version in added():
            if module not in newest or version_key(version) > version_key(newest[module]):
                newest[module] = version
        for kernel in kernels:
            for module, version in sorted(newest.items()):
                if not installed_in(module, version, kernel):
                    install(module, version, kernel)
    elif action == "remove":
        module, version = need_module(options)
        remove(module, version, options["kernels"], options["all"])
    elif action == "status":
        status(options)
    else:
        fail("Unknown action: %s" % action)


if __name__ == "__main__":
    main(sys.argv[1:])
