"""Instances that run in their own container image: the private Docker engine and harness image of the sandbox
tests (one engine per test run, so these tests share its serial group: tests/conftest.py SERIAL_PATHS)."""

from tests.sandboxes.conftest import docker_engine, docker_image  # noqa: F401 - fixtures reused here
