"""Multi-node servers rendered as LeaderWorkerSets: strictly valid for the LWS v1 API, with
SGLang's multi-node flags right on the leader and the workers, and single-node jobs unchanged."""

from __future__ import annotations

import copy

import jsonschema
import kubernetes_validate
import pytest
import yaml

from draftgen.contract.sglang_options import OPTIONS
from draftgen.controller import names
from draftgen.controller.render import leaderworkerset as lws
from draftgen.controller.render import render_all
from draftgen.controller.settings import OperatorSettings
from draftgen.spec import SpecError, parse_spec

from .harness import REPO
from .lws_schema import validate_leader_worker_set


def _h100() -> dict:
    return yaml.safe_load((REPO / "examples" / "kimi-k2.5-h100.yaml").read_text())


def _render(raw: dict, settings: OperatorSettings | None = None) -> dict[str, dict]:
    objs = render_all(raw["metadata"]["name"], raw["metadata"]["namespace"], raw["spec"], settings)
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in objs}


def _variants() -> dict[str, dict]:
    h100 = _h100()
    four = copy.deepcopy(h100)
    four["spec"]["server"].update(
        nodesPerReplica=4, tensorParallelSize=32, gpusPerNode=8, replicas=2, hostNetwork=True
    )
    four["spec"]["model"]["hfTokenSecret"] = {"name": "hf", "key": "token"}
    plain = copy.deepcopy(h100)
    for key in ("rdma", "resources", "gpusPerNode"):
        plain["spec"]["server"].pop(key)
    plain["spec"]["server"]["hierarchicalCache"] = {"enabled": False}
    dp_attention = copy.deepcopy(h100)
    dp_attention["spec"]["server"].update(attentionDataParallelSize=8, decodeContextParallelSize=2)
    return {
        "kimi-k2.5-h100": h100,
        "four-nodes-two-replicas": four,
        "defaults": plain,
        "dp-attention": dp_attention,
    }


def _args(template: dict) -> list[str]:
    return template["spec"]["containers"][0]["args"]


def _flag(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


@pytest.mark.parametrize("name", list(_variants()))
def test_every_rendered_manifest_is_valid(name: str) -> None:
    objs = _render(_variants()[name])
    groups = [o for o in objs.values() if o["kind"] == "LeaderWorkerSet"]
    assert groups and not any(o["kind"] == "Deployment" for o in objs.values())
    for obj in objs.values():
        if obj["kind"] == "LeaderWorkerSet":
            validate_leader_worker_set(obj)
        else:
            kubernetes_validate.validate(obj, "1.30", strict=True)


def test_the_schema_refuses_what_the_lws_api_does() -> None:
    """The checks can fail: an unknown field, a misspelled restart policy, a size of 0."""
    good = _render(_h100())["LeaderWorkerSet/kimi-k25-h100-server-0"]
    validate_leader_worker_set(good)
    for path, value in (
        (("spec", "leaderWorkerTemplate", "restartPolicy"), "RecreateGroupOnRestart"),
        (("spec", "leaderWorkerTemplate", "size"), 0),
        (("spec", "leaderWorkerTemplate", "workerCount"), 2),
        (("spec", "startupPolicy"), "Eager"),
    ):
        bad = copy.deepcopy(good)
        target = bad
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        with pytest.raises(jsonschema.ValidationError):
            validate_leader_worker_set(bad)
    bad = copy.deepcopy(good)
    bad["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["probe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_leader_worker_set(bad)


def test_h100_example_renders_one_group_of_two_nodes_with_tp_16() -> None:
    objs = _render(_h100())
    group = objs["LeaderWorkerSet/kimi-k25-h100-server-0"]
    lwt = group["spec"]["leaderWorkerTemplate"]
    assert group["spec"]["replicas"] == 1
    assert lwt["size"] == 2
    assert lwt["restartPolicy"] == "RecreateGroupOnPodRestart"
    leader, worker = _args(lwt["leaderTemplate"]), _args(lwt["workerTemplate"])
    for args in (leader, worker):
        assert _flag(args, "--tp-size") == "16"
        assert _flag(args, "--nnodes") == "2"
        assert _flag(args, "--dist-init-addr") == f"$(LWS_LEADER_ADDRESS):{lws.DIST_INIT_PORT}"
        assert _flag(args, "--hicache-size") == "48"
        # Every flag is one SGLang 0.5.23 has.
        assert all(a in OPTIONS for a in args if a.startswith("--"))
    assert _flag(leader, "--node-rank") == "0"
    assert _flag(worker, "--node-rank") == "$(LWS_WORKER_INDEX)"
    # Probes, the HTTP port and the scrape annotations on the leader only.
    lc = lwt["leaderTemplate"]["spec"]["containers"][0]
    wc = lwt["workerTemplate"]["spec"]["containers"][0]
    assert {"startupProbe", "readinessProbe", "livenessProbe"} <= set(lc)
    assert not {"startupProbe", "readinessProbe", "livenessProbe", "ports"} & set(wc)
    assert lwt["leaderTemplate"]["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert not lwt["workerTemplate"]["metadata"]["annotations"]
    # Each node: 8 GPUs, the RDMA device, IPC_LOCK for NCCL's pinned memory, shm for NCCL,
    # host memory for its own 8 ranks' hierarchical cache.
    for c in (lc, wc):
        assert c["resources"]["limits"] == {"nvidia.com/gpu": "8", "rdma/ib": "1"}
        assert c["resources"]["requests"]["memory"] == "384G"
        assert c["securityContext"]["capabilities"] == {"drop": ["ALL"], "add": ["IPC_LOCK"]}
    for t in (lwt["leaderTemplate"], lwt["workerTemplate"]):
        assert "hostname" not in t["spec"] and "subdomain" not in t["spec"]  # LWS names them
        assert any(v["name"] == "dshm" for v in t["spec"]["volumes"])
    # The Service selects leaders; the generator talks to each leader by its stable name.
    svc = objs["Service/kimi-k25-h100-server"]
    assert svc["spec"]["selector"][names.ROLE_LABEL] == "leader"
    assert lwt["leaderTemplate"]["metadata"]["labels"][names.ROLE_LABEL] == "leader"
    assert lwt["workerTemplate"]["metadata"]["labels"][names.ROLE_LABEL] == "worker"
    gen = objs["Job/kimi-k25-h100-generator"]["spec"]["template"]["spec"]["containers"][0]
    assert _flag(gen["args"], "--server") == (
        "http://kimi-k25-h100-server-0-0.kimi-k25-h100-server-0.drafters.svc:30000"
    )
    # The group's pods reach each other on every port (dist-init, NCCL).
    policy = objs["NetworkPolicy/kimi-k25-h100-server"]
    assert {
        "from": [{"podSelector": {"matchLabels": names.selector("kimi-k25-h100", "server")}}]
    } in (policy["spec"]["ingress"])


def test_every_node_of_a_group_gets_the_attention_layout() -> None:
    lwt = _render(_variants()["dp-attention"])["LeaderWorkerSet/kimi-k25-h100-server-0"]
    lwt = lwt["spec"]["leaderWorkerTemplate"]
    for args in (_args(lwt["leaderTemplate"]), _args(lwt["workerTemplate"])):
        # 16 GPUs over two nodes: 8 attention groups of 2, each striping KV over its 2 GPUs.
        assert _flag(args, "--tp-size") == "16"
        assert _flag(args, "--attn-dp-size") == "8"
        assert _flag(args, "--dcp-size") == "2"
        assert all(a in OPTIONS for a in args if a.startswith("--"))


def test_host_network_and_replicas() -> None:
    objs = _render(_variants()["four-nodes-two-replicas"])
    groups = [o for o in objs.values() if o["kind"] == "LeaderWorkerSet"]
    assert [g["metadata"]["name"] for g in groups] == [
        "kimi-k25-h100-server-0",
        "kimi-k25-h100-server-1",
    ]
    for g in groups:
        lwt = g["spec"]["leaderWorkerTemplate"]
        assert lwt["size"] == 4
        for t in (lwt["leaderTemplate"], lwt["workerTemplate"]):
            assert t["spec"]["hostNetwork"] is True
            assert t["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    gen = objs["Job/kimi-k25-h100-generator"]["spec"]["template"]["spec"]["containers"][0]
    servers = [gen["args"][i + 1] for i, a in enumerate(gen["args"]) if a == "--server"]
    assert servers == [
        f"http://kimi-k25-h100-server-{n}-0.kimi-k25-h100-server-{n}.drafters.svc:30000"
        for n in (0, 1)
    ]


def test_a_server_edit_changes_the_group_hash_and_suspension_scales_to_zero() -> None:
    spec = parse_spec(_h100()["spec"], name="kimi-k25-h100")
    settings = OperatorSettings()
    one = lws.leader_worker_set(spec, "kimi-k25-h100", "drafters", 0, settings)
    again = lws.leader_worker_set(spec, "kimi-k25-h100", "drafters", 0, settings, running=False)
    assert again["spec"]["replicas"] == 0
    h = names.SERVER_HASH_ANNOTATION
    assert one["metadata"]["annotations"][h] == again["metadata"]["annotations"][h]
    raw = _h100()["spec"]
    raw["server"]["memFractionStatic"] = 0.85
    edited = lws.leader_worker_set(
        parse_spec(raw, name="x"), "kimi-k25-h100", "drafters", 0, settings
    )
    assert edited["metadata"]["annotations"][h] != one["metadata"]["annotations"][h]


def test_single_node_jobs_keep_their_deployments() -> None:
    raw = yaml.safe_load((REPO / "examples" / "kimi-k2.5.yaml").read_text())
    kinds = {o["kind"] for o in _render(raw).values()}
    assert "Deployment" in kinds and "LeaderWorkerSet" not in kinds
    svc = _render(raw)["Service/kimi-k25-eagle3-server"]
    assert names.ROLE_LABEL not in svc["spec"]["selector"]


@pytest.mark.parametrize(
    ("server", "field", "fix"),
    [
        (
            {"nodesPerReplica": 2, "tensorParallelSize": 8, "gpusPerNode": 8},
            "tensorParallelSize",
            "16",
        ),
        ({"nodesPerReplica": 2, "tensorParallelSize": 15}, "tensorParallelSize", "gpusPerNode"),
        (
            {"nodesPerReplica": 2, "tensorParallelSize": 16, "gpusPerReplica": 8},
            "gpusPerReplica",
            "gpusPerNode",
        ),
        ({"gpusPerNode": 8}, "gpusPerNode", "nodesPerReplica"),
        ({"hostNetwork": True}, "hostNetwork", "nodesPerReplica"),
        ({"rdma": True}, "rdma", "nodesPerReplica"),
        (
            {"nodesPerReplica": 2, "tensorParallelSize": 16, "extraArgs": ["--pp-size", "2"]},
            "extraArgs",
            "--pp-size",
        ),
        (
            {"nodesPerReplica": 2, "tensorParallelSize": 16, "extraArgs": ["--node-rank=1"]},
            "nodesPerReplica",
            "remove",
        ),
        ({"nodesPerReplica": 17, "tensorParallelSize": 17}, "nodesPerReplica", "16"),
    ],
)
def test_multi_node_spec_errors_name_the_field_and_the_fix(
    server: dict, field: str, fix: str
) -> None:
    raw = _h100()["spec"]
    for key in ("nodesPerReplica", "gpusPerNode", "tensorParallelSize", "rdma", "resources"):
        raw["server"].pop(key)
    raw["server"]["hierarchicalCache"] = {"enabled": False}
    raw["server"].update(server)
    with pytest.raises(SpecError) as err:
        parse_spec(raw, name="x")
    text = "; ".join(err.value.problems)
    assert field in text and fix in text, text


def test_operator_default_gpus_per_replica_does_not_break_a_multi_node_job() -> None:
    settings = OperatorSettings(server_gpus_per_replica=8)
    objs = _render(_h100(), settings)
    assert "LeaderWorkerSet/kimi-k25-h100-server-0" in objs
