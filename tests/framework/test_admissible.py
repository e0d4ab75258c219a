import re

import pytest
from scaleprobe.framework.admissible import RuleError, compile_rule


@pytest.mark.parametrize(
    ("rule", "admitted"),
    [
        ("any", [1, 2, 3, 4, 6, 8, 9, 16, 18, 32]),
        ("power_of_two", [1, 2, 4, 8, 16, 32]),
        ("square", [1, 4, 9, 16]),
        ("two_p_squared", [2, 8, 18, 32]),
        ("ranks % 3 == 0 or ranks == 1", [1, 3, 6, 9, 18]),
        ("not (ranks > 4) and ranks != 3", [1, 2, 4]),
        ("2 ** ranks <= 8", [1, 2, 3]),
        ("1 < ranks < 9 and is_power_of_two(ranks)", [2, 4, 8]),
        ("sqrt(ranks) == floor(sqrt(ranks))", [1, 4, 9, 16]),
        ("max(ranks, 5) == 5", [1, 2, 3, 4]),
        ("-ranks + 10 >= 2 * 3", [1, 2, 3, 4]),
    ],
)
def test_rules_over_ranks(rule, admitted):
    ok = compile_rule(rule)
    candidates = [1, 2, 3, 4, 6, 8, 9, 16, 18, 32]
    assert [r for r in candidates if ok(nodes=r, ppn=1, ranks=r)] == admitted


def test_rule_sees_nodes_and_ppn():
    ok = compile_rule("nodes >= 2 and ppn == 2 and ranks == nodes * ppn")
    assert ok(nodes=2, ppn=2, ranks=4)
    assert not ok(nodes=1, ppn=2, ranks=2)
    assert not ok(nodes=2, ppn=1, ranks=2)


def test_two_p_squared_matches_the_constraint_of_medya_et_al_2017():
    # The IBM Graph500 code of Medya, Cherkasova and Singh 2017 runs on 2 p^2 ranks.
    # 18 ranks per node: 18 n = 2 p^2 admits n = 1, 4, 9, 16, 25, ...
    ok = compile_rule("two_p_squared")
    nodes = [n for n in range(1, 40) if ok(nodes=n, ppn=18, ranks=18 * n)]
    assert nodes == [1, 4, 9, 16, 25, 36]


@pytest.mark.parametrize(
    ("rule", "fragment"),
    [
        ('__import__("os").system("true")', "unexpected character"),
        ("nodes.__class__", "unexpected character"),
        ("open(1)", "unknown function 'open'"),
        ("exec(1)", "unknown function"),
        ("cores > 2", "unknown name 'cores'"),
        ("nodes +", "ends too early"),
        ("(nodes > 1", "ends too early"),
        ("nodes > 1)", "unexpected ')'"),
        ("2 ** 10 ** 10", "too large"),
        ("ranks / (nodes - 1) > 1", "division by zero"),
        ("", "non-empty"),
    ],
)
def test_bad_rules_are_refused_without_running_code(rule, fragment):
    with pytest.raises(RuleError, match=re.escape(fragment)):
        compile_rule(rule)


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (
            "power_of_2",
            "unknown rule 'power_of_2'; did you mean 'power_of_two'? named rules: any, "
            "power_of_two, square, two_p_squared; or write an expression over nodes, "
            "ppn, ranks, e.g. 'is_power_of_two(nodes)'",
        ),
        ("sqaure", "unknown rule 'sqaure'; did you mean 'square'? named rules: any,"),
        ("everything", "unknown rule 'everything'; named rules: any, power_of_two,"),
    ],
)
def test_a_misspelt_named_rule_suggests_the_named_rules(rule, expected):
    with pytest.raises(RuleError) as caught:
        compile_rule(rule)
    assert str(caught.value).startswith(expected)
    assert "\n" not in str(caught.value)


def test_a_misspelt_name_in_an_expression_suggests_the_variable():
    with pytest.raises(RuleError, match=r"unknown name 'rank' .* did you mean 'ranks'"):
        compile_rule("rank <= 8")
    with pytest.raises(RuleError, match="did you mean 'is_square'"):
        compile_rule("is_sqare(ranks)")
    # the named rules and the variables alone still work
    assert compile_rule("square")(nodes=4, ppn=1, ranks=4)
    assert compile_rule("True")(nodes=3, ppn=1, ranks=3)
