"""`hone tune` on a tabular task's values: a categorical value with a comma, a quote or
spaces around it is tuned as it is, and the lines naming a configuration quote it so that it
reads as one value."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hone.output import config_text

PROJECT = """\
    name: odd-values
    knobs:
      mode:
        type: categorical
        values: ["a", "x,y", " pad ", 'say "q"']
        shell: {get: "cat mode.val", set: "printf '%s' $value > mode.val"}
      n: {type: int, range: [1, 2], shell: {get: "cat n.val", set: "printf '%s' $value > n.val"}}
    benchmark: {command: "sh bench.sh"}
    metrics:
      ops: {pattern: 'ops (\\d+)', direction: maximize}
    tuning: {budget: 6, baseline: 2, confirm: {candidates: 1, rounds: 2}, seed: 0}
    """
BENCH = """\
case "$(cat mode.val)" in
  "x,y") echo "ops 30" ;;
  " pad ") echo "ops 20" ;;
  'say "q"') echo "ops 15" ;;
  *) echo "ops 10" ;;
esac
"""


def test_values_that_hold_separators_are_quoted_where_a_configuration_is_named(
    tmp_path: Path, hone_cli
) -> None:
    """`trial 3/6: mode=x,y,n=1` and `best: mode= pad ,n=2` read as other configurations."""
    (tmp_path / "hone.yaml").write_text(textwrap.dedent(PROJECT))
    (tmp_path / "bench.sh").write_text(BENCH)
    (tmp_path / "mode.val").write_text("a")
    (tmp_path / "n.val").write_text("1")
    tuned = hone_cli("tune", str(tmp_path), "--no-why")
    assert tuned.returncode == 0, tuned.stderr
    trials = [line for line in tuned.stdout.splitlines() if line.startswith("trial ")]
    assert any("mode='x,y'," in line for line in trials), trials
    assert "\nbest: mode='x,y',n=" in tuned.stdout
    assert (tmp_path / "mode.val").read_text() == "x,y"  # applied as the value itself


def test_a_configuration_is_named_unambiguously() -> None:
    config = {"a": "x,y", "b": " pad ", "c": 'say "q"', "d": "", "e": "a b", "f": 2, "g": "k=v"}
    assert config_text(config) == ("a='x,y', b=' pad ', c='say \"q\"', d='', e=a b, f=2, g='k=v'")
