"""Broken model replies are detected (core/verification/broken.py)."""

from core.verification.broken import check_reply, hangul_share, repeated_4grams

GOOD_EN = ("Metformin can upset the stomach at first [1]. Taking it with meals helps [1]. "
           "See your doctor if it does not settle [2].")
GOOD_KO = "메트포르민은 처음에 속이 불편할 수 있어요 [1]. 식사와 함께 드시면 도움이 됩니다 [1]."


def test_a_good_reply_ships():
    assert not check_reply(GOOD_EN, "What are the side effects of metformin?", "en").broken
    assert not check_reply(GOOD_KO, "메트포르민 부작용이 뭔가요?", "ko").broken


def test_repetition_is_caught():
    loop = "Drink water and rest. " * 8
    got = check_reply(loop, "What should I do for a cold?", "en")
    assert "repetition" in got.reasons
    assert repeated_4grams(loop) > 0.5 and repeated_4grams(GOOD_EN) == 0.0
    twice = "Check your blood pressure at home every day. Eat less salt. Check your blood pressure at home every day."
    assert "repetition" in check_reply(twice, "How can I lower my blood pressure?", "en").reasons


def test_a_reply_cut_mid_sentence_or_at_the_token_limit_is_truncated():
    assert "truncated" in check_reply("Metformin can upset the stomach and", "q?", "en").reasons
    assert "truncated" in check_reply("혈압을 낮추려면 소금을 줄이고", "q?", "ko").reasons
    assert "truncated" in check_reply(GOOD_EN, "q?", "en", finish_reason="length").reasons
    assert "truncated" not in check_reply("혈압을 낮추려면 소금을 줄이세요.", "q?", "ko").reasons


def test_the_wrong_language_is_caught():
    assert "wrong_language" in check_reply(GOOD_EN, "메트포르민 부작용이 뭔가요?", "ko").reasons
    assert "wrong_language" in check_reply(GOOD_KO, "What are the side effects?", "en").reasons
    assert hangul_share("ABC 가나") < 0.5


def test_an_echo_of_the_question_is_caught():
    q = "What are the common side effects of metformin for diabetes?"
    assert "echo" in check_reply("What are the common side effects of metformin for diabetes?", q, "en").reasons
    assert "echo" in check_reply("side effects of metformin", q, "en").reasons
    assert "echo" not in check_reply(GOOD_EN, q, "en").reasons
