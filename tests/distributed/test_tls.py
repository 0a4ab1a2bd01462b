"""TLS as docs/distributed.md "Security" tells a user to set it up: certificates in
Dask's `distributed.comm.tls` config (a distributed.yaml in DASK_CONFIG), `dask
scheduler --protocol tls`, `dask worker tls://... --name ps/0`, then
`fl.distributed.Cluster("tls://...")`; and `fd.LocalCluster(security=...)`.

The CA and the node certificate are made here with the `openssl` command line."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import flowlab as fl
import flowlab.distributed as fd
from tests.distributed.conftest import stop_processes

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command line to make certificates"),
]

BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca_and_node(directory: Path, name: str) -> dict[str, Path]:
    """A self-signed CA and a node certificate it signed (EC keys: fast to make)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
            "-subj", f"/CN={name}-ca", cwd=directory)
    openssl("req", *key, "-keyout", "node.key", "-out", "node.csr", "-subj", f"/CN={name}-node", cwd=directory)
    (directory / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "node.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "node.pem", "-days", "2", "-extfile", "san.ext", cwd=directory)
    return {"ca": directory / "ca.pem", "cert": directory / "node.pem", "key": directory / "node.key"}


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tls")
    return {"good": make_ca_and_node(root / "good", "flowlab"), "rogue": make_ca_and_node(root / "rogue", "rogue")}


def distributed_yaml(c: dict[str, Path]) -> str:
    """The docs' yaml, with these certificates."""
    pair = f"{{cert: {c['cert']}, key: {c['key']}}}"
    return (f"distributed:\n  comm:\n    require-encryption: true\n    tls:\n      ca-file: {c['ca']}\n"
            f"      scheduler: {pair}\n      worker: {pair}\n      client: {pair}\n")


def yaml_tree(c: dict[str, Path]) -> dict:
    import yaml

    return yaml.safe_load(distributed_yaml(c))


def dotted(tree: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} as {"a.b": 1}: dask.config.set replaces a whole nested dict."""
    flat: dict = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            flat.update(dotted(v, f"{prefix}{k}."))
        else:
            flat[f"{prefix}{k}"] = v
    return flat


def security(c: dict[str, Path]):
    """A distributed.Security with these certificates for every role."""
    from distributed import Security

    roles = {f"tls_{role}_{part}": str(c[part]) for role in ("client", "scheduler", "worker")
             for part in ("cert", "key")}
    return Security(tls_ca_file=str(c["ca"]), require_encryption=True, **roles)


def ps_step(target) -> None:
    """A variable on ps/0, read and doubled on worker/0: the values NumPy gives."""
    g = fl.Graph()
    with g.as_default():
        with fl.device("/job:ps/task:0"):
            v = fl.Variable(np.arange(4, dtype=np.float32), name="v")
            add = v.assign_add(np.ones(4, np.float32))
        with fl.device("/job:worker/task:0"):
            doubled = v * 2.0
        with fl.Session(target, graph=g) as sess:
            sess.run(v.initializer)
            sess.run(add)
            np.testing.assert_array_equal(sess.run(doubled), (np.arange(4, dtype=np.float32) + 1) * 2)


def assert_all_tls(cluster) -> None:
    info = cluster.client.scheduler_info()
    assert cluster.scheduler_address.startswith("tls://")
    assert sorted(w["name"] for w in info["workers"].values()) == ["ps/0", "worker/0"]
    assert all(addr.startswith("tls://") for addr in info["workers"]), list(info["workers"])
    spec = cluster.cluster_spec.as_dict()
    assert all(addr.startswith("tls://") for addrs in spec.values() for addr in addrs), spec


def assert_outsiders_refused(address: str, certs) -> None:
    """Clients without the cluster's certificates cannot attach."""
    import ssl

    from distributed.comm.core import FatalCommClosedError

    host, port = address.removeprefix("tls://").rsplit(":", 1)
    # No TLS settings at all: Dask has no context to speak TLS with.
    with pytest.raises(TypeError, match="TLS expects a `ssl_context` argument"):
        fd.Cluster(address, timeout=3)
    # Plain TCP to the TLS port: the listener drops it.
    with pytest.raises(OSError, match="Connection reset by peer|Timed out trying to connect"):
        fd.Cluster(f"tcp://{host}:{port}", timeout=3)
    # A certificate from another CA: the client refuses the server's certificate
    # (and the server the client's).
    with pytest.raises(FatalCommClosedError, match="TLS certificate does not match"):
        fd.Cluster(address, timeout=3, security=security(certs["rogue"]))
    # Trusting the CA but showing no certificate of one's own (Dask will not even
    # try that, so a bare TLS handshake): the server requires one.
    ctx = ssl.create_default_context(cafile=str(certs["good"]["ca"]))
    ctx.check_hostname = False
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        with pytest.raises(ssl.SSLError, match="CERTIFICATE_REQUIRED|certificate required"):
            with ctx.wrap_socket(raw) as tls:
                tls.recv(1)  # TLS 1.3 reports the missing certificate after the handshake


def test_dask_cli_deployment_with_the_docs_yaml(certs, tmp_path):
    import dask.config
    import distributed  # noqa: F401 - its config defaults first: leaving set() would drop what it inserted

    good = certs["good"]
    confdir = tmp_path / "dask-config"
    confdir.mkdir()
    (confdir / "distributed.yaml").write_text(distributed_yaml(good))
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    env.update(DASK_CONFIG=str(confdir), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    log = open(tmp_path / "dask.log", "w")
    procs = [subprocess.Popen([str(BIN / "dask"), "scheduler", "--protocol", "tls", "--host", "127.0.0.1",
                               "--port", str(port), "--no-dashboard"], env=env, stdout=log, stderr=log)]
    try:
        # ps/0 reads the yaml; worker/0 the same settings as environment variables.
        as_env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
        as_env.update({f"DASK_{k.upper().replace('.', '__').replace('-', '_')}": str(v)
                       for k, v in dotted(yaml_tree(good)).items()}, PYTHONPATH=env["PYTHONPATH"])
        for name, worker_env in (("ps/0", env), ("worker/0", as_env)):
            procs.append(subprocess.Popen([str(BIN / "dask"), "worker", address, "--name", name, "--nthreads", "1",
                                           "--host", "127.0.0.1", "--no-dashboard"],
                                          env=worker_env, stdout=log, stderr=log))
        # This process reads the same yaml, as a user's client would from ~/.config/dask.
        with dask.config.set(dotted(dask.config.collect(paths=[str(confdir)], env={}))):
            from distributed import Client

            client = Client(address, timeout=60, set_as_default=False)
            try:
                client.wait_for_workers(2, timeout=60)
            finally:
                client.close()
            with fd.Cluster(address) as cluster:
                assert_all_tls(cluster)
                ps_step(address)
        # The certificates given to the Cluster itself rather than through config.
        with fd.Cluster(address, security=security(good)) as cluster:
            assert_all_tls(cluster)
            ps_step(cluster)
        assert_outsiders_refused(address, certs)
    finally:
        stop_processes(procs)
        log.close()


def test_local_cluster_with_security(certs):
    with fd.LocalCluster(ps=1, worker=1, security=security(certs["good"]), dashboard=False) as cluster:
        assert_all_tls(cluster)
        ps_step(cluster)
        ps_step(cluster.scheduler_address)  # a tf.Session("tls://...") target reuses the cluster's client
        assert_outsiders_refused(cluster.scheduler_address, certs)


def test_tf_train_servers_speak_tls_with_the_dask_config(certs):
    # A TF1 launcher's two tasks (here in one process), with Dask's TLS settings and
    # protocol="tls"; then the same through `distributed.comm.default-scheme: tls` and
    # TensorFlow's default protocol ("grpc").
    import dask.config
    import distributed  # noqa: F401 - its config defaults first

    spec = {"ps": [f"127.0.0.1:{free_port()}"], "worker": [f"127.0.0.1:{free_port()}"]}
    with dask.config.set(dotted(yaml_tree(certs["good"]))):
        ps = fl.train.Server(spec, job_name="ps", task_index=0, protocol="tls")
        worker = fl.train.Server(spec, job_name="worker", task_index=0, protocol="tls")
    try:
        assert worker.target == f"tls://{spec['ps'][0]}/job:worker/task:0"
        assert ps.server_def["protocol"] == "tls"
        with dask.config.set(dotted(yaml_tree(certs["good"]))):
            ps_step(worker.target)
            with fd.Cluster(worker.target.split("/job:")[0]) as cluster:
                assert_all_tls(cluster)
        assert_outsiders_refused(worker.target.split("/job:")[0], certs)
    finally:
        worker.stop()
        ps.stop()
    with dask.config.set({**dotted(yaml_tree(certs["good"])), "distributed.comm.default-scheme": "tls"}):
        local = fl.train.Server.create_local_server()
        try:
            assert local.target.startswith("tls://127.0.0.1:")
            g = fl.Graph()
            with g.as_default():
                v = fl.Variable(np.float32(3.0))
                with fl.Session(local.target, graph=g) as sess:
                    sess.run(v.initializer)
                    assert sess.run(v * 2.0) == 6.0
        finally:
            local.stop()
    with pytest.raises(ValueError, match="protocol 'grpc\\+verbs' is not one a flowlab Server speaks"):
        fl.train.Server(spec, job_name="ps", task_index=0, protocol="grpc+verbs", start=False)
