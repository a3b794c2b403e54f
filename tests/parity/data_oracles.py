"""Shared pieces of the data_prep parity tests: the real BERT uncased vocabulary and the reference
(Google BERT / MLPerf) Python code with a stand-in for the TensorFlow I/O it imports.

The vocabulary comes from the `blingfire` PyPI package, which ships bert-base-uncased's 30,522
tokens as `bert_base_tok.i2w` (an id -> word table: word-initial pieces carry a leading space,
continuations do not, special tokens are lower-cased). It is turned back into vocab.txt and accepted
only if its MD5 is that of the published bert-base-uncased vocab.txt.
"""
import hashlib
import os
import re
import struct
import sys
import types

BERT_UNCASED_VOCAB_MD5 = "64800d5d8528ce344256daf115d4965e"  # 231,508 bytes, 30,522 lines


class Skip(Exception):
    """An oracle is not installed: the test reports itself skipped (exit 77)."""


def project_binary():
    """MLBERT_BIN, the project's own binary, or None after printing FAILED: a missing project
    binary fails a parity test (exit 1); only a missing oracle skips it."""
    binary = os.environ.get("MLBERT_BIN")
    if not binary or not os.path.exists(binary):
        print(f"FAILED: MLBERT_BIN does not name the mlbert binary ({binary!r})")
        return None
    return binary


def bert_uncased_vocab(dest_dir):
    """Writes vocab.txt into dest_dir and returns its path."""
    try:
        import blingfire  # noqa: F401
    except ImportError as e:
        raise Skip(f"blingfire is not installed ({e}); pip install -r tests/parity/requirements.txt")
    import blingfire
    i2w = os.path.join(os.path.dirname(blingfire.__file__), "bert_base_tok.i2w")
    data = open(i2w, "rb").read()
    count = struct.unpack_from("<I", data, 0x60)[0]
    offsets = struct.unpack_from("<%dI" % (count + 1), data, 0x64)
    base = 0x64 + 4 * (count + 1)
    words = []
    for i in range(count):
        w = data[base + offsets[i]:base + offsets[i + 1]].rstrip(b"\0").decode("utf-8")
        if w.startswith(" "):
            w = w[1:]
            if re.fullmatch(r"\[(pad|unk|cls|sep|mask|unused\d+)\]", w):
                w = w.upper().replace("UNUSED", "unused")
        else:
            w = "##" + w
        words.append(w)
    text = ("\n".join(words) + "\n").encode("utf-8")
    digest = hashlib.md5(text).hexdigest()
    if digest != BERT_UNCASED_VOCAB_MD5:
        raise RuntimeError(f"reconstructed vocab.txt has md5 {digest}, expected "
                           f"{BERT_UNCASED_VOCAB_MD5}: the blingfire table changed")
    path = os.path.join(dest_dir, "vocab.txt")
    with open(path, "wb") as f:
        f.write(text)
    return path


def reference_modules():
    """Imports bert-tensorflow's tokenization and create_pretraining_data (Google's code, the same
    algorithm as MLPerf's cleanup_scripts copy) with a minimal `tensorflow.compat.v1` stand-in:
    flags from absl, gfile.GFile = text file split on '\\n' only (as TF's GFile.readline)."""
    try:
        from absl import flags as absl_flags
        import bert  # noqa: F401
    except ImportError as e:
        raise Skip(f"reference oracle missing ({e}); pip install -r tests/parity/requirements.txt")

    class GFile:
        def __init__(self, path, mode="r"):
            self._f = open(path, mode, encoding="utf-8", newline="\n")

        def __enter__(self):
            return self._f

        def __exit__(self, *exc):
            self._f.close()

    v1 = types.ModuleType("tensorflow.compat.v1")
    v1.flags = absl_flags
    v1.gfile = types.SimpleNamespace(GFile=GFile, Glob=lambda p: [p])
    v1.logging = types.SimpleNamespace(info=lambda *a, **k: None, set_verbosity=lambda *a: None,
                                       INFO=0)
    tf = types.ModuleType("tensorflow")
    compat = types.ModuleType("tensorflow.compat")
    compat.v1 = v1
    tf.compat = compat
    sys.modules.setdefault("tensorflow", tf)
    sys.modules.setdefault("tensorflow.compat", compat)
    sys.modules.setdefault("tensorflow.compat.v1", v1)
    from bert import tokenization, create_pretraining_data
    if not absl_flags.FLAGS.is_parsed():
        absl_flags.FLAGS(["parity"])
    return tokenization, create_pretraining_data
