"""What a container of a pod would see, built from the pod and the ConfigMaps and Secrets it names (pure).

The kubelet resolves a container's environment (`env` values, `valueFrom` ConfigMap and Secret keys and
pod fields, `envFrom` with its prefix; `env` wins over `envFrom`) and mounts ConfigMap, Secret and
projected volumes as files (all keys, or the `items` chosen, at `mountPath`, or one key at `subPath`).
A reference the namespace cannot satisfy is left out, as an optional one would be.
"""

from __future__ import annotations

import base64
import binascii
import posixpath
from typing import Any

from oasis_operator.gateway.apis.exec_shell import ContainerView

# A source's data by (kind, name): kind is "configmap" or "secret"; Secret values already decoded.
Sources = dict[tuple[str, str], dict[str, str]]


def container_spec(pod: dict[str, Any], container: str) -> dict[str, Any]:
    """The spec of one container of the pod (regular, init or ephemeral), or {}."""
    spec = pod.get("spec") or {}
    for group in ("containers", "initContainers", "ephemeralContainers"):
        for item in spec.get(group) or []:
            if isinstance(item, dict) and item.get("name") == container:
                return item
    return {}


def _volume_sources(volume: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for key, kind, name_key in (("configMap", "configmap", "name"), ("secret", "secret", "secretName")):
        if isinstance(volume.get(key), dict):
            out.append((kind, {**volume[key], "name": volume[key].get(name_key)}))
    for source in (volume.get("projected") or {}).get("sources") or []:
        for key, kind in (("configMap", "configmap"), ("secret", "secret")):
            if isinstance(source.get(key), dict):
                out.append((kind, source[key]))
    return out


def referenced(pod: dict[str, Any], container: str) -> set[tuple[str, str]]:
    """Every (kind, name) of ConfigMap and Secret the container's environment and mounts read."""
    spec = container_spec(pod, container)
    refs: set[tuple[str, str]] = set()
    for item in spec.get("envFrom") or []:
        for key, kind in (("configMapRef", "configmap"), ("secretRef", "secret")):
            if isinstance(item.get(key), dict) and item[key].get("name"):
                refs.add((kind, str(item[key]["name"])))
    for item in spec.get("env") or []:
        source = item.get("valueFrom") or {}
        for key, kind in (("configMapKeyRef", "configmap"), ("secretKeyRef", "secret")):
            if isinstance(source.get(key), dict) and source[key].get("name"):
                refs.add((kind, str(source[key]["name"])))
    mounted = {m.get("name") for m in spec.get("volumeMounts") or [] if isinstance(m, dict)}
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        if volume.get("name") in mounted:
            refs.update((kind, str(src["name"])) for kind, src in _volume_sources(volume) if src.get("name"))
    return refs


def source_data(kind: str, obj: dict[str, Any]) -> dict[str, str]:
    """The keys of a ConfigMap (data) or Secret (data, decoded; stringData) as text."""
    if kind == "configmap":
        return {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    out = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            out[str(key)] = base64.b64decode(str(value)).decode("utf-8", errors="replace")
        except (binascii.Error, ValueError):
            continue
    out.update({str(k): str(v) for k, v in (obj.get("stringData") or {}).items()})
    return out


def _field(pod: dict[str, Any], path: str) -> str | None:
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
    }
    if path in simple:
        value = simple[path]
        return None if value is None else str(value)
    for prefix, mapping in (("metadata.labels", "labels"), ("metadata.annotations", "annotations")):
        if path.startswith(prefix + "['") and path.endswith("']"):
            value = (meta.get(mapping) or {}).get(path[len(prefix) + 2 : -2])
            return None if value is None else str(value)
    return None


def _env(pod: dict[str, Any], spec: dict[str, Any], sources: Sources) -> list[tuple[str, str]]:
    env: dict[str, str] = {}
    for item in spec.get("envFrom") or []:
        for key, kind in (("configMapRef", "configmap"), ("secretRef", "secret")):
            ref = item.get(key)
            if isinstance(ref, dict):
                data = sources.get((kind, str(ref.get("name"))), {})
                env.update({str(item.get("prefix") or "") + k: v for k, v in data.items()})
    for item in spec.get("env") or []:
        name = item.get("name")
        if not name:
            continue
        if "value" in item or "valueFrom" not in item:
            env[name] = str(item.get("value") or "")
            continue
        source = item.get("valueFrom") or {}
        value: str | None = None
        for key, kind in (("configMapKeyRef", "configmap"), ("secretKeyRef", "secret")):
            ref = source.get(key)
            if isinstance(ref, dict):
                value = sources.get((kind, str(ref.get("name"))), {}).get(str(ref.get("key")))
        if isinstance(source.get("fieldRef"), dict):
            value = _field(pod, str(source["fieldRef"].get("fieldPath")))
        if value is not None:
            env[name] = value
    return list(env.items())


def _files(pod: dict[str, Any], spec: dict[str, Any], sources: Sources) -> dict[str, str]:
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or [] if isinstance(v, dict)}
    files: dict[str, str] = {}
    for mount in spec.get("volumeMounts") or []:
        volume = volumes.get(mount.get("name"))
        if not volume or not mount.get("mountPath"):
            continue
        keys: dict[str, str] = {}  # relative path in the volume -> content
        for kind, src in _volume_sources(volume):
            data = sources.get((kind, str(src.get("name"))), {})
            items = src.get("items")
            if items:
                keys.update(
                    {str(i["path"]): data[i["key"]] for i in items if i.get("key") in data and i.get("path")}
                )
            else:
                keys.update(data)
        root = posixpath.normpath(str(mount["mountPath"]))
        sub = mount.get("subPath")
        if sub:
            if str(sub) in keys:
                files[root] = keys[str(sub)]
            continue
        files.update({posixpath.join(root, rel): text for rel, text in keys.items()})
    return files


def container_view(pod: dict[str, Any], container: str, sources: Sources) -> ContainerView:
    """The container as its process would see it (names as the pod holds them: sandbox names)."""
    spec = container_spec(pod, container)
    hostname = str((pod.get("spec") or {}).get("hostname") or (pod.get("metadata") or {}).get("name") or "")
    return ContainerView(
        hostname=hostname, env=tuple(_env(pod, spec, sources)), files=_files(pod, spec, sources)
    )
