"""The independent catalogue measurement (eval/catalogue_recall.py): Go regex syntax is read right, gitleaks'
own checks are applied as gitleaks applies them, and the frozen sample set is what the seeded generator
makes from eval's copy of the catalogue."""

from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the eval package lives beside the tests

from eval.catalogue_recall import (  # noqa: E402
    CATALOGUE,
    SAMPLES,
    Generator,
    findings,
    generate,
    load_catalogue,
    parse,
    read_samples,
    translate,
)


def test_go_only_syntax_is_translated():
    assert translate(r"\b(p8e-(?i)[a-z0-9]{32})(?:x|$)") == r"\b(p8e-(?i:[a-z0-9]{32}))(?:x|$)"
    assert translate(r"a(?i)b") == r"a(?i:b)"
    assert translate(r"sha256~[\w-]{43}(?:[^\w-]|\z)") == r"sha256~[\w-]{43}(?:[^\w-]|\Z)"
    assert translate(r"pat[[:alnum:]]{14}") == r"pat[a-zA-Z0-9]{14}"
    assert translate(r"(?<name>x)") == r"(?P<name>x)"


def test_generated_strings_are_in_the_rules_language():
    rules, _ = load_catalogue(CATALOGUE)
    rng = random.Random(7)
    for rule in rules:
        if rule.regex is None:
            continue
        parsed = parse(rule.regex)
        hits = sum(bool(rule.compiled.search(Generator(rng, fold=bool(i % 2)).generate(parsed))) for i in range(4))
        assert hits >= 1, rule.id  # anchors and boundaries are left to the check; most strings match alone


def test_gitleaks_checks_keywords_entropy_and_allowlists():
    rules, globals_ = load_catalogue(CATALOGUE)
    by_id = {r.id: r for r in rules}
    pat = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    assert [f.secret for f in findings(by_id["github-pat"], f"x {pat} y", "", globals_)] == [pat]
    low = "ghp_" + "a" * 36  # entropy 0.9: gitleaks drops it
    assert findings(by_id["github-pat"], low, "", globals_) == []
    aws = "AKIA" + "IOSFODNN7EXAMPLE"  # the rule's own allowlist (.+EXAMPLE$)
    assert findings(by_id["aws-access-token"], aws, "", globals_) == []
    generic = by_id["generic-api-key"]
    assert findings(generic, 'client_secret = "Zq8vN2kLx7Rt4mWp9sYb"', "app.conf", globals_)
    # the generic rule's stopwords: a secret holding "client" is let go
    assert findings(generic, 'api_token = "client8vN2kLx7Rt4mWp9sYb"', "app.conf", globals_) == []
    # a rule with a path runs only on files it names
    tf = by_id["hashicorp-tf-password"]
    line = 'administrator_login_password = "Zq8vN2kLx7Rt4mWp"'
    assert findings(tf, line, "main.tf", globals_) and not findings(tf, line, "main.yaml", globals_)


def test_frozen_samples_are_what_the_generator_makes():
    header, frozen = read_samples(SAMPLES)
    rules, globals_ = load_catalogue(CATALOGUE)
    assert header["rules"] == len(rules)
    some = ["github-pat", "sendgrid-api-token", "generic-api-key", "vault-service-token", "curl-auth-user"]
    fresh_header, fresh = generate(only=some)
    if fresh_header["python"] == header["python"]:  # re._parser's trees, so the draws, follow the version
        assert [s.to_json() for s in fresh] == [s.to_json() for s in frozen if s.rule in some]
    # every rule is sampled or listed with its reason; every sample is a finding of its rule
    assert {s.rule for s in frozen} | set(header["unsampleable"]) == {r.id for r in rules}
    by_id = {r.id: r for r in rules}
    for s in frozen[::7]:
        got = {f.secret for f in findings(by_id[s.rule], s.text, s.path, globals_)}
        assert set(s.secrets) <= got, s.rule


def test_measure_scores_what_the_real_daemon_stores(tmp_path):
    from eval.catalogue_recall import Sample, leaked, measure

    pat = "ghp_" + "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE3fG5"
    plain = "Quokka7Wombat3Numbat9"  # no rule knows this: it is stored as it came, so it leaks
    samples = [
        Sample("github-pat", "A", f"region = eu-west-1\ntoken {pat}\n", [pat], path="config/settings.conf"),
        Sample("github-pat", "B", f"[12:00:01] uploading {pat} (3 kB)\n", [pat], command="make deploy"),
        Sample("made-up", "B", f"[12:00:02] uploading {plain} (3 kB)\n", [plain], command="make deploy"),
    ]
    result = measure(samples, tmp_path)
    assert result["not_stored"] == [] and result["errors"] == []
    assert result["views"]["A"]["recall"] == 1.0 and result["views"]["B"]["leaked"] == 1
    assert set(result["leaking_rules"]) == {"made-up"}
    # a piece of max(8, half) characters is a leak; a shorter one is not
    assert leaked(samples[2:], [plain[3:14]]) == {0: plain[3:14]} and leaked(samples[2:], [plain[:9]]) == {}
    # a piece that is mostly the blanks between a key and its value tells nothing of the secret
    padded = Sample("kubernetes-secret-yaml", "A", "", ["D:" + " " * 19 + "SfgJO62V46"])
    assert leaked([padded], ["data:" + " " * 40 + "x"]) == {}
    assert list(leaked([padded], [" " * 9 + "SfgJO62V46"])) == [0]


def test_code_precision_counts_redactions_and_checks_every_language_parses(tmp_path):
    from eval.code_precision import Skipped, measure, parses, sources

    for kind, good, bad in [("python", "x = 1\n", "x = (\n"), ("json", '{"a": 1}', '{"a": }'),
                            ("javascript", "const a = 1;\n", "const a = ;\n"),
                            ("typescript", "let a: number = 1;\n", "let a: = ;\n"),
                            ("go", "package a\n\nvar x = 1\n", "package a\n\nvar x = \n"),
                            ("rust", "fn main() { let a = 1; }\n", "fn main() { let a = ; }\n"),
                            ("c", "int a = 1;\n", "int a = ;\n")]:
        assert parses(kind, good) and not parses(kind, bad), kind
    lib = tmp_path / "python" / "somelib-1.0"
    (lib / "tests").mkdir(parents=True)
    (lib / "tests" / "conf.py").write_text("x = 1\n")  # a test folder is left out
    (lib / "core.py").write_text('KEY_ID = "AKIA' + 'Q3EGRIQZ7LXKB5TN"\nx = 1\n')
    (lib / "data.json").write_text('{"n": 1}\n')
    skipped = Skipped()
    assert sorted(p.name for p, _, _ in sources(lib, skipped)) == ["core.py", "data.json"] and skipped.tests == 1
    r = measure(tmp_path, libraries=(("python", "site-packages", "somelib"), ("go", "debian", "absent-dev")))
    assert r["total"]["files"] == 2 and r["total"]["lines"] == 3 and r["total"]["redactions"] == 1
    assert r["broken"] == [] and len(r["missing"]) == 1 and "fetch" in r["missing"][0]


def test_code_precision_halves_split_every_language_and_cover_the_corpus_once():
    from eval.code_precision import LIBRARIES, half

    one, two = half(1), half(2)
    assert sorted(one + two) == sorted(LIBRARIES) and not set(one) & set(two)
    for lang in {lib[0] for lib in LIBRARIES}:
        n1, n2 = (sum(lib[0] == lang for lib in h) for h in (one, two))
        assert n1 >= 1 and n2 >= 1 and n1 - n2 in (0, 1), lang
