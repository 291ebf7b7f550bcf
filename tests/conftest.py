"""Shared fixtures: the project kernel, and a throwaway project root for runner tests."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.fixture(scope="session", autouse=True)
def project_kernel():
    """Make sure the 'mlmlib' Jupyter kernel exists (make does this; plain pytest may not)."""
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("mlmlib")
    except NoSuchKernel:
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix",
                        "--name", "mlmlib"], check=True, capture_output=True)
