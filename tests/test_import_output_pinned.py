"""What an import writes is pinned, byte for byte: every real sample in tests/data/traces and a
file of each shape bench/import_speed.py times, imported by `agent-tui import` (the transcripts,
stdout and stderr), and the outcome of mutants of each format (the transcript lines, warnings and
errors of what is read, the message of what is refused). A change to what an import produces,
a speed-up that is not only one, fails here; a change meant to alter the output updates the
digests (`python -m tests.test_import_output_pinned` prints them)."""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.import_speed import FORMATS as BENCH_FORMATS
from engine.stored.importers import runs_from_bytes
from engine.stored.transcript import TranscriptError, dump_event
from tests.support.mutation import SOURCES, TRACES, mutant, mutate, small
from tui.cli import main

SAMPLES = sorted(p.name for p in TRACES.iterdir() if p.name != "SOURCES.md")
MUTANTS = 150

PINNED_SAMPLES = {
    'chat_openai_cookbook_toy_chat_fine_tuning.jsonl': 'e4b951f36fa76e301a4c9b5b113136e872f5cc7279d8e5d9303a9f1231d220ec',
    'chat_pydantic_ai_tool_output_exchange.json': '9f94de6ea33f89ac31c45ea0fb66a30c24db98ecdfbf835f09e4de1c0c03a7bb',
    'chat_pydantic_ai_tool_output_request.json': 'df6e9717c89121d61c18ca31e9f94f2dbf07e0f37bf8363138fe65d929450e92',
    'claude_code_1_0_128_inline_task.jsonl': 'a810771defe3ca70301c234c6d0dc653a7916f46df51bbe140b1fa18a6a7953d',
    'claude_code_2_1_197_recorded.jsonl': '7881c57ade1b6195dbfc5b1b5735db1d169764a85724ea193e4a6e7ac8f0a809',
    'claude_code_kvsankar_golden.jsonl': 'fc8cfb7c8fc45a128307e999f987628593bce438e7c6ac89d6a2cdbf1331bc54',
    'claude_code_simonw_sample_session.jsonl': 'eb5b324a969a4440c343894ad3371ddac47715f0a693b39b964c1b61850760cb',
    'claude_code_spotter_subagent_file.jsonl': 'aa31c623c99da21da0590a09fca12f92e1871371fb9493757773ef7068c0d443',
    'claude_code_spotter_task_subagent.jsonl': 'ceb0e748c67e66a53d5accc3ef190e092495caaf2881c4c3e7183e88f464ed8e',
    'codex_kvsankar_golden.jsonl': '2865c327d33eb9618931b682e8b87394f2e0a2ffab97c9950a30fd868e74759d',
    'codex_kvsankar_with_escalation.jsonl': 'c09cddaf5a832574889145863e2dcb4e3a6cb1f06decdd4b82f91a6d46165345',
    'codex_localpush_parallel_calls.jsonl': '286948e594370c151e6f2b6e50427b16a8c81d7427c5cb38f61856e2a4f1dc95',
    'codex_simonw_sample_session.jsonl': '6e2fd65085bfff0eb79f05eed1e4661a4be95c298f5da1e065dbb88b23e8f869',
    'gemini_cli_0_61_0_recorded.jsonl': 'ebbc353d0d153e232d127908845d211210821b2724a912b2f28e7b02e50f721b',
    'inspect_ai_browser_excerpt.json': '91d60288505c4fcd95ce14e8ddca3b540d0fb943b07955d38918ecab0db40e0c',
    'inspect_ai_browser_messages.json': '330532bd8f7ef2dfac3c84479120afb241a3fed0603b7f288c778ca52cc8e76e',
    'inspect_ai_message_deduplication.eval': '4f4015f87b8bd0f762ddbc02c3aa78304d73e072ff1caee3c18535548e80f869',
    'inspect_ai_popularity_excerpt.json': 'f6b3980a454d31034b0ae27586ab96d4d8a6efec838bc76e29b5375d30d5a1c6',
    'inspect_scout_websearch_addition.eval': '97b3180d0f432bb9fb17f1875844f5360f762a4507b52afeae6f8edba165b090',
    'langchain_docs_debugging_verbose.txt': 'd727cff015cb47d65c3c64b11bece7fd25edd58783fe68fcc152251651ab00c3',
    'langchain_pinecone_conversational_agent.txt': '6df74755b4c0d450d9ea960b16859ec51cfcdedb6cae5854a50f6fd87005985f',
    'langchain_pinecone_docstore_agent.txt': '184c3d9762203f7b2217bab894c85cf42103ab6b6f6e5886644c267321191c36',
    'langchain_pinecone_sql_agent_coloured.txt': '87f112f7916e9aae9cc9be3392f96f44555bd674c1cc07079ea09149f3932b50',
    'mini_swe_agent_github_issue.traj.json': '951f335e9ec461e64f883774ae45e4d91ad300b5374ea0e4a62d1e7024badd03',
    'mini_swe_agent_gruckion_django_13670.traj.json': 'd602636fc8619b761d407a5a6f9538a9a8c08e6481cc0f2b7d9a7c9851d98831',
    'mini_swe_agent_local.traj.json': '4556274dc5e02fcbcce112ba054a88e0cb4469a01d8fb195378b9aee1e1058ed',
    'mini_swe_agent_recorded_v2.traj.json': '0c06fda0bb04a44a49069ce6d795dfb10ba57620830f642c10ec2388edac6004',
    'opencode_1_18_33_export.json': 'a7be3400247ef3c9b0e8f7736ed2180fdc5a2a347238951d86ae2709619ad0ec',
    'react_paper_alfworld_put_prompt.txt': '37bdc6c6e161eb9d7471d6f2480ce72a3ac19319e37a2d5cf133e1f50bfc725b',
    'react_paper_fever_webthink_simple3.txt': '7df5c20c3237baceabc4d00ecf7c9ed8417b9f52933a7e04f162f881aba95784',
    'react_paper_hotpotqa_webthink_simple6.txt': 'c4963051bace711fe84738eae7217dcadf4aaf18264cd87bfad64be05a884a1c',
    'react_reflexion_reflections.txt': '559038e5cfca43836caa2d8dff8b55724f46b3b4ca24e2fc11c2f2087285f62f',
    'swe_agent_function_calling_simple.traj': '652372aa4a1f7279c974c87862d2267d36ae1f7277ce920729bd16231452b109',
    'swe_agent_test_repo.traj': '392d18003e543267760e3597868f6953b08df9a44890c45d402aae423b03c8a0',
}

PINNED_BENCH = {
    'alfworld': 'eb87ba5dacca87484fc6ad2f55f9eec08ad5029bf9e149d021942a26e537c747',
    'claude-code': '7ffe58c8084461014ad435b3c4ce6bf7bbdf421de972e490e1b926acf2f30862',
    'claude-code-recorded': '682c6c7eee06c16cd08e1a250f741ef3e51345d0aa876a9febc1078f0f2fc370',
    'codex': 'a97ec03281f23381635658a95ad0b7a04908ce50a8d8d8dd35a06dfdce5e1727',
    'codex-recorded': '19dfaa8acad1135804f8abccd30090218440477645562d2b469b0108157c2e49',
    'gemini-cli': '877f71c19d590a6e69a52501aa9cd3d80e531940dbc0e333f05704c275f46741',
    'gemini-cli-recorded': 'd4be36e203ee3e78ab681c91621c657b8f754f4e7350cf3c49036d67063eb54b',
    'opencode': '2e740567035d9ab55dd4356274d037f6e7ddd5581be95ecb59e2674d41ed818e',
    'react': 'cadeed6d7a7ca0f861a74a0611f1c0ce080971f387c7d6f2e8d63a8fe2ece183',
}

PINNED_MUTANTS = {
    'alfworld': '75f0fb95dac7c681f5cda2236c3c7670917b9619dfea3938a4b93ee11b2d3f55',
    'chat': 'b20badf4d098ab089e3a46ad4db86015b494e2da64afe4ca2c37c868f48931d7',
    'claude-code': 'e8bea3378d26dcf543f3e6559a113d3f1cc92148164e9c50c3681cf07651fa32',
    'codex': '71cbfa15da400690eb8cb794a1bdfeff830caae3d24319ea772415f6eba06e3a',
    'gemini-cli': 'fdc7a2d6f33e554efc9ede7c3075cae1b2cb5fd870f7d50b97c823aff3da19f6',
    'inspect': '8e6ce852c52efe2e09c4d50110b5cf0c02f3b9179464a537abefc017620b0567',
    'langchain': '9927905a04172af77236734eb3d9721fe9ae63a0a168d137ec4fab84d05338e2',
    'mini-swe-agent': 'a17e4a05eef9b59938b1ed0847c2ae8878c7fc84420e1a4541ddfd28590c04e4',
    'opencode': 'b3ff4cbdef9582f6b2cda9b16aa49d7997dc27a7db818107c523acdbb29355cf',
    'react': 'e5a445a2890eb65ebc21b1d028070b9e864a8c320ad4de6367ba8880b6266b69',
    'swe-agent': 'd0efcca907e97e0b9434273de86b386ae07992b53b5c44c19f4e1ba99c3da9a9',
    'trace': '88e43ae3545a2e0c76c3c0ee6b13b472a609d64eec74fba1c0b3cb8810f35e6e',
}


def _import_digest(source: Path, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """sha256 of `agent-tui import SOURCE -o out.jsonl` run in `folder`: its exit code, stdout,
    stderr and every file it wrote (names relative to the folder)."""
    digest = hashlib.sha256()
    capsys.readouterr()
    code = main(["import", source.name, "-o", "out.jsonl"])
    out, err = capsys.readouterr()
    digest.update(f"{code}\n{out}\n{err}\n".encode())
    for path in sorted(folder.glob("out*.jsonl")):
        digest.update(path.name.encode() + b"\n" + path.read_bytes())
    return digest.hexdigest()


def _sample_digest(name: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    source = folder / name
    source.write_bytes((TRACES / name).read_bytes())
    return _import_digest(source, folder, capsys)


def _bench_digest(fmt: str, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    suffix, writer, _, _ = BENCH_FORMATS[fmt]
    source = folder / f"bench{suffix}"
    source.write_text("\n".join(writer(40)) + "\n")
    return _import_digest(source, folder, capsys)


def _mutants_digest(fmt: str) -> str:
    """sha256 of what `runs_from_bytes` makes of MUTANTS mutants of the format's samples (as
    tests/test_fuzz_imports.py makes them): each run's lines as the transcript writer writes
    them, its warnings and errors, or the refusal."""
    rng = random.Random(f"import-pinned-{fmt}")
    name = f"mutant.{fmt}"
    sources = [small((TRACES / f).read_bytes()) for f in SOURCES[fmt]]
    digest = hashlib.sha256()
    for _ in range(MUTANTS):
        data = mutant(fmt, rng.choice(sources), rng, twice=False)
        try:
            runs = runs_from_bytes(name, data)
        except TranscriptError as exc:
            digest.update(f"refused {exc}\n".encode())
            continue
        for run in runs:
            digest.update(f"run {run.warnings} {run.errors}\n".encode())
            digest.update(dump_event(run.header).encode() + b"\n")
            for event in run.events:
                digest.update(dump_event(event).encode() + b"\n")
    return digest.hexdigest()


@pytest.mark.parametrize("name", SAMPLES)
def test_the_import_of_each_real_sample_is_unchanged(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert _sample_digest(name, tmp_path, capsys) == PINNED_SAMPLES[name]


@pytest.mark.parametrize("fmt", sorted(BENCH_FORMATS))
def test_the_import_of_each_bench_shape_is_unchanged(fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert _bench_digest(fmt, tmp_path, capsys) == PINNED_BENCH[fmt]


@pytest.fixture(scope="module")
def mutants_digests() -> dict[str, str]:
    """Every format's `_mutants_digest`, made in a fresh interpreter: what other tests of this
    process left behind reaches none of them. (The Inspect digest once differed in about one run
    in 25: the mutants' zip members carried the clock's time, `tests.support.mutation._member`.)"""
    code = ("import json, sys; from tests.test_import_output_pinned import SOURCES, _mutants_digest; "
            "json.dump({fmt: _mutants_digest(fmt) for fmt in sorted(SOURCES)}, sys.stdout)")
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                          capture_output=True, text=True, timeout=300, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("fmt", sorted(SOURCES))
def test_what_mutants_of_each_format_import_as_is_unchanged(fmt: str, mutants_digests: dict[str, str]) -> None:
    assert mutants_digests[fmt] == PINNED_MUTANTS[fmt]


EDGE_JSON = [
    "1e400", "-1e400", "[1.5E+400]", "1e0308", "1" * 250 + ".5", "-" + "9" * 210 + "e2", "1" * 209 + ".5e99", "1" * 4300,
    "-" + "1" * 4300, "1" * 4301, "1" * 5000, "NaN", "[Infinity, -Infinity]", '"\\ud800"', '{"\\udc00": 1}', '"\\ud83d\\ude00"',
    '{"a": 1, "b": 2, "a": 3}', "[" * 199 + "]" * 199, "[" * 250 + "]" * 250, "[" * 5000 + "]" * 5000, "\ufeff{}", '"a\x01b"',
    "{} x", "", " ", "[1,]", "\x0c{}", '"\\u0000\\/"', "0e0", "-0", "5e-324", "1e-400", '{"a": 1}\n{"b": 2}', "tru", '"\ud800"',
    '{"a":1e400}', '[0,\n-1.5e400]', '[\t2E+401]', '{"id": "1be391", "n": 1e400}', '"40c0-8e402"', '["a,1e400"]', "[1.e400]",
    "\ufeff1e400", "\x0c1e400", "[+1e400]", '{"uuid": "0030898d-d83c-401e-a2b0-1be391afcdfa"}', '["e400", "1e40"]',
    "[1,-12e400]", '{"a":-1e400}', "[-123e400]", "[a1e400]", '["a-1e400", 1]', '["40c0-8e402", -8e402]', "[1234e400]",
]


def _outcome(read, text: str | bytes) -> str:  # type: ignore[no-untyped-def]
    try:
        value = read(text)
    except RecursionError:
        return "RecursionError"
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"
    return f"{type(value).__name__} {value!r}"


def test_the_fast_json_reading_gives_what_the_exact_one_gives() -> None:
    """`loads` reads with pydantic's parser when it can: every value and every error is the one
    Python's `json` with the importers' hooks gives, for the edge cases, every line of every sample
    and mutants of them (as str and as bytes, checked line by line and as a whole file)."""
    from engine.core.jsontext import _exact_loads, loads, plain, plain_loads

    rng = random.Random("fast-json")
    texts: list[str | bytes] = [*EDGE_JSON, *(t.encode("utf-8", "surrogatepass") for t in EDGE_JSON), "\ufeff{}".encode("utf-16")]
    for name in SAMPLES:
        data = (TRACES / name).read_bytes()
        if data.startswith(b"PK"):
            continue
        lines = data.splitlines()
        texts += [data, *lines]
        for _ in range(60):
            mutant = mutate(rng.choice(lines) if lines else data, rng)
            texts += [mutant, mutant.decode("utf-8", "replace")]
    for text in texts:
        expected = _outcome(_exact_loads, text)
        assert _outcome(loads, text) == expected, text[:200]
        if plain(text):
            assert _outcome(plain_loads, text) == expected, text[:200]


def test_a_long_text_is_read_fast_only_when_the_exact_reading_agrees() -> None:
    """A text of `SHORT` characters or more is checked pattern by pattern, the exponents' behind what
    every exponent starts with: each edge case, padded that long, is plain only where the fast
    reading gives what the exact one gives."""
    from engine.core.jsontext import SHORT, _exact_loads, plain, plain_loads

    for edge in EDGE_JSON:
        for text in (" " * SHORT + edge, edge + "\n" * SHORT, f'[{edge}, "{"x" * SHORT}"]'):
            for each in (text, text.encode("utf-8", "surrogatepass")):
                if plain(each):
                    assert _outcome(plain_loads, each) == _outcome(_exact_loads, each), edge[:200]
    assert not plain(" " * SHORT + "1e400") and not plain(" " * SHORT + "[1.5E+400]") and not plain(" " * SHORT + '"\\ud800"')
    assert not plain(" " * SHORT + "-" + "9" * 210 + "e2") and plain(" " * SHORT + '["e5", 1e5]')


def test_an_exponent_in_a_word_leaves_a_text_plain_and_one_ending_a_number_does_not() -> None:
    """An id's letters (`1be391`) are no number: a text of them is read fast; a number's exponent
    of three digits, in any place JSON puts a number, is read exactly. Random documents of both,
    short and long, str and bytes: wherever one is plain, the fast reading gives what the exact one
    gives."""
    import uuid

    from engine.core.jsontext import SHORT, _exact_loads, plain, plain_loads

    rng = random.Random("exponents")
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(400)]
    worded = [i for i in ids if re.search(r"[eE][+-]?[0-9]{3}", i)]
    assert len(worded) > 50  # a quarter of random uuids hold one
    for each in worded:
        assert plain(f'{{"uuid": "{each}", "n": 1.5e3}}') and plain(f'{{"uuid": "{each}"}}'.encode())
    session = "\n".join(f'{{"uuid": "{i}", "parentUuid": "{j}"}}' for i, j in zip(ids, ids[1:]))
    assert len(session) > SHORT and plain(session) and plain(session.encode())

    def number() -> str:
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 4)))
        point = rng.choice(["", "." + str(rng.randint(0, 99))])
        exponent = rng.choice(["", "e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.randint(0, 1200)).zfill(rng.choice([1, 3, 4]))
        return rng.choice(["", "-"]) + digits + point + (exponent if exponent[:1] in ("e", "E") else "")

    def value(depth: int = 0) -> str:
        kind = rng.choice(["number", "word", "list", "object"] if depth < 3 else ["number", "word"])
        if kind == "number":
            return number()
        if kind == "word":
            return json.dumps(rng.choice(ids) + rng.choice(["", "e123", "1e400", " 9E+999"]))
        space = rng.choice(["", " ", "\n", "\t"])
        items = [value(depth + 1) for _ in range(rng.randint(0, 4))]
        if kind == "list":
            return "[" + f",{space}".join(items) + "]"
        return "{" + f",{space}".join(f'"k{n}":{space}{item}' for n, item in enumerate(items)) + "}"

    texts = [value() for _ in range(1500)]
    texts += [" " * SHORT + t for t in texts[:200]] + ["[" + ",".join(texts[:300]) + "]"]
    for text in texts:
        for each in (text, text.encode()):
            if plain(each):
                assert _outcome(plain_loads, each) == _outcome(_exact_loads, each), text[:200]
    assert sum(map(plain, texts)) > len(texts) // 4  # not all refused: the check reads the words


def test_a_text_of_ever_more_words_with_exponents_stops_being_checked_word_by_word() -> None:
    """Past one exponent in a word every 64 characters the text counts as not plain (read exactly):
    the check of each costs no more than the characters read."""
    from engine.core.jsontext import _exact_loads, loads, plain

    dense = json.dumps(["1e123x"] * 20_000)  # a word after a quote: the check of each is `_ends_a_number`'s
    sparse = json.dumps(["1e123x" + "x" * 80] * 2_000)
    assert not plain(dense) and plain(sparse)
    assert _outcome(loads, dense) == _outcome(_exact_loads, dense)


def _print_digests() -> None:  # pragma: no cover - run by hand when the output is meant to change
    import contextlib
    import io
    import os
    import tempfile

    class Capture:
        def __init__(self) -> None:
            self.out, self.err = io.StringIO(), io.StringIO()

        def readouterr(self) -> tuple[str, str]:
            out, err = self.out.getvalue(), self.err.getvalue()
            self.out.seek(0), self.out.truncate(), self.err.seek(0), self.err.truncate()
            return out, err

    def each(make, keys):  # type: ignore[no-untyped-def]
        rows = {}
        for key in keys:
            with tempfile.TemporaryDirectory() as tmp:
                here = os.getcwd()
                os.chdir(tmp)
                capture = Capture()
                try:
                    with contextlib.redirect_stdout(capture.out), contextlib.redirect_stderr(capture.err):
                        rows[key] = make(key, Path(tmp), capture)
                finally:
                    os.chdir(here)
        return rows

    for title, rows in (("PINNED_SAMPLES", each(_sample_digest, SAMPLES)), ("PINNED_BENCH", each(_bench_digest, sorted(BENCH_FORMATS))),
                        ("PINNED_MUTANTS", {fmt: _mutants_digest(fmt) for fmt in sorted(SOURCES)})):
        print(f"{title} = {{")
        for key, value in rows.items():
            print(f"    {key!r}: {value!r},")
        print("}\n")


if __name__ == "__main__":
    _print_digests()
    sys.exit(0)
