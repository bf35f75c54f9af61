"""``cepkit.explain`` on the papers' worked examples: CEL φ1 on the fire sensors ([CEL] §2), SES's
STNM examples ([SES] Figs 3.1, 6.1(a)), the stack engine's negation examples ([LIU] ch. 2, ch. 3)."""

import pytest

import cepkit
from cepkit.datasets import cel_fire_sensors, ses_chemo, ses_stocks
from engines.stack.labelled_streams import arrivals

PHI1 = "(T AS x ; H AS y) FILTER (x.tmp > 40 and y.hum < 25 and x.id = 0 and y.id = 0)"


def underlined(explanation, reason):
    start, end = reason.span
    return explanation.query[start:end]


# ----------------------------------------------------------------------------- [CEL], φ1
def test_phi1_match_states_each_clause_with_its_values():
    e = cepkit.explain(PHI1, cel_fire_sensors(), (1, 2))
    assert e.is_match and e.candidate == {"x": 1, "y": 2}
    messages = [r.message for r in e.reasons]
    assert "`x.tmp > 40` holds: x.tmp = 45 (event 1)" in messages
    assert "`y.hum < 25` holds: y.hum = 20 (event 2)" in messages
    assert all(r.kind == "satisfied" for r in e.reasons)


def test_phi1_not_a_match_event_5_is_a_temperature():
    e = cepkit.explain(PHI1, cel_fire_sensors(), (1, 5))
    assert not e.is_match
    (reason,) = e.reasons
    assert reason.kind == "type" and reason.events == (5,)
    assert reason.message == "event 5 has type T; `H AS y` needs H"
    assert underlined(e, reason) == "H AS y"
    assert "H AS y" in str(e) and "^^^^^^" in str(e)
    assert "<u " in e._repr_html_()


def test_phi1_failed_conditions_with_the_values_seen():
    e = cepkit.explain(PHI1, cel_fire_sensors(), {"x": 4, "y": 7})  # sensor 1: 40 is not above 40
    assert not e.is_match
    failed = {underlined(e, r): r.message for r in e.failures}
    assert failed == {
        "x.tmp > 40": "`x.tmp > 40` is false: x.tmp = 40 (event 4)",
        "y.hum < 25": "`y.hum < 25` is false: y.hum = 70 (event 7)",
        "x.id = 0": "`x.id = 0` is false: x.id = 1 (event 4)",
        "y.id = 0": "`y.id = 0` is false: y.id = 1 (event 7)",
    }


@pytest.mark.parametrize("strategy, candidate, preferred", [("NEXT", (5, 8), (1, 8)), ("LAST", (1, 8), (5, 8))])
def test_phi1_selected_away_names_the_preferred_match(strategy, candidate, preferred):
    """[CEL] §2's table: NXT(φ1) keeps {1,8} and drops {5,8}; LAST(φ1) the other way round."""
    e = cepkit.explain(PHI1, cel_fire_sensors(), candidate, strategy=strategy)
    assert not e.is_match
    (reason,) = e.reasons
    assert reason.kind == "strategy" and reason.values["preferred"] == preferred
    assert f"{strategy} keeps {preferred} instead" in reason.message
    assert cepkit.explain(PHI1, cel_fire_sensors(), preferred, strategy=strategy).is_match


def test_phi1_strict_names_the_event_between():
    e = cepkit.explain("SELECT STRICT * FROM S WHERE " + PHI1, cel_fire_sensors(), (1, 8))
    (reason,) = e.reasons
    assert reason.kind == "strategy" and reason.values["between"] == (2, 3, 4, 5, 6, 7)
    assert "event 2 lies between" in reason.message
    assert underlined(e, reason) == "STRICT"


def test_window_and_partition():
    q = "SEQ(T x, H y) WHERE x.tmp > 40 and y.hum < 25 WITHIN 5 s PARTITION BY id"
    e = cepkit.explain(q, cel_fire_sensors(), (1, 8))
    (reason,) = e.reasons
    assert reason.kind == "window" and (reason.values["span"], reason.values["limit"]) == (7.0, 5.0)
    assert reason.message.startswith("span 7 s > WITHIN 5 s,") and underlined(e, reason) == "WITHIN 5 s"
    e = cepkit.explain(q, cel_fire_sensors(), (1, 3))
    (reason,) = e.reasons
    assert reason.kind == "partition" and underlined(e, reason) == "PARTITION BY id"
    assert reason.message.startswith("event 1 has id = 0 but event 3 has id = 1")


def test_a_candidate_across_partitions_also_hears_what_else_is_wrong():
    """Across partitions the partition is not the only reason: events 1 and 4 are both temperatures, and a
    person asking about them wants to hear that too, not only that their ids differ."""
    q = "SEQ(T x, H y) WHERE x.tmp > 40 WITHIN 5 s PARTITION BY id"
    e = cepkit.explain(q, cel_fire_sensors(), (1, 4))
    assert [r.kind for r in e.reasons] == ["partition", "type"]
    assert e.reasons[1].message == "event 4 has type T; `H y` needs H" and underlined(e, e.reasons[1]) == "H y"
    e = cepkit.explain(q, cel_fire_sensors(), {"x": 3, "y": 1})  # H then T, bound the wrong way round
    assert [r.kind for r in e.reasons] == ["partition", "type", "type", "order"]
    e = cepkit.explain(q, cel_fire_sensors(), (1, 3))  # T then H: only the partition is wrong
    assert [r.kind for r in e.reasons] == ["partition"]


# ----------------------------------------------------------------------------- [SES], SES STNM
CHEMO_P1 = (
    "PATTERN SEQ({C c, P+ p, D d}, {B b}) WHERE c.PID = p.PID and p.PID = d.PID and d.PID = b.PID "
    "and prev(p.V) < p.V WITHIN 15 days"
)


def chemo_positions(stream, *names):
    return tuple(sorted(int(stream.index[stream["e"] == n][0]) for n in names))


def test_chemo_stnm_b_e14_is_skipped_past_e13():
    """[SES] Fig. 3.1 Ex 3.5: {c/e8, p/<e9>, d/e7, b/e14} is a match under ALL, not under STNM: e13 comes first."""
    stream = ses_chemo(3)
    candidate = chemo_positions(stream, "e7", "e8", "e9", "e14")
    assert cepkit.explain(CHEMO_P1, stream, candidate).is_match
    for strategy in ("STNM", "ROBUST_STNM"):
        e = cepkit.explain(CHEMO_P1, stream, candidate, strategy=strategy)
        assert not e.is_match
        (reason,) = e.reasons
        assert reason.kind == "strategy" and reason.values["skipped"] == chemo_positions(stream, "e13")[0]
        assert "skip-till-next-match may not skip it" in reason.message
    kept = chemo_positions(stream, "e7", "e8", "e9", "e13")
    assert cepkit.explain(CHEMO_P1, stream, kept, strategy="STNM").is_match


def test_chemo_rising_prev_condition_fails_with_both_values():
    """[SES] Fig. 3.1 Ex 3.4: <e6, e11> and <e9, e11> do not rise: prev(p.V) < p.V is false."""
    stream = ses_chemo(3)
    names = stream["e"].tolist()
    bindings = {
        "c": names.index("e8"),
        "p": [names.index("e9"), names.index("e11")],
        "d": names.index("e7"),
        "b": names.index("e13"),
    }
    e = cepkit.explain(CHEMO_P1, stream, bindings)
    assert not e.is_match
    (reason,) = e.failures
    assert reason.kind == "condition" and underlined(e, reason) == "prev(p.V) < p.V"
    v9, v11 = (stream.V[names.index(n)] for n in ("e9", "e11"))
    assert (reason.values["prev(p.V)"], reason.values["p.V"]) == (v9, v11) and not v9 < v11


def test_stocks_stnm_ex_6_4_run_of_e71_fails():
    """[SES] Fig. 6.1(a) Ex 6.4: the run starting at e71 is not an STNM match (e72 taken greedily as s2); ROBUST_STNM
    (Ex 6.5) accepts {s1/e71, s2/e74, s3/<e76>, s4/e77}."""
    query = (
        "PATTERN SEQ({GOOG s1}, {GOOG s2}, {GOOG+ s3}, {GOOG s4}) WHERE s1.P < s2.P and s2.P < s3.P and "
        "prev(s3.P) < s3.P and s1.V < s4.V and s2.V < s4.V and s3.V < s4.V WITHIN 100 ms"
    )
    stream = ses_stocks(6)
    names = stream["e"].tolist()
    bindings = {
        "s1": names.index("e71"),
        "s2": names.index("e74"),
        "s3": [names.index("e76")],
        "s4": names.index("e77"),
    }
    assert cepkit.explain(query, stream, bindings, strategy="ROBUST_STNM").is_match
    e = cepkit.explain(query, stream, bindings, strategy="STNM")
    assert not e.is_match
    (reason,) = e.reasons
    assert reason.kind == "strategy" and names[reason.values["skipped"]] == "e72"


# ----------------------------------------------------------------------------- [LIU], negation
SEQ_ABNCD = "SEQ(A a, B b, !C c, D d) WITHIN 10"


def test_we10_c5_blocks_the_late_b4():
    """[LIU] [LIU] Ex 3: <a3, b4, d8> is rejected, c5 lies between b4 and d8."""
    text = "a3 c5 b6 a7 d8 d10 b11 f17 b4"
    events = arrivals(text)
    position = {label: k for k, label in enumerate(text.split())}
    e = cepkit.explain(SEQ_ABNCD, events, (position["a3"], position["b4"], position["d8"]))
    assert not e.is_match
    (reason,) = e.reasons
    assert reason.kind == "negation" and reason.values["witness"] == (position["c5"],)
    assert underlined(e, reason) == "!C c"
    assert reason.message.startswith(
        f"event {position['c5']} (C) lies after event {position['b4']} and before event {position['d8']}"
    )
    kept = cepkit.explain(SEQ_ABNCD, events, (position["a3"], position["b6"], position["d8"]))
    assert kept.is_match and any(r.message.startswith("no match of `!C c` lies") for r in kept.reasons)


def test_we13_both_matches_blocked():
    """[LIU] Ex 7/8 (in order): <a3, b11> is blocked by c5 (and c9), <a7, b11> by c9."""
    text = "a3 c5 a7 b11 c9"
    events = arrivals(text)
    position = {label: k for k, label in enumerate(text.split())}
    query = "SEQ(A a, !C c, B b) WITHIN 10"
    for a, c in (("a3", "c5"), ("a7", "c9")):
        e = cepkit.explain(query, events, {"a": position[a], "b": position["b11"]})
        (reason,) = e.reasons
        assert reason.kind == "negation" and reason.values["witness"] == (position[c],)


def test_exists_without_witness_and_consume():
    events = arrivals("a1 b2 a3 c4 b5")
    e = cepkit.explain("SEQ(A a, EXISTS C c, B b)", events, (0, 1))
    (reason,) = e.reasons
    assert reason.kind == "exists" and "EXISTS has no witness" in reason.message
    assert cepkit.explain("SEQ(A a, EXISTS C c, B b)", events, (2, 4)).is_match
    e = cepkit.explain("SEQ(A a, B b) CONSUME BY ANY", events, (0, 4))
    (reason,) = e.reasons
    assert reason.kind == "consume" and reason.values["consumed_by"] == (0, 1)
    e = cepkit.explain("SEQ(A a, B b) RETURN a", events, (0, 1))
    assert [r.kind for r in e.reasons] == ["return"] and not e.is_match
    assert cepkit.explain("SEQ(A a, B b) RETURN a", events, (0,)).is_match


def test_bad_candidates_and_unsupported_queries():
    with pytest.raises(ValueError, match="no variable 'z'"):
        cepkit.explain(PHI1, cel_fire_sensors(), {"z": 1})
    with pytest.raises(ValueError, match="position 40 is not in the stream"):
        cepkit.explain(PHI1, cel_fire_sensors(), (1, 40))
    with pytest.raises(cepkit.QueryError, match="STNM"):
        cepkit.explain("SEQ(A a, B b) OR SEQ(B b, A a)", arrivals("a1 b2"), (0, 1), strategy="STNM")
