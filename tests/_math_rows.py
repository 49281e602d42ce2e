"""The one-batch check of a table of math verifier rows: (response, gold, passed) or
(response, gold, passed, answer_from). Used by the tables of answer shapes, formats and
competition pairs under tests/verifiers/math/."""


def misjudged(verifier, rows) -> list[tuple]:
    """Verifies ``rows`` in one batch; the rows whose verdict is not the row's ``passed`` (or,
    where the row gives one, whose ``details["answer_from"]`` is not its ``answer_from``), each
    as (end of response, gold, expected, got, extracted, answer_from, rule): ``[]`` when all
    are right."""
    got = verifier.verify_batch([r[0] for r in rows], [r[1] for r in rows])
    assert len(got) == len(rows)
    return [(text[-60:], gold, (passed, *how), v.passed, v.extracted,
             v.details.get("answer_from"), v.details.get("rule"))
            for (text, gold, passed, *how), v in zip(rows, got)
            if v.passed is not passed or (how and v.details["answer_from"] != how[0])]
