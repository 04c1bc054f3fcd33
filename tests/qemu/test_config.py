"""Config merge: conflicts refused (naming both fragments), missing options named."""

import pytest

from classify.kbuild import missing_options, parse_config_text
from qemu.config import ConfigConflict, Fragment, load_fragment, merge_fragments


def test_parse_set_and_unset():
    opts = parse_config_text("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x y\"\n# comment\n")
    assert opts == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"x y"'}


def test_merge_union_and_same_value_is_fine():
    merged = merge_fragments([Fragment("a", {"CONFIG_A": "y", "CONFIG_B": "y"}),
                              Fragment("b", {"CONFIG_B": "y", "CONFIG_C": "n"})])
    assert merged == {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "n"}


def test_conflict_is_refused_naming_both_fragments():
    with pytest.raises(ConfigConflict) as err:
        merge_fragments([Fragment("mode-full", {"CONFIG_X": "y"}),
                         Fragment("no-x", {"CONFIG_X": "n"})])
    assert "mode-full" in str(err.value) and "no-x" in str(err.value)
    assert "CONFIG_X" in str(err.value)


def test_missing_option_is_named(tmp_path):
    dot = tmp_path / ".config"
    dot.write_text("CONFIG_A=y\n# CONFIG_B is not set\nCONFIG_D=y\n")
    requested = {"CONFIG_A": "y", "CONFIG_B": "y", "CONFIG_C": "y", "CONFIG_D": "n",
                 "CONFIG_E": "n"}
    missing = missing_options(requested, parse_config_text(dot.read_text()))
    assert missing[0] == "Missing: CONFIG_B=y"
    assert missing[1].startswith("Missing: CONFIG_C=y (not in .config")
    assert missing[2] == "Missing: # CONFIG_D is not set"
    assert len(missing) == 3          # CONFIG_E=n is satisfied by its absence


def test_nothing_missing():
    assert missing_options({"CONFIG_A": "y"}, {"CONFIG_A": "y", "CONFIG_Z": "y"}) == []


def test_shipped_fragments_do_not_conflict():
    names = ["base", "mode-full", "kunit", "rule-check"]
    merged = merge_fragments([load_fragment(n) for n in names])
    assert merged["CONFIG_DEBUG_MUTEX_FULL"] == "y"
    assert merged["CONFIG_PROVE_LOCKING"] == "y"
