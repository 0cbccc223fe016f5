"""Values that reach a nested interpreter (sed's script, `sh -c`, `eval`, awk's program,
`python -c`) are parsed there as code, whatever quoting the outer shell gets. hone refuses, before
anything changes, a value read from the system or declared by a project that would run there,
and a metric command that hands the benchmark's output to one."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from hone.knobs.shell import set_script
from hone.shell import ARITHMETIC, nested_interpreter, run_argv

SED_SET = "sed -i 's/^OPT=.*/OPT=$value/' flags.conf"


@pytest.mark.parametrize(
    ("template", "placeholder", "interpreter"),
    [
        (SED_SET, "$value", "sed"),
        ('sed -i "s/^maxmemory.*/maxmemory ${value}gb/g" redis.conf', "$value", "sed"),
        ("sed -n 's/x//p' $value", "$value", None),  # a file name, not the script
        ("sh -c 'printf %s \"$0\" > out' $value", "$value", None),  # an argument of sh -c
        ('sh -c "echo $out"', "$out", "sh"),
        ("eval $value", "$value", "eval"),
        ("sysctl -w vm.swappiness=$value", "$value", None),
        ("awk -v v=$value '{print v}' f", "$value", None),
        ("awk '{print $value}' f", "$value", "awk"),
        ("python3 -c 'print($value)'", "$value", "python3"),
        ("FOO=1 sudo sed -i -e s/a/$value/ f", "$value", "sed"),
        ("echo '$out' | grep seconds | awk '{print $2}'", "$out", None),
        ('if [ "$value" = on ]; then bash -c "x=$value"; fi', "$value", "bash"),
        # bash (the /bin/sh of RHEL, Fedora, openEuler) evaluates these as arithmetic, where an
        # array subscript `a[$(id)]` runs its command substitution
        ("echo $(( $value * 1024 )) > f", "$value", ARITHMETIC),
        ('echo "$(( ${value} + 1 ))" > f', "$value", ARITHMETIC),
        ("(( $value > 3 )) && echo big > f", "$value", ARITHMETIC),
        ("[[ $value -gt 3 ]] && echo big > f", "$value", ARITHMETIC),
        ("echo $[ $value + 1 ]", "$value", ARITHMETIC),
        ("a=(1 2); echo ${a[$value]}", "$value", ARITHMETIC),
        ("x=abcdef; echo ${x:$value:2}", "$value", ARITHMETIC),
        ("let n=$value+1", "$value", ARITHMETIC),
        ("declare -i n=$value", "$value", ARITHMETIC),
        ("echo $(( $(echo $out | wc -l) + 1 ))", "$out", None),  # an argument again
        ('[ "$value" -gt 3 ] && echo big > f', "$value", None),  # test compares, no arithmetic
        ("[[ $value == on ]] && echo on > f", "$value", None),
        ("echo ${X:-$value} > f", "$value", None),  # a default, not an offset
        ("echo '$((' $value", "$value", None),  # quoted: no arithmetic
    ],
)
def test_nested_interpreters_are_recognised(template, placeholder, interpreter) -> None:
    assert nested_interpreter(template, placeholder) == interpreter


def atune_pair(folder: Path, options: str = '["-O1", "-O2"]', get: str | None = None) -> Path:
    """A-Tune's own knob form: flags.conf edited with sed, as its projects ship it (A-Tune runs
    commands from the folder above the project's)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder.parent / "bench.sh").write_text("echo 'seconds 1.5'\n")
    get = get or "echo '$out' | grep seconds | awk '{print $2}'"
    (folder / "p_server.yaml").write_text(
        textwrap.dedent(f"""\
        project: "p"
        maxiterations: 5
        object:
          - name: "opt"
            info:
              desc: "optimisation level"
              get: "sed -n 's/^OPT=//p' flags.conf"
              set: "{SED_SET}"
              needrestart: "false"
              type: "discrete"
              dtype: "string"
              options: {options}
        """)
    )
    (folder / "p_client.yaml").write_text(
        textwrap.dedent(f"""\
        project: "p"
        engine: "random"
        iterations: 3
        benchmark: "sh bench.sh"
        evaluations:
          - name: "seconds"
            info:
              get: {get!r}
              type: "positive"
              weight: 100
        """)
    )
    return folder


def test_a_value_read_from_the_system_never_runs_as_code(tmp_path: Path, hone_cli) -> None:
    """GNU sed's `e` command ran `id` as root at baseline, recovery and restore."""
    project = atune_pair(tmp_path / "p")
    hostile = "OPT=-O2/;e touch PWNED;#\n"
    (project.parent / "flags.conf").write_text(hostile)
    result = hone_cli("tune", str(project), "--budget", "2", cwd=project)
    assert result.returncode == 2, result.stdout
    assert "would be read as code by sed" in result.stderr and "opt" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.rglob("PWNED"))
    assert (project.parent / "flags.conf").read_text() == hostile  # nothing changed
    assert "nothing to restore" in hone_cli("restore", "p").stdout


def test_a_value_read_from_the_system_never_runs_in_bash_arithmetic(
    tmp_path: Path, hone_cli
) -> None:
    """A set command that computes with $value hands it to bash's arithmetic, which runs the
    command substitution in a subscript however the value was quoted; with bash as /bin/sh
    (RHEL, Fedora, openEuler) the file's text ran as root at baseline, recovery and restore."""
    set_command = "echo $(( $value * 1 )) > level.txt"
    hostile = "a[$(touch PWNED)]"
    bash = run_argv(["bash", "-c", set_script(set_command)], env={"HONE_VALUE": hostile},
                    cwd=tmp_path)  # fmt: skip
    assert (tmp_path / "PWNED").exists(), bash  # the hazard is real under bash
    (tmp_path / "PWNED").unlink()
    (tmp_path / "level.txt").write_text(hostile + "\n")
    (tmp_path / "hone.yaml").write_text(
        textwrap.dedent(f"""\
        name: arithmetic
        knobs:
          level:
            type: int
            range: [1, 9]
            shell: {{get: cat level.txt, set: '{set_command}'}}
        benchmark: {{command: echo score 1, timeout: 20}}
        metrics:
          score: {{pattern: 'score (\\S+)', direction: maximize}}
        tuning: {{engine: random, budget: 2, baseline: 1}}
        """)
    )
    result = hone_cli("tune", str(tmp_path), "--no-why")
    assert result.returncode == 2, result.stdout
    assert "would be read as code by bash arithmetic" in result.stderr, result.stderr
    assert "knob 'level'" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert (tmp_path / "level.txt").read_text() == hostile + "\n"  # nothing changed
    assert not (tmp_path / "PWNED").exists()


def test_plain_values_through_sed_still_tune(tmp_path: Path, hone_cli) -> None:
    project = atune_pair(tmp_path / "p")
    (project.parent / "flags.conf").write_text("OPT=-O1\n")
    result = hone_cli("tune", str(project), "--budget", "2", "--apply", "never", "--no-why",
                      cwd=project)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert (project.parent / "flags.conf").read_text() == "OPT=-O1\n"


def test_a_declared_value_that_would_run_is_refused_at_check(tmp_path: Path, hone_cli) -> None:
    project = atune_pair(tmp_path / "p", options='["-O1", "-O2/;e id;#"]')
    result = hone_cli("check", str(project))
    assert result.returncode == 2
    assert "p_server.yaml:" in result.stderr and "would be read as code by sed" in result.stderr


def test_benchmark_output_handed_to_sh_c_is_refused_at_check(tmp_path: Path, hone_cli) -> None:
    project = atune_pair(tmp_path / "p", get='sh -c "echo $out | tail -1"')
    result = hone_cli("check", str(project))
    assert result.returncode == 2
    assert "p_client.yaml:" in result.stderr and "$out would be read as code by sh" in result.stderr
