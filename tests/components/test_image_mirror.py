"""Images: the Docker Hub mirror, the optional derived image, and what every container of a stack pulls.

Guards against: services pulling an unpinned tag or straight from Docker Hub (rate limits, a different
build on every deploy), a derived image built on preview (a preview must not need Docker), and the
registry credential showing up in the plan.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from components.derived_image import REGISTRY_USER
from components.image_mirror import ImageMirror, ImageMirrorArgs
from policy.image_pins import image_pin_problem
from preview.capture import Capture
from preview.render import COMPUTED, SECRET_MASK, clean, plan_document
from serving.collectors import RUN_GMP_SIDECAR_IMAGE
from serving.images import docker_hub_path
from tests.cloud_run_instance import vllm_container
from tests.conftest import render_stack

REPOSITORY = "gcp:artifactregistry/repository:Repository"
SERVICE = "gcp:cloudrunv2/service:Service"
JOB = "gcp:cloudrunv2/job:Job"
DOCKER_IMAGE = "docker:index/image:Image"
REGIONS = {"l4": "us-east4", "rtx6000": "us-central1"}


@pytest.mark.parametrize(
    ("image", "inside"),
    [
        ("vllm/vllm-openai:v0.32.0", "vllm/vllm-openai:v0.32.0"),
        ("docker.io/vllm/vllm-tpu:v0.32.0", "vllm/vllm-tpu:v0.32.0"),
        ("python:3.12-slim", "library/python:3.12-slim"),
        ("vllm/vllm-openai@sha256:" + "a" * 64, "vllm/vllm-openai@sha256:" + "a" * 64),
        ("ghcr.io/org/image:1.0", None),
        ("us-docker.pkg.dev/p/r/vllm:1", None),
        ("registry.local:5000/vllm/vllm-openai:v0.32.0", None),
    ],
)
def test_docker_hub_path(image: str, inside: str | None) -> None:
    """Only Docker Hub images go through the mirror; official images live under library/."""
    assert docker_hub_path(image) == inside


def test_mirror_is_a_docker_hub_remote_repository(register: Callable[[Callable[[], object]], Capture]) -> None:
    """A mirror that is not a Docker Hub remote (or that grants readers unasked) would pull across the internet or
    widen access; a non-Docker-Hub image is never rewritten to it."""
    mirrors: list[ImageMirror] = []
    capture = register(
        lambda: mirrors.append(
            ImageMirror("m", ImageMirrorArgs(project="p", region="us-east4", repository_id="gemma-l4-dockerhub"))
        )
    )
    repo = clean(capture.one(REPOSITORY).inputs)
    assert repo["mode"] == "REMOTE_REPOSITORY"
    assert repo["format"] == "DOCKER"
    assert repo["location"] == "us-east4"
    assert repo["remoteRepositoryConfig"]["dockerRepository"]["publicRepository"] == "DOCKER_HUB"
    assert repo["cleanupPolicies"][0]["condition"]["tagState"] == "UNTAGGED"
    # Cloud Run pulls with its service agent: nobody is granted anything by default.
    assert not capture.of_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    with pytest.raises(ValueError, match="not a Docker Hub image"):
        mirrors[0].image("ghcr.io/org/image:1.0")


def test_mirror_readers_get_reader_only(register: Callable[[Callable[[], object]], Capture]) -> None:
    """An identity that pulls by itself (a TPU VM) gets artifactregistry.reader on this repository only."""
    member = "serviceAccount:tpu@p.iam.gserviceaccount.com"
    capture = register(
        lambda: ImageMirror(
            "m", ImageMirrorArgs(project="p", region="us-east5", repository_id="r", readers={"tpu": member})
        )
    )
    (binding,) = capture.of_type("gcp:artifactregistry/repositoryIamMember:RepositoryIamMember")
    assert binding.inputs["role"] == "roles/artifactregistry.reader"
    assert binding.inputs["member"] == member
    assert binding.inputs["repository"] == "r"


def test_mirror_args_refuse_bad_repository_id() -> None:
    """A repository id Artifact Registry refuses fails at construction, naming the field, not on `pulumi up`."""
    with pytest.raises(ValueError, match="repository_id 'Gemma_Repo'"):
        ImageMirrorArgs(project="p", region="us-east4", repository_id="Gemma_Repo")


@pytest.fixture(scope="module", params=sorted(REGIONS))
def stack(request: pytest.FixtureRequest) -> tuple[str, Capture]:
    name: str = request.param
    return name, render_stack(name)


def test_every_container_pulls_a_pinned_image_through_the_regional_mirror(stack: tuple[str, Capture]) -> None:
    """The service's vLLM container and each import job run the pinned vLLM tag, from the mirror in the stack's
    region (the metrics sidecar is Google's Artifact Registry image, pinned, not on Docker Hub)."""
    name, capture = stack
    templates = [clean(r.inputs)["template"] for r in capture.of_type(SERVICE)]
    images = [vllm_container(template)["image"] for template in templates]
    sidecars = [c["image"] for template in templates for c in template["containers"] if c["name"] != "vllm"]
    assert sidecars == [RUN_GMP_SIDECAR_IMAGE]
    assert image_pin_problem(RUN_GMP_SIDECAR_IMAGE) is None
    images += [c["image"] for r in capture.of_type(JOB) for c in clean(r.inputs)["template"]["template"]["containers"]]
    assert len(images) >= 2
    mirror = f"{REGIONS[name]}-docker.pkg.dev/offline-placeholder-project/gemma-{name}-dockerhub/"
    for image in images:
        assert image_pin_problem(image) is None, image
        assert image == mirror + "vllm/vllm-openai:v0.32.0"
    assert capture.outputs["image"] == mirror + "vllm/vllm-openai:v0.32.0"


def test_mirror_off_pulls_the_pinned_tag_directly() -> None:
    """With mirrorDockerHub false no mirror is made and the service still runs the pinned tag, not rewritten."""
    capture = render_stack("l4", {"gemma-serving:registry": json.dumps({"mirrorDockerHub": False})})
    assert not capture.of_type(REPOSITORY)
    container = vllm_container(clean(capture.one(SERVICE).inputs)["template"])
    assert container["image"] == "vllm/vllm-openai:v0.32.0"


def test_derived_image_is_declared_not_built_on_preview_and_run_by_digest() -> None:
    """A build context in the stack adds a standard repository and a docker.Image: never built on preview,
    pushed with a short-lived token (masked), based on the mirrored pin; the service runs its digest."""
    build = {"context": "images/vllm-gemma", "tag": "v0.32.0-gemma1"}
    capture = render_stack("l4", {"gemma-serving:registry": json.dumps({"build": build})})
    image = capture.one(DOCKER_IMAGE).inputs
    assert image["buildOnPreview"] is False
    assert image["imageName"] == (
        "us-east4-docker.pkg.dev/offline-placeholder-project/gemma-l4-images/vllm-gemma:v0.32.0-gemma1"
    )
    assert image["build"]["context"] == "images/vllm-gemma"
    assert image["build"]["args"]["BASE_IMAGE"].endswith("/gemma-l4-dockerhub/vllm/vllm-openai:v0.32.0")
    # The registry block carries the access token, so the engine receives all of it as a secret.
    assert clean(image["registry"]) == SECRET_MASK
    registry = image["registry"]["value"]
    assert registry["username"] == REGISTRY_USER
    assert registry["server"] == "us-east4-docker.pkg.dev"
    standard = [
        clean(r.inputs) for r in capture.of_type(REPOSITORY) if clean(r.inputs)["mode"] == "STANDARD_REPOSITORY"
    ]
    assert [r["dockerConfig"]["immutableTags"] for r in standard] == [True]
    container = vllm_container(capture.one(SERVICE).inputs["template"])
    assert clean(container["image"]) == COMPUTED  # the repo digest, known after the build
    document = json.dumps(plan_document(capture, stack="l4", project="gemma-serving", notes=[]))
    assert "offline-preview-no-token" not in document
    assert COMPUTED in document


def test_build_context_must_exist_in_the_repository() -> None:
    """A registry.build context without its Dockerfile fails the preview with the key, not the build on `pulumi up`."""
    with pytest.raises(ValueError, match=r"registry.build: no Dockerfile in images/nope/"):
        render_stack("l4", {"gemma-serving:registry": json.dumps({"build": {"context": "images/nope", "tag": "v1"}})})
