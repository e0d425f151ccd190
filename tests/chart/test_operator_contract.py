"""The chart and the operator agree: every environment variable the chart sets is a field of
draftgen.controller.settings.OperatorSettings with the value from values.yaml; GenerationJobs
declared in values become the servers their `replicas` and GPUs ask for; the PodMonitors select
the pods the operator creates, on ports those pods have; the alerts name its container."""

from __future__ import annotations

import dataclasses

import kubernetes_validate
import pytest
import yaml

from draftgen.controller import names
from draftgen.controller import render as render_mod
from draftgen.controller import settings as settings_mod
from draftgen.controller.settings import OperatorSettings

from .rendering import CHART, of_kind, one, render
from .values_cases import full_values, kimi_job


def _operator_env(docs) -> dict[str, str]:
    container = one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def _settings(docs):
    return OperatorSettings.from_env(_operator_env(docs))


@pytest.mark.parametrize("case", ["defaults", "full"])
def test_every_chart_variable_is_an_operator_setting(case):
    env = _operator_env(render(full_values() if case == "full" else {}))
    fields = {
        settings_mod.ENV_PREFIX + f.name.upper() for f in dataclasses.fields(OperatorSettings)
    }
    ours = {k for k in env if k.startswith("DRAFTGEN_")}
    assert ours - fields == set(), "the chart sets variables the operator does not read"


def test_default_values_reach_the_operator():
    s = _settings(render())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert s.namespaces == ()
    assert s.peering_name == "dg-draftgen"
    assert s.server_image == values["serverDefaults"]["image"]
    assert s.server_tensor_parallel_size == values["serverDefaults"]["tensorParallelSize"]
    assert s.server_gpus_per_replica is None  # inherit tensorParallelSize
    assert s.server_mem_fraction_static == values["serverDefaults"]["memFractionStatic"]
    assert s.generator_image == "ghcr.io/draftgen/draftgen:0.1.0"  # the operator's own image
    assert s.run_as_user == 10001  # the image's user
    assert (s.metrics_port, s.liveness_port) == (
        values["operator"]["metricsPort"],
        values["operator"]["livenessPort"],
    )
    assert s.webhook is False
    assert s.handler_threads == values["operator"]["handlerThreads"] == 32
    assert s.stuck_pod_seconds == values["operator"]["stuckPodSeconds"] == 1800
    # No policy by default (everything allowed); the operator's namespace for the NetworkPolicy.
    assert (s.allowed_image_prefixes, s.allowed_claims, s.allowed_secrets, s.secret_label) == (
        (),
        (),
        (),
        "",
    )
    assert (s.operator_namespace, s.monitoring_namespace) == ("draftgen", "")


def test_non_default_values_reach_the_operator():
    s = _settings(render(full_values()))
    assert s.namespaces == ("drafters", "research")
    assert s.peering_name == "drafts-peering"
    assert (
        s.server_image,
        s.server_tensor_parallel_size,
        s.server_gpus_per_replica,
        s.server_mem_fraction_static,
    ) == ("lmsysorg/sglang:v0.5.6-cu129", 4, 8, 0.88)
    assert s.generator_image == "registry.example.com/ml/draftgen-generator:1.2.3"
    assert (
        s.metrics_port,
        s.liveness_port,
        s.poll_interval_seconds,
        s.http_timeout_seconds,
        s.handler_threads,
        s.crash_loop_restarts,
        s.server_startup_seconds,
        s.run_as_user,
    ) == (9100, 9101, 5.0, 2.5, 64, 5, 5400, 20000)
    assert s.webhook is True and s.webhook_port == 8443
    assert s.webhook_host == "drafts-webhook.draftgen.svc"
    assert s.webhook_certfile and s.webhook_pkeyfile
    # Registered as a `service:` clientConfig on the Service's port, not the container's.
    assert (s.webhook_service_name, s.webhook_service_namespace) == ("drafts-webhook", "draftgen")
    assert s.allowed_image_prefixes == ("lmsysorg/sglang:", "registry.example.com/ml/")
    assert s.allowed_claims == ("models", "datasets", "drafter-*")
    assert s.allowed_secrets == ("hf-token",)
    assert s.secret_label == "draftgen.io/usable=true"
    assert (s.operator_namespace, s.monitoring_namespace) == ("draftgen", "monitoring")


def test_servers_in_the_pod_listen_where_they_are_reached():
    """Defaults: loopback for an operator run by hand (tests/operator/test_bind_addresses.py);
    in the pod Prometheus, the kubelet and the API server connect to the pod IP."""
    plain = OperatorSettings()
    assert (plain.metrics_address, plain.liveness_address, plain.webhook_address) == (
        "127.0.0.1",
        "127.0.0.1",
        "127.0.0.1",
    )
    s = _settings(render(full_values()))
    assert (s.metrics_address, s.liveness_address, s.webhook_address) == (
        "0.0.0.0",
        "0.0.0.0",
        "0.0.0.0",
    )
    s = _settings(
        render(
            {
                "operator": {
                    "metricsAddress": "127.0.0.1",
                    "livenessAddress": "::",
                    "webhook": {"enabled": True, "certSecret": "t", "address": "10.0.0.7"},
                }
            }
        )
    )
    assert (s.metrics_address, s.liveness_address, s.webhook_address) == (
        "127.0.0.1",
        "::",
        "10.0.0.7",
    )


def test_peering_object_is_the_one_the_operator_joins():
    docs = render()
    assert one(docs, "ClusterKopfPeering")["metadata"]["name"] == _settings(docs).peering_name
    docs = render(full_values())
    peerings = of_kind(docs, "KopfPeering")
    assert {p["metadata"]["namespace"] for p in peerings} == set(_settings(docs).namespaces)
    assert {p["metadata"]["name"] for p in peerings} == {_settings(docs).peering_name}
    pod_id = next(
        e
        for e in one(docs, "Deployment")["spec"]["template"]["spec"]["containers"][0]["env"]
        if e["name"] == "POD_ID"
    )
    assert pod_id["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


def _operator_objects(job_doc, settings):
    return render_mod.render_all(
        job_doc["metadata"]["name"], job_doc["metadata"]["namespace"], job_doc["spec"], settings
    )


def test_jobs_declared_in_values_scale_as_values_say():
    docs = render(full_values())
    settings = _settings(docs)
    jobs = {j["metadata"]["name"]: j for j in of_kind(docs, "GenerationJob")}
    assert set(jobs) == {"kimi-k25-eagle3", "kimi-k25-scaled"}
    assert jobs["kimi-k25-scaled"]["metadata"]["namespace"] == "drafters"
    assert jobs["kimi-k25-scaled"]["metadata"]["labels"]["team"] == "drafters"
    for name, replicas in (("kimi-k25-eagle3", 1), ("kimi-k25-scaled", 3)):
        objects = _operator_objects(jobs[name], settings)
        servers = of_kind(objects, "Deployment")
        assert len(servers) == replicas
        for server in servers:
            container = server["spec"]["template"]["spec"]["containers"][0]
            assert container["resources"]["limits"]["nvidia.com/gpu"] in (8, "8")
            # The job's own tensorParallelSize (8) wins over the chart default (4).
            assert "8" in container["args"][container["args"].index("--tp-size") + 1]
        for obj in objects:
            kubernetes_validate.validate(obj, "1.30", strict=True)


def test_jobs_inherit_chart_defaults_for_fields_they_leave_unset():
    values = full_values()
    job = kimi_job()
    server = {
        k: v
        for k, v in job["spec"]["server"].items()
        if k not in ("tensorParallelSize", "memFractionStatic")
    }
    job["spec"] = {**job["spec"], "server": {**server, "hierarchicalCache": {"enabled": False}}}
    values["generationJobs"] = [job]
    docs = render(values)
    objects = _operator_objects(one(docs, "GenerationJob"), _settings(docs))
    container = one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[args.index("--tp-size") + 1] == "4"
    assert args[args.index("--mem-fraction-static") + 1] == "0.88"
    assert container["image"] == "lmsysorg/sglang:v0.5.6-cu129"


def _pod_template(obj):
    return obj["spec"]["template"]


def test_pod_monitors_select_the_operator_pods_on_their_metrics_ports():
    docs = render(full_values())
    monitors = {m["metadata"]["name"]: m for m in of_kind(docs, "PodMonitor")}
    job = one(
        [j for j in of_kind(docs, "GenerationJob") if j["metadata"]["name"] == "kimi-k25-eagle3"],
        "GenerationJob",
    )
    objects = _operator_objects(job, _settings(docs))
    pods = {
        "sglang": _pod_template(one(objects, "Deployment")),
        "generator": _pod_template(
            one([o for o in objects if o["metadata"]["name"].endswith("-generator")], "Job")
        ),
    }
    for component, pod in pods.items():
        monitor = monitors[f"drafts-{component}"]["spec"]
        labels = pod["metadata"]["labels"]
        assert monitor["selector"]["matchLabels"].items() <= labels.items(), component
        endpoint = monitor["podMetricsEndpoints"][0]
        ports = {p["name"] for c in pod["spec"]["containers"] for p in c.get("ports", [])}
        assert endpoint["port"] in ports, component
        source = endpoint["relabelings"][1]["sourceLabels"][0]
        assert source == "__meta_kubernetes_pod_label_" + names.JOB_LABEL.replace(".", "_").replace(
            "/", "_"
        ).replace("-", "_")
        assert labels[names.JOB_LABEL] == "kimi-k25-eagle3"
    # Only the server pods, not the generator, are selected by the SGLang monitor (and back).
    other = monitors["drafts-sglang"]["spec"]["selector"]["matchLabels"]
    assert not other.items() <= pods["generator"]["metadata"]["labels"].items()


def test_alerts_name_the_operator_containers():
    alerts = (CHART / "files" / "alerts.yaml").read_text()
    assert f'container="{names.SERVER_CONTAINER}"' in alerts


@pytest.mark.parametrize("service_port", [None, 8443])
def test_the_webhook_is_registered_on_the_port_its_service_listens_on(service_port):
    webhook = {"enabled": True, "certSecret": "t"}
    if service_port:
        webhook["servicePort"] = service_port
    docs = render({"operator": {"webhook": webhook}})
    s = _settings(docs)
    (service,) = [d for d in of_kind(docs, "Service") if d["metadata"]["name"].endswith("-webhook")]
    assert service["metadata"]["name"] == s.webhook_service_name
    assert service["metadata"]["namespace"] == s.webhook_service_namespace
    assert service["spec"]["ports"][0]["port"] == s.webhook_service_port == (service_port or 443)
    assert service["spec"]["ports"][0]["targetPort"] == "webhook"
