"""Shared fixtures: the project kernel, and a throwaway project root for runner tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest


def pytest_configure(config):
    """Under `pytest -n 2` (make test) each worker trains on one torch thread: two workers with
    two threads each on two cores stall one another. The batches tests start set their own."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        import torch

        torch.set_num_threads(1)


@pytest.fixture(scope="session", autouse=True)
def project_kernel():
    """Make sure the 'mlmlib' Jupyter kernel exists (make does this; plain pytest may not)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("mlmlib")
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix",
                        "--name", "mlmlib"], check=True, capture_output=True)


@pytest.fixture
def no_network(monkeypatch):
    """Any connection attempt is recorded and refused; a test asserts the record stays empty."""
    from mlmlib.data import hub

    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("the network is off in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(hub, "_reachable", {})  # no probe result from an earlier test stands in
    return attempts


@pytest.fixture
def mirrored(root, monkeypatch, no_network):
    """Hub loaders read the mirror at the test module's `root` fixture, with the network off."""
    from mlmlib.data import hub

    monkeypatch.setenv(hub.MIRROR_ENV, str(root))
    return no_network


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A private cache folder, so tests never see (or leave) real pretrained models."""
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    return tmp_path
