"""Downloads of one resource run one at a time across processes and threads (a file lock per
resource): jobs of a sweep starting together do not race a half-written copy."""

from __future__ import annotations

import sys
import threading
import time
import types

from mlmlib.data import hub, vectors


def test_two_downloads_of_one_vector_set_never_overlap(monkeypatch, tmp_path):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    monkeypatch.setattr(hub, "offline_by_env", lambda: False)
    monkeypatch.setattr(hub, "host_reachable", lambda *a, **k: True)
    events = []

    def load(name):
        events.append(("start", name))
        time.sleep(0.2)  # long enough for the other thread to arrive while this one downloads
        events.append(("end", name))
        return name

    fake = types.ModuleType("gensim.downloader")
    fake.load = load
    monkeypatch.setitem(sys.modules, "gensim.downloader", fake)
    package = types.ModuleType("gensim")
    package.downloader = fake
    monkeypatch.setitem(sys.modules, "gensim", package)
    got = []
    threads = [threading.Thread(target=lambda: got.append(vectors.download_gensim("glove-x")))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == ["glove-x", "glove-x"]
    assert [e[0] for e in events] == ["start", "end", "start", "end"], events
    assert (tmp_path / "download-locks" / "vectors-glove-x.lock").exists()


def test_the_lock_is_per_resource(monkeypatch, tmp_path):
    monkeypatch.setenv("MLMLIB_WORK", str(tmp_path))
    with hub.download_lock("dataset", "a/b-None"):
        with hub.download_lock("model", "bert-base-uncased"):  # another resource: no wait
            pass
    assert sorted(p.name for p in (tmp_path / "download-locks").iterdir()) == [
        "dataset-a_b-None.lock", "model-bert-base-uncased.lock"]
