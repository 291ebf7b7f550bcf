"""Peak memory of packing a corpus for paper-scale pretraining (paper B's OpenWebText).

    python scripts/pack_memory.py --mb 1024                  # 1 GB of text, the 8k vocabulary
    python scripts/pack_memory.py --mb 1024 --tokenizer minilm-l6   # bert-base-uncased's

Builds a corpus of --mb megabytes of raw text (documents of 20 embedded English sentences,
drawn with a seed) as an on-disk Dataset, the form a hub corpus has, then packs it with
`pack_texts` in a fresh process and reports the growth of that process's memory while
packing: peak resident memory (VmHWM) and peak anonymous memory (RssAnon, sampled every
50 ms; it leaves out the corpus file's pages, which the kernel maps in as they are read and
can drop at any time), plus the packed size and the time taken.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def build_corpus(folder: Path, mb: int, seed: int) -> None:
    """Documents of 20 random embedded sentences up to `mb` MiB, saved as a DatasetDict would be."""
    import datasets
    import numpy as np

    from mlmlib.data import load_corpus

    datasets.disable_progress_bars()
    sentences = list(load_corpus("embedded-english")["train"]["text"])
    rng = np.random.default_rng(seed)
    docs, size = [], 0
    while size < mb * 2**20:
        picks = rng.integers(0, len(sentences), (10000, 20))
        block = [" ".join(sentences[i] for i in row) for row in picks]
        docs += block
        size += sum(len(d.encode()) for d in block)
    datasets.Dataset.from_dict({"text": docs}).save_to_disk(folder / "corpus")


def measure(folder: Path, tokenizer_name: str, max_length: int) -> dict:
    import datasets
    from datasets import load_from_disk

    from mlmlib.papers.true_negatives import corpus
    from mlmlib.tokenize import load_tokenizer

    datasets.disable_progress_bars()
    tokenizer = load_tokenizer(tokenizer_name)
    texts = load_from_disk(str(folder / "corpus"))
    tokenizer(["warm up the tokenizer"])
    base = {"VmHWM": status_kb("VmHWM"), "RssAnon": status_kb("RssAnon")}
    peak_anon, done = [base["RssAnon"]], threading.Event()

    def sample():
        while not done.wait(0.05):
            peak_anon[0] = max(peak_anon[0], status_kb("RssAnon"))

    threading.Thread(target=sample, daemon=True).start()
    t0 = time.perf_counter()
    rows = corpus.pack_texts(tokenizer, texts, max_length, folder / "packed.int32")
    seconds, hwm = time.perf_counter() - t0, status_kb("VmHWM")
    done.set()
    raw = sum(len(t.encode()) for batch in texts.iter(batch_size=10000) for t in batch["text"])
    return {"raw_text_mb": raw / 2**20, "texts": len(texts), "rows": rows,
            "tokens": rows * (max_length - 2), "packed_mb": (folder / "packed.int32").stat().st_size / 2**20,
            "seconds": seconds, "peak_rss_growth_mb": (hwm - base["VmHWM"]) / 1024,
            "peak_anon_growth_mb": (peak_anon[0] - base["RssAnon"]) / 1024,
            "tokenizer": tokenizer_name, "max_length": max_length}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=1024, help="raw text to pack, in MiB")
    parser.add_argument("--tokenizer", default="embedded-wordpiece-8k")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", help="work folder (default: a temporary one, removed)")
    parser.add_argument("--measure-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure_only:  # the fresh process: its memory is the packing's alone
        print(json.dumps(measure(Path(args.folder), args.tokenizer, args.max_length)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.folder or tmp)
        if not (folder / "corpus").exists():
            build_corpus(folder, args.mb, args.seed)
        out = subprocess.run([sys.executable, __file__, "--measure-only", "--folder", str(folder),
                              "--tokenizer", args.tokenizer, "--max-length", str(args.max_length)],
                             check=True, capture_output=True, text=True).stdout
        result = json.loads(out.strip().splitlines()[-1])
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
