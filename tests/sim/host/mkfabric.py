"""Build the sysfs tree of a simulated RDMA fabric: GPUs and Mellanox/NVIDIA HCAs in a real PCIe hierarchy.

Usage: mkfabric.py [--flat] [--peermem] PROFILE OUTDIR

PROFILE is one of dgx-h100, roce-host, ports-down, no-rdma (see PROFILES below and docs/infiniband.md).

Writes, as the kernel lays them out:
  OUTDIR/devices/pci0000:BB/<root port>/[<switch upstream>/<switch downstream>/...]<function>/
      {vendor,device,class,subsystem_vendor,subsystem_device,numa_node}
  OUTDIR/bus/pci/devices/<address>  -> relative symlink to the function's directory (bridges included)
  OUTDIR/bus/pci/drivers/{nvidia,mlx5_core}, and each function's `driver` link
  <function>/infiniband/mlx5_N/{node_guid,sys_image_guid,fw_ver,board_id,hca_type,hw_rev,node_type,node_desc,device}
  <function>/infiniband/mlx5_N/ports/1/{state,phys_state,rate,link_layer,lid,sm_lid,sm_sl,lid_mask_count,
      cap_mask,gids/N,gid_attrs/types/N,gid_attrs/ndevs/N}
  <function>/net/<ifname>/{address,operstate,type,mtu,dev_port}
  OUTDIR/class/infiniband/mlx5_N and OUTDIR/class/net/<ifname> -> relative symlinks into the tree
--flat writes every function as a plain directory under bus/pci/devices, without the hierarchy (as
tests/sim/host/mksysfs.py does). --peermem adds OUTDIR/module/nvidia_peermem (the module is loaded).
Runs on python3 (3.9+) with the standard library only.
"""

import os
import sys

NVIDIA = 0x10DE
MELLANOX = 0x15B3
INTEL = 0x8086
AMD = 0x1022
BROADCOM = 0x1000

CLASS_3D_CONTROLLER = 0x030200
CLASS_VGA = 0x030000
CLASS_INFINIBAND = 0x020700
CLASS_ETHERNET = 0x020000
CLASS_PCI_BRIDGE = 0x060400

# PCI device ids (pci.ids) and the HCA type the mlx5 driver reports (MT<vendor_part_id>).
CONNECTX7 = {"device": 0x1021, "hca_type": "MT4129", "fw_ver": "28.39.1002", "board_id": "MT_0000000838",
             "subsystem_device": 0x0041}
CONNECTX6DX = {"device": 0x101D, "hca_type": "MT4125", "fw_ver": "22.38.1900", "board_id": "MT_0000000437",
               "subsystem_device": 0x0042}
H100_SXM5 = {"device": 0x2330, "subsystem_vendor": NVIDIA, "subsystem_device": 0x16C1}
L40S = {"device": 0x26B9, "subsystem_vendor": NVIDIA, "subsystem_device": 0x1851}
PEX89000 = 0xC030  # Broadcom PEX890xx PCIe Gen5 switch port
SPR_ROOT_PORT = 0x352A  # Intel Sapphire Rapids PCIe root port
GENOA_ROOT_PORT = 0x14AB  # AMD Genoa PCIe GPP bridge

STATES = {"DOWN": "1: DOWN", "INIT": "2: INIT", "ARMED": "3: ARMED", "ACTIVE": "4: ACTIVE"}
PHYS_STATES = {"Sleep": "1: Sleep", "Polling": "2: Polling", "Disabled": "3: Disabled", "LinkUp": "5: LinkUp"}
RATE_NDR = "400 Gb/sec (4X NDR)"
RATE_100GBE = "100 Gb/sec (4X EDR)"
RATE_DOWN = "10 Gb/sec (4X SDR)"  # what a port without a link reports (its lowest rate)
GID_TABLE = 16  # entries written per port; the real tables are longer and zero past the populated ones


def hca(name, address, hca_model, link_layer, *, ifname, guid, state="ACTIVE", phys_state="LinkUp", rate=RATE_NDR,
        lid=0, sm_lid=0, ipv4=None, mac=None, operstate=None):
    """One RDMA PCI function (mlx5 gives every port its own function, hence its own device, with port 1)."""
    return {"kind": "hca", "name": name, "address": address, "model": hca_model, "link_layer": link_layer,
            "ifname": ifname, "guid": guid, "state": state, "phys_state": phys_state, "rate": rate, "lid": lid,
            "sm_lid": sm_lid, "ipv4": ipv4, "mac": mac,
            "operstate": operstate or ("up" if state == "ACTIVE" else "down")}


def gpu(address, model=None, pci_class=CLASS_3D_CONTROLLER):
    return {"kind": "gpu", "address": address, "model": model or H100_SXM5, "class": pci_class}


def switch(upstream, downstream):
    """A PCIe switch: its upstream port's address and {downstream port address: [children]}."""
    return {"kind": "switch", "address": upstream, "downstream": downstream}


def root(bus, numa, ports, vendor=INTEL, root_port_device=SPR_ROOT_PORT):
    """A host bridge (pci0000:BB) with its root ports {root port address: [children]}."""
    return {"bus": bus, "numa": numa, "ports": ports, "vendor": vendor, "root_port_device": root_port_device}


def dgx_pair(rail, guid, lid):
    """DGX H100: each compute ConnectX-7 shares a Broadcom switch with its GPU, on a root bus of its own."""
    nic_bus, gpu_bus, numa, name, ifname = rail
    base = nic_bus - 3
    return root(base, numa, {"0000:%02x:01.0" % base: [switch("0000:%02x:00.0" % (base + 1), {
        "0000:%02x:00.0" % (base + 2): [hca(name, "0000:%02x:00.0" % nic_bus, CONNECTX7, "InfiniBand", ifname=ifname,
                                            guid=guid, lid=lid, sm_lid=0x1)],
        "0000:%02x:03.0" % (base + 2): [gpu("0000:%02x:00.0" % gpu_bus)],
    })]})


def dgx_storage(bus, numa, names, guids, slot_port2_mac):
    """A dual-port ConnectX-7 in Ethernet mode (storage and in-band): port 2 bonded and up, port 1 unused."""
    port1_mac = "%s:%02x" % (slot_port2_mac[:-3], int(slot_port2_mac[-2:], 16) - 1)
    return root(bus - 1, numa, {"0000:%02x:01.0" % (bus - 1): [
        hca(names[0], "0000:%02x:00.0" % bus, CONNECTX7, "Ethernet", ifname="enp%ds0f0np0" % bus, guid=guids[0],
            state="DOWN", phys_state="Disabled", rate=RATE_DOWN, mac=port1_mac),
        hca(names[1], "0000:%02x:00.1" % bus, CONNECTX7, "Ethernet", ifname="enp%ds0f1np1" % bus, guid=guids[1],
            rate=RATE_100GBE, mac=slot_port2_mac, ipv4="10.130.%d.21" % (1 if numa == 0 else 2)),
    ]})


def dgx_h100():
    """The DGX H100/H200 layout of the user guide's network-module table (OSFP ports, GPU, default names)."""
    pairs = [  # (ConnectX-7 bus, GPU bus, NUMA node, RDMA name, IPoIB name)
        (0x18, 0x1B, 0, "mlx5_0", "ibp24s0"), (0x40, 0x43, 0, "mlx5_3", "ibp64s0"),
        (0x4F, 0x52, 0, "mlx5_4", "ibp79s0"), (0x5E, 0x61, 0, "mlx5_5", "ibp94s0"),
        (0x9A, 0x9D, 1, "mlx5_6", "ibp154s0"), (0xC0, 0xC3, 1, "mlx5_9", "ibp192s0"),
        (0xCE, 0xD1, 1, "mlx5_10", "ibp206s0"), (0xDC, 0xDF, 1, "mlx5_11", "ibp220s0"),
    ]
    roots = [dgx_pair(rail, "a088:c203:005f:%04x" % (0xC200 + rail[0]), 0x10 + i) for i, rail in enumerate(pairs)]
    roots.append(dgx_storage(0x29, 0, ("mlx5_1", "mlx5_2"), ("a088:c203:0061:1a2e", "a088:c203:0061:1a2f"),
                             "a0:88:c2:61:1a:2f"))
    roots.append(dgx_storage(0xAA, 1, ("mlx5_7", "mlx5_8"), ("a088:c203:0061:2b40", "a088:c203:0061:2b41"),
                             "a0:88:c2:61:2b:41"))
    return sorted(roots, key=lambda r: r["bus"])


def roce_host():
    """A two-socket PCIe server on RoCE: a dual-port ConnectX-6 Dx at 100 GbE and two GPUs.

    GPU 0 sits two switches below the root port that also leads to the NIC (PXB), GPU 1 on another root port of
    the same host bridge (PHB).
    """
    nic = [
        hca("mlx5_0", "0000:4b:00.0", CONNECTX6DX, "Ethernet", ifname="enp75s0f0np0", guid="1070:fd03:0058:3a10",
            rate=RATE_100GBE, mac="10:70:fd:58:3a:10", ipv4="192.168.100.11"),
        hca("mlx5_1", "0000:4b:00.1", CONNECTX6DX, "Ethernet", ifname="enp75s0f1np1", guid="1070:fd03:0058:3a11",
            rate=RATE_100GBE, mac="10:70:fd:58:3a:11", ipv4="192.168.101.11"),
    ]
    return [root(0x40, 0, {
        "0000:40:01.1": [switch("0000:41:00.0", {
            "0000:42:00.0": [switch("0000:43:00.0", {"0000:44:00.0": [gpu("0000:45:00.0", L40S)]})],
            "0000:42:04.0": nic,
        })],
        "0000:40:03.1": [gpu("0000:4c:00.0", L40S)],
    }, vendor=AMD, root_port_device=GENOA_ROOT_PORT)]


def ports_down():
    """InfiniBand HCAs that are not up: link up without a subnet manager, no link partner, port disabled."""
    hcas = [
        hca("mlx5_0", "0000:18:00.0", CONNECTX7, "InfiniBand", ifname="ibp24s0", guid="a088:c203:0070:0118",
            state="INIT", phys_state="LinkUp"),
        hca("mlx5_1", "0000:40:00.0", CONNECTX7, "InfiniBand", ifname="ibp64s0", guid="a088:c203:0070:0140",
            state="DOWN", phys_state="Polling", rate=RATE_DOWN),
        hca("mlx5_2", "0000:9a:00.0", CONNECTX7, "InfiniBand", ifname="ibp154s0", guid="a088:c203:0070:019a",
            state="DOWN", phys_state="Disabled", rate=RATE_DOWN),
    ]
    switch0 = switch("0000:16:00.0", {"0000:17:00.0": [hcas[0]], "0000:17:03.0": [gpu("0000:1b:00.0")]})
    switch1 = switch("0000:98:00.0", {"0000:99:00.0": [hcas[2]], "0000:99:03.0": [gpu("0000:9d:00.0")]})
    return [
        root(0x15, 0, {"0000:15:01.0": [switch0]}),
        root(0x3D, 0, {"0000:3d:01.0": [hcas[1]]}),
        root(0x97, 1, {"0000:97:01.0": [switch1]}),
    ]


def no_rdma():
    """GPUs only: two L40S on two sockets, no RDMA device."""
    return [
        root(0x49, 0, {"0000:49:01.1": [gpu("0000:4a:00.0", L40S)]}, vendor=AMD, root_port_device=GENOA_ROOT_PORT),
        root(0xC9, 1, {"0000:c9:01.1": [gpu("0000:ca:00.0", L40S)]}, vendor=AMD, root_port_device=GENOA_ROOT_PORT),
    ]


PROFILES = {"dgx-h100": dgx_h100, "roce-host": roce_host, "ports-down": ports_down, "no-rdma": no_rdma}


def write(path, text):
    with open(path, "w") as handle:
        handle.write(text + "\n")


def link(target, name):
    """A relative symlink at `name` to `target`, as sysfs makes them."""
    parent = os.path.dirname(name)
    if not os.path.isdir(parent):
        os.makedirs(parent)
    os.symlink(os.path.relpath(target, parent), name)


def gid_from_guid(guid):
    return "fe80:0000:0000:0000:" + guid


def gid_from_mac(mac):
    """The link-local IPv6 address (EUI-64) of a MAC, as the first RoCE GID."""
    octets = [int(x, 16) for x in mac.split(":")]
    eui = [octets[0] ^ 0x02, octets[1], octets[2], 0xFF, 0xFE, octets[3], octets[4], octets[5]]
    return "fe80:0000:0000:0000:" + ":".join("%02x%02x" % (eui[i], eui[i + 1]) for i in range(0, 8, 2))


def gid_from_ipv4(ipv4):
    """An IPv4-mapped IPv6 GID (::ffff:a.b.c.d) as sysfs prints it."""
    a, b, c, d = (int(x) for x in ipv4.split("."))
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)


class Writer:
    def __init__(self, outdir, flat):
        self.outdir = outdir
        self.flat = flat
        self.functions = 0

    def function(self, parent, address, ids, numa, *, subsystem=(0, 0), driver=None):
        """One PCI function (ids: vendor, device, class): its directory, in the hierarchy or flat, and its
        bus/pci/devices entry."""
        vendor, device, pci_class = ids
        bus_entry = os.path.join(self.outdir, "bus", "pci", "devices", address)
        path = bus_entry if self.flat else os.path.join(parent, address)
        os.makedirs(path)
        if not self.flat:
            link(path, bus_entry)
        write(os.path.join(path, "vendor"), "0x%04x" % vendor)
        write(os.path.join(path, "device"), "0x%04x" % device)
        write(os.path.join(path, "class"), "0x%06x" % pci_class)
        write(os.path.join(path, "subsystem_vendor"), "0x%04x" % subsystem[0])
        write(os.path.join(path, "subsystem_device"), "0x%04x" % subsystem[1])
        write(os.path.join(path, "numa_node"), str(numa))
        if driver:
            target = os.path.join(self.outdir, "bus", "pci", "drivers", driver)
            if not os.path.isdir(target):
                os.makedirs(target)
            link(target, os.path.join(path, "driver"))
        self.functions += 1
        return path

    def children(self, parent, nodes, numa):
        for node in nodes:
            if node["kind"] == "switch":
                up = self.function(parent, node["address"], (BROADCOM, PEX89000, CLASS_PCI_BRIDGE), numa)
                for down_address, below in sorted(node["downstream"].items()):
                    down = self.function(up, down_address, (BROADCOM, PEX89000, CLASS_PCI_BRIDGE), numa)
                    self.children(down, below, numa)
            elif node["kind"] == "gpu":
                model = node["model"]
                self.function(parent, node["address"], (NVIDIA, model["device"], node["class"]), numa,
                              subsystem=(model["subsystem_vendor"], model["subsystem_device"]), driver="nvidia")
            else:
                self.hca(parent, node, numa)

    def hca(self, parent, node, numa):
        model = node["model"]
        infiniband = node["link_layer"] == "InfiniBand"
        path = self.function(parent, node["address"],
                             (MELLANOX, model["device"], CLASS_INFINIBAND if infiniband else CLASS_ETHERNET), numa,
                             subsystem=(MELLANOX, model["subsystem_device"]), driver="mlx5_core")
        dev = os.path.join(path, "infiniband", node["name"])
        os.makedirs(dev)
        link(path, os.path.join(dev, "device"))
        link(dev, os.path.join(self.outdir, "class", "infiniband", node["name"]))
        for name, value in (("node_guid", node["guid"]), ("sys_image_guid", node["guid"]),
                            ("fw_ver", model["fw_ver"]), ("board_id", model["board_id"]),
                            ("hca_type", model["hca_type"]), ("hw_rev", "0x0"), ("node_type", "1: CA"),
                            ("node_desc", "simnode %s" % node["name"])):
            write(os.path.join(dev, name), value)
        port = os.path.join(dev, "ports", "1")
        for sub in ("gids", os.path.join("gid_attrs", "types"), os.path.join("gid_attrs", "ndevs")):
            os.makedirs(os.path.join(port, sub))
        for name, value in (("state", STATES[node["state"]]), ("phys_state", PHYS_STATES[node["phys_state"]]),
                            ("rate", node["rate"]), ("link_layer", node["link_layer"]),
                            ("lid", "0x%x" % node["lid"]), ("sm_lid", "0x%x" % node["sm_lid"]), ("sm_sl", "0"),
                            ("lid_mask_count", "0"),
                            ("cap_mask", "0xa751e84a" if infiniband else "0x00010000")):
            write(os.path.join(port, name), value)
        if infiniband:  # the port GID; no net device is attached to it
            gids = [(gid_from_guid(node["guid"]), "IB/RoCE v1", None)]
        else:  # RoCE: the link-local address, then one entry per IP address, each as RoCE v1 and v2
            ifname = node["ifname"]
            gids = [(gid_from_mac(node["mac"]), "IB/RoCE v1", ifname), (gid_from_mac(node["mac"]), "RoCE v2", ifname)]
            if node["ipv4"] and node["state"] == "ACTIVE":
                gids += [(gid_from_ipv4(node["ipv4"]), "IB/RoCE v1", ifname),
                         (gid_from_ipv4(node["ipv4"]), "RoCE v2", ifname)]
        for index in range(GID_TABLE):
            gid, kind, ndev = gids[index] if index < len(gids) else ("0000:" * 7 + "0000", None, None)
            write(os.path.join(port, "gids", str(index)), gid)
            # The kernel answers EINVAL for the attributes of an unpopulated entry: no file here.
            if kind:
                write(os.path.join(port, "gid_attrs", "types", str(index)), kind)
            if ndev:
                write(os.path.join(port, "gid_attrs", "ndevs", str(index)), ndev)
        self.netdev(path, node, infiniband)

    def netdev(self, path, node, infiniband):
        net = os.path.join(path, "net", node["ifname"])
        os.makedirs(net)
        if infiniband:  # IPoIB: 4 bytes of flags and QPN, then the port GID
            gid = gid_from_guid(node["guid"]).replace(":", "")
            address = "00:00:10:49:" + ":".join(gid[i:i + 2] for i in range(0, 32, 2))
        else:
            address = node["mac"]
        for name, value in (("address", address), ("operstate", node["operstate"]),
                            ("type", "32" if infiniband else "1"), ("mtu", "4092" if infiniband else "9000"),
                            ("dev_port", "0")):
            write(os.path.join(net, name), value)
        link(net, os.path.join(self.outdir, "class", "net", node["ifname"]))


def main(profile, outdir, flat=False, peermem=False):
    """Write PROFILE's tree under OUTDIR; returns the number of PCI functions written."""
    writer = Writer(outdir, flat)
    # A simulated node may already have an empty tree (tests/sim/host/prepare-node.yml gives one to a node without
    # GPUs).
    os.makedirs(os.path.join(outdir, "bus", "pci", "devices"), exist_ok=True)
    for rc in PROFILES[profile]():
        host_bridge = os.path.join(outdir, "devices", "pci0000:%02x" % rc["bus"])
        if not flat:
            os.makedirs(host_bridge)
        for port_address, below in sorted(rc["ports"].items()):
            port = writer.function(host_bridge, port_address, (rc["vendor"], rc["root_port_device"], CLASS_PCI_BRIDGE),
                                   rc["numa"])
            writer.children(port, below, rc["numa"])
    if peermem:
        module = os.path.join(outdir, "module", "nvidia_peermem")
        os.makedirs(module)
        write(os.path.join(module, "initstate"), "live")
        write(os.path.join(module, "refcnt"), "0")
    return writer.functions


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = {a for a in sys.argv[1:] if a.startswith("--")}
    if len(args) != 2 or args[0] not in PROFILES or flags - {"--flat", "--peermem"}:
        sys.exit(__doc__)
    count = main(args[0], args[1], flat="--flat" in flags, peermem="--peermem" in flags)
    print("%s: %d PCI functions" % (args[0], count))
